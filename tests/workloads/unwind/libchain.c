/* libchain.c — chain_b, chain_c and the signal handler's chain_sig_b,
 * chain_sig_c of chain.h, in a shared library. */
#include "chain.h"

/* about 8 ns an iteration: a dependent multiply, add and divide */
static inline __attribute__((always_inline)) double burn(unsigned long iterations)
{
	double x = 1.0;
	unsigned long i;

	for (i = 0; i < iterations; i++)
		x = x * 1.0000001 + 0.5 / (x + 1.0);
	CHAIN_BARRIER();
	return x;
}

/* the leaf of the main chain */
__attribute__((noinline, noclone)) double chain_c(unsigned long iterations)
{
	return burn(iterations) + 0.25;
}

__attribute__((noinline, noclone)) double chain_b(unsigned long iterations)
{
	double r = chain_c(iterations);

	CHAIN_BARRIER();
	return r + 1.0;
}

/* the leaf of the signal handler's chain: its own loop, so a sample in
 * chain_c is never one of the handler's */
__attribute__((noinline, noclone)) double chain_sig_c(unsigned long iterations)
{
	return burn(iterations) + 2.0;
}

__attribute__((noinline, noclone)) double chain_sig_b(unsigned long iterations)
{
	double r = chain_sig_c(iterations);

	CHAIN_BARRIER();
	return r + 3.0;
}
