// chain_cxx — the C++ twin of chain.c: main and a std::thread each run
// chainxx::Chain::a -> chainlib::b -> chainlib::Burner::c (in
// libchain_cxx.so); a SIGPROF timer runs chainxx::on_profile_signal ->
// chainlib::sig_b -> chainlib::Burner::sig_c on the thread it interrupts.
//
// usage: chain_cxx [MILLIONS [THREADS]]  (default 150 2). Prints "ok".
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/time.h>
#include <thread>
#include <vector>

#include "chain_lib.hpp"

namespace chainxx {

volatile double sink;

class Chain {
public:
	explicit Chain(unsigned long iterations) : iterations_(iterations) {}
	double a() const;

private:
	unsigned long iterations_;
};

__attribute__((noinline, noclone)) double Chain::a() const
{
	double r = chainlib::b(iterations_);

	CHAIN_BARRIER();
	return r * 0.5;
}

// the start function of the other threads
__attribute__((noinline, noclone)) void thread_main(unsigned long iterations)
{
	Chain chain(iterations);
	double r = chain.a();

	CHAIN_BARRIER();
	sink = r;
}

__attribute__((noinline, noclone)) void on_profile_signal(int sig)
{
	double r = chainlib::sig_b(400000);

	CHAIN_BARRIER();
	sink = r + sig;
}

int profile_timer(long usec)
{
	struct itimerval it = {{0, usec}, {0, usec}};
	struct sigaction sa;

	std::memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_profile_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGPROF, &sa, nullptr))
		return -1;
	return setitimer(ITIMER_PROF, &it, nullptr);
}

} // namespace chainxx

int main(int argc, char **argv)
{
	unsigned long iterations = (argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 150) * 1000000ul;
	int threads = argc > 2 ? std::atoi(argv[2]) : 2;

	if (!iterations || threads < 1 || threads > 64) {
		std::fprintf(stderr, "usage: chain_cxx [MILLIONS [THREADS]]\n");
		return 2;
	}
	if (chainxx::profile_timer(20000)) {
		std::perror("chain_cxx: SIGPROF timer");
		return 1;
	}
	std::vector<std::thread> others;
	for (int i = 1; i < threads; i++)
		others.emplace_back(chainxx::thread_main, iterations);
	chainxx::Chain chain(iterations);
	double r = chain.a();
	CHAIN_BARRIER();
	for (auto &t : others)
		t.join();
	chainxx::sink = chainxx::sink + r;
	std::printf("ok\n");
	return 0;
}
