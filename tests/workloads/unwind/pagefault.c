/* pagefault — kernel time dominates: fresh anonymous memory is mapped,
 * touched by touch_pages (one byte written per 4 KiB page: each write a
 * fault in which the kernel allocates and zeroes the page) and unmapped,
 * round after round until the process has used SECONDS of CPU time
 * (default 1.5: about 1500 samples at 997 Hz, whatever the load). The
 * samples taken in the kernel must carry the kernel frames on top of
 * touch_pages -> fault_round -> main. Prints "ok".
 *
 * What it guarantees: per page, the user does one store (at worst one
 * cache miss, when the kernel zeroed the page past the cache) and a loop
 * step; the kernel a fault, 4 KiB zeroed, the page mapped and, at
 * munmap, freed: several times the user's work on any x86-64, so the
 * kernel's share is far above a half (0.95 in a KVM guest). It used to
 * memset every byte: the user rewrote the 4 KiB the kernel had just
 * zeroed, user and kernel did work of the same size, and the kernel's
 * share depended on the CPU (0.92 in a KVM guest, 0.4984 on an AMD
 * Zen 5, under the test's 0.5). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define ROUND_BYTES (32ul << 20)
#define PAGE_BYTES 4096ul

static volatile unsigned char sink;

__attribute__((noinline, noclone)) static void touch_pages(unsigned char *p, size_t bytes, int c)
{
	volatile unsigned char *v = p;
	size_t at;

	for (at = 0; at < bytes; at += PAGE_BYTES)
		v[at] = (unsigned char)c;
	__asm__ __volatile__("" ::: "memory");
	sink = p[bytes / 2];
}

__attribute__((noinline, noclone)) static int fault_round(int round)
{
	unsigned char *p =
	    mmap(NULL, ROUND_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
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

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.5;
	int i;

	if (!(seconds > 0)) {
		fprintf(stderr, "usage: pagefault [SECONDS]\n");
		return 2;
	}
	for (i = 0; i == 0 || cpu_seconds() < seconds; i++)
		if (fault_round(i)) {
			perror("pagefault: mmap");
			return 1;
		}
	printf("ok\n");
	return 0;
}
