/* control — the CLI's side of Control messages to an Aggregator: send one
 * Control over a DEALER socket and wait, bounded, for its Ack or Error.
 */
#ifndef NUNATAK_CLI_CONTROL_H
#define NUNATAK_CLI_CONTROL_H

#include <stddef.h>

/* A way out of the wait besides its timeout: whenever fd is readable,
 * on_fd(w) runs; it returns 1 to give up now, 0 to wait on, and may bring
 * w->deadline_ms closer (clock_monotonic_ms() of userspace/log/clock.h;
 * 0: the timeout only). */
struct control_wait {
	int fd;
	int (*on_fd)(struct control_wait *w);
	long long deadline_ms;
	void *ctx;
};

/* action: NUNATAK__WIRE__CONTROL__ACTION__START or __FINALIZE. Waits at
 * most timeout_ms for the answer (and until w->deadline_ms when w gives
 * one); w may be NULL. 0, -ETIMEDOUT, -EINTR (w gave up), -EPROTO (Error
 * reply; err holds its message), -errno. err always says what failed. */
int control_send(void *zmq_ctx, const char *endpoint, int action, const char *run_id,
		 const char *json, int timeout_ms, struct control_wait *w, char *err,
		 size_t errlen);

/* control_send(), and the Ack's json (a copy to free, "{}" when it has
 * none) in *answer when answer is not NULL. */
int control_send_answer(void *zmq_ctx, const char *endpoint, int action, const char *run_id,
			const char *json, int timeout_ms, struct control_wait *w, char **answer,
			char *err, size_t errlen);

#endif
