/* chain.h — the call chain the unwind tests know: main -> chain_a (in the
 * executable) -> chain_b -> chain_c (in libchain.so), chain_c burning CPU.
 * The signal handler runs its own chain: chain_handler -> chain_sig_b ->
 * chain_sig_c (libchain.so), so its samples must unwind through the signal
 * frame into the interrupted code and on to main.
 *
 * Work is counted in iterations, not in time, so that a slowdown shows in
 * the wall time (the benchmark) and a run does the same work on a busy
 * machine. */
#ifndef NUNATAK_WORKLOAD_CHAIN_H
#define NUNATAK_WORKLOAD_CHAIN_H

/* each returns a value its caller uses, so no call in the chain is a tail
 * call */
double chain_b(unsigned long iterations);
double chain_c(unsigned long iterations);
double chain_sig_b(unsigned long iterations);
double chain_sig_c(unsigned long iterations);

/* an empty asm the compiler must assume reads and writes memory: keeps a
 * call from becoming a tail call or being merged */
#define CHAIN_BARRIER() __asm__ __volatile__("" ::: "memory")

#endif
