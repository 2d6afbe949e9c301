/* pagefault — kernel time dominates: fresh anonymous memory is mapped,
 * touched by memset from touch_pages (every 4 KiB page a fault the kernel
 * zeroes), and unmapped, ROUNDS times (default 60, about 1 s). The samples
 * taken in the kernel must carry the kernel frames on top of
 * touch_pages -> fault_round -> main. Prints "ok". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ROUND_BYTES (32ul << 20)

static volatile unsigned char sink;

__attribute__((noinline, noclone)) static void touch_pages(unsigned char *p, size_t bytes, int c)
{
	memset(p, c, bytes);
	__asm__ __volatile__("" ::: "memory");
	sink = p[bytes / 2];
}

__attribute__((noinline, noclone)) static int fault_round(int round)
{
	unsigned char *p = mmap(NULL, ROUND_BYTES, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int err;

	if (p == MAP_FAILED)
		return -1;
	/* 4 KiB faults, not one 2 MiB page zeroed at once */
	madvise(p, ROUND_BYTES, MADV_NOHUGEPAGE);
	touch_pages(p, ROUND_BYTES, round & 0xff);
	/* after the call, so that munmap is not tail-called: its kernel time
	 * keeps fault_round as its caller */
	err = munmap(p, ROUND_BYTES);
	__asm__ __volatile__("" ::: "memory");
	return err;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 60, i;

	if (rounds < 1) {
		fprintf(stderr, "usage: pagefault [ROUNDS]\n");
		return 2;
	}
	for (i = 0; i < rounds; i++)
		if (fault_round(i)) {
			perror("pagefault: mmap");
			return 1;
		}
	printf("ok\n");
	return 0;
}
