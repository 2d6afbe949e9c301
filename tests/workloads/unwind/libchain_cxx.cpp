// libchain_cxx.cpp — chainlib::b, Burner::c and the signal handler's
// chainlib::sig_b, Burner::sig_c of chain_lib.hpp, in a shared library.
#include "chain_lib.hpp"

namespace chainlib {

namespace {

// about 8 ns an iteration: a dependent multiply, add and divide
inline __attribute__((always_inline)) double burn(double x, unsigned long iterations)
{
	for (unsigned long i = 0; i < iterations; i++)
		x = x * 1.0000001 + 0.5 / (x + 1.0);
	CHAIN_BARRIER();
	return x;
}

} // namespace

// the leaf of the main chain
__attribute__((noinline, noclone)) double Burner::c(unsigned long iterations) const
{
	return burn(seed_, iterations) + 0.25;
}

// the leaf of the signal handler's chain: its own loop
__attribute__((noinline, noclone)) double Burner::sig_c(unsigned long iterations) const
{
	return burn(seed_, iterations) + 2.0;
}

__attribute__((noinline, noclone)) double b(unsigned long iterations)
{
	Burner burner(1.0);
	double r = burner.c(iterations);

	CHAIN_BARRIER();
	return r + 1.0;
}

__attribute__((noinline, noclone)) double sig_b(unsigned long iterations)
{
	Burner burner(3.0);
	double r = burner.sig_c(iterations);

	CHAIN_BARRIER();
	return r + 3.0;
}

} // namespace chainlib
