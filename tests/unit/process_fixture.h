/* process_fixture — what the unit tests that run processes of their own
 * share: the monotonic clock, a CPU-bound spin of a set process CPU time
 * (bounded in wall time), and a forked child becoming a throwaway uid
 * (setresuid: no account is needed), killed at the end. Header-only, static inline (each
 * test is one translation unit); include after cmocka.h.
 */
#ifndef NUNATAK_TESTS_PROCESS_FIXTURE_H
#define NUNATAK_TESTS_PROCESS_FIXTURE_H

#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static inline uint64_t proc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* burns cpu_ms of this process's CPU time (5 s of wall time at most) */
static inline void proc_spin(int cpu_ms)
{
	struct timespec ts;
	uint64_t end, wall_end = proc_now_ns() + 5000000000ull;
	volatile double x = 1.0;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	end = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
	      (uint64_t)cpu_ms * 1000000ull;
	for (;;) {
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
		if ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec >= end ||
		    proc_now_ns() >= wall_end)
			break;
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 0.5 / (x + 1.0);
	}
}

/* In a forked child (root): every uid and gid becomes uid, no
 * supplementary group; uid 0 leaves it as it is. 0 or -1 (errno). */
static inline int proc_become(uid_t uid)
{
	if (!uid)
		return 0;
	return setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid) ? -1 : 0;
}

/* a child of ours killed and reaped */
static inline void proc_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

#endif
