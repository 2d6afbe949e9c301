/* llvm_load — the benchmark's process whose stacks run through a very
 * large library: dlopen LIB (Debian's libLLVM-14.so.1: ~110 MB, one of
 * the largest unwind tables there is), then for SECONDS of CPU create and
 * dispose LLVM contexts from llvm_work <- main, so that almost every
 * sample's leaf is in libLLVM (or the allocator it calls) and its stack
 * is complete only once the Agent has loaded libLLVM's table. With LIB
 * "none" it burns as long in a loop of its own (the baseline of nunatak's
 * memory and CPU time).
 *
 * usage: llvm-load LIB|none [SECONDS]  (default 2). Prints "ok".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void *(*context_create_fn)(void);
typedef void (*context_dispose_fn)(void *);

static volatile double sink;

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline, noclone)) static unsigned long llvm_work(context_create_fn create,
								  context_dispose_fn dispose,
								  double seconds)
{
	double end = cpu_s() + seconds;
	unsigned long n = 0;

	while (cpu_s() < end)
		for (int i = 0; i < 64; i++, n++)
			dispose(create());
	return n;
}

__attribute__((noinline, noclone)) static unsigned long own_work(double seconds)
{
	double end = cpu_s() + seconds, x = 1.0;
	unsigned long n = 0;

	while (cpu_s() < end)
		for (int i = 0; i < 4096; i++, n++)
			x = x * 1.0000001 + 0.5 / (x + 1.0);
	sink = x;
	return n;
}

int main(int argc, char **argv)
{
	double seconds = argc > 2 ? atof(argv[2]) : 2.0;
	context_create_fn create;
	context_dispose_fn dispose;
	unsigned long n;
	void *lib;

	if (argc < 2 || seconds <= 0) {
		fprintf(stderr, "usage: llvm-load LIB|none [SECONDS]\n");
		return 2;
	}
	if (!strcmp(argv[1], "none")) {
		n = own_work(seconds);
	} else {
		lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
		if (!lib) {
			fprintf(stderr, "llvm-load: %s\n", dlerror());
			return 1;
		}
		create = (context_create_fn)dlsym(lib, "LLVMContextCreate");
		dispose = (context_dispose_fn)dlsym(lib, "LLVMContextDispose");
		if (!create || !dispose) {
			fprintf(stderr, "llvm-load: no LLVMContextCreate/Dispose in %s\n", argv[1]);
			return 1;
		}
		n = llvm_work(create, dispose, seconds);
	}
	sink += n;
	printf("ok\n");
	return 0;
}
