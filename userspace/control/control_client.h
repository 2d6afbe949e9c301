/* control_client — the client side of the control socket: find the local
 * node service's socket, connect to it only when root owns it, and ask one
 * request at a time, each answer awaited with a deadline and a way out
 * (Ctrl-C).
 *
 * Trust: a client gives the service facts about itself (a pid to observe,
 * a runs directory) and reads back where its Run is; a socket another user
 * could have put there would collect them. control_connect() talks to a
 * socket only when the socket file is owned by root and its directory is
 * owned by root and not writable by group or others (reached without
 * following a link in its last component), and when the process that
 * accepted the connection runs as root (SO_PEERCRED).
 */
#ifndef NUNATAK_CONTROL_CLIENT_H
#define NUNATAK_CONTROL_CLIENT_H

#include <stddef.h>
#include <jansson.h>

#define CONTROL_SOCKET_DEFAULT "/run/nunatak/agent.sock"

/* The socket to use: env NUNATAK_AGENT_SOCKET when set and not empty, else
 * configured (the site's [service].agent_socket) when not NULL, else
 * CONTROL_SOCKET_DEFAULT. */
const char *control_socket_path(const char *configured);

/* Connects to the node service at path. 0 and *fd (SOCK_SEQPACKET,
 * close-on-exec, non-blocking; the caller closes it), or:
 *   -ENOENT        no socket there (no daemon runs)
 *   -ECONNREFUSED  a socket, nobody listening (a daemon that stopped)
 *   -EPERM         the socket, its directory or the peer is not root's
 *                  (err says which and why it is not used)
 *   -errno
 * err says what and where. */
int control_connect(const char *path, int *fd, char *err, size_t errlen);

/* A way out of a wait besides its deadline: whenever fd is readable,
 * on_fd(w) runs; it returns 1 to give up now, 0 to wait on, and may bring
 * w->deadline_ms closer or send a request on the same connection (a
 * run-interrupt). deadline_ms: clock_monotonic_ms() (userspace/log/clock.h);
 * 0 for the timeout only. */
struct control_wait {
	int fd;
	int (*on_fd)(struct control_wait *w);
	long long deadline_ms;
	void *ctx;
};

/* Sends req and waits for the one reply: at most timeout_ms, less when
 * w->deadline_ms is closer (w may be NULL). 0 and *reply (the caller's
 * reference, "ok" true or false: control_reply_status()), or -ETIMEDOUT,
 * -EINTR (w gave up), -ECONNRESET (the service went away), -errno; err
 * says what failed. */
int control_request(int fd, const json_t *req, json_t **reply, int timeout_ms,
		    struct control_wait *w, char *err, size_t errlen);

/* The one status exchange (`nunatak status`, `nunatak doctor`): connects
 * to the node service at path and asks "status", waiting at most
 * timeout_ms. 0 and *reply (the caller's reference, "ok" true), or the
 * -errno of control_connect() (-ENOENT: no daemon runs, -ECONNREFUSED),
 * control_request() or control_reply_status() (*reply NULL); err says what
 * failed. */
int control_ask_status(const char *path, int timeout_ms, json_t **reply, char *err,
		       size_t errlen);

/* Waits for one message as control_request() does, without sending. */
int control_await(int fd, json_t **msg, int timeout_ms, struct control_wait *w, char *err,
		  size_t errlen);

#endif
