// chain_lib.hpp — the C++ twin of chain.h: Chain::a (the executable) ->
// chainlib::b -> chainlib::Burner::c (libchain_cxx.so), c burning CPU; the
// signal handler's chain handler -> chainlib::sig_b ->
// chainlib::Burner::sig_c. Work is counted in iterations.
#ifndef NUNATAK_WORKLOAD_CHAIN_LIB_HPP
#define NUNATAK_WORKLOAD_CHAIN_LIB_HPP

// an empty asm the compiler must assume reads and writes memory: keeps a
// call from becoming a tail call or being merged
#define CHAIN_BARRIER() __asm__ __volatile__("" ::: "memory")

namespace chainlib {

class Burner {
public:
	explicit Burner(double seed) : seed_(seed) {}
	double c(unsigned long iterations) const;
	double sig_c(unsigned long iterations) const;

private:
	double seed_;
};

double b(unsigned long iterations);
double sig_b(unsigned long iterations);

} // namespace chainlib

#endif
