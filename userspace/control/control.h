/* control — the messages of the control socket between `nunatak run` (or
 * any client: the Slurm scripts of the next issue) and the node service
 * (nunatakd, or the embedded one of `nunatak run`).
 *
 * Transport: a SOCK_SEQPACKET Unix socket (or one end of a socketpair),
 * one JSON object per message, at most CONTROL_MSG_MAX bytes; a longer
 * message is refused whole (-EMSGSIZE), never cut. Every request is an
 * object with a "request" field; every reply an object with "ok": true
 * and the request's fields, or "ok": false, "error" (what failed, why,
 * what to do) and "code" (a positive errno). The requests, their fields
 * and their replies are listed in /tmp/coord/design7.md ("Control socket
 * protocol") and in node_service.h.
 *
 * Reads and writes are bounded: a send waits at most its timeout for the
 * peer to make room, a receive takes what is there (the callers poll).
 */
#ifndef NUNATAK_CONTROL_H
#define NUNATAK_CONTROL_H

#include <stddef.h>
#include <jansson.h>

#define CONTROL_MSG_MAX (1u << 20)
#define CONTROL_SEND_TIMEOUT_MS 2000

/* the requests */
#define CONTROL_RUN_START "run-start"
#define CONTROL_RUN_END "run-end"
#define CONTROL_RUN_INTERRUPT "run-interrupt"
#define CONTROL_STATUS "status"
/* the Slurm job Runs (node_service.h) */
#define CONTROL_ATTACH "attach"
#define CONTROL_DETACH "detach"
#define CONTROL_JOB_PROLOG "job-prolog"
#define CONTROL_JOB_EPILOG "job-epilog"

/* Makes room on fd (a connected end) for a message of CONTROL_MSG_MAX:
 * a Unix socket's send buffer is the bound of one message (best effort: a
 * system whose net.core.wmem_max is lower keeps its bound, and a longer
 * message is then -EMSGSIZE). control_connect(), the accepting server and
 * the embedded socketpair call it. */
void control_socket_room(int fd);

/* Sends msg as one message, waiting at most timeout_ms for room. 0,
 * -EMSGSIZE (over CONTROL_MSG_MAX), -ETIMEDOUT, -EPIPE/-ECONNRESET (the
 * peer is gone), -ENOMEM, -errno. Never raises SIGPIPE. */
int control_send_msg(int fd, const json_t *msg, int timeout_ms);

/* Takes one message if one is waiting (never blocks). 1 and *msg (the
 * caller's reference) when a message came; 0 when none is waiting
 * (EAGAIN); -ECONNRESET when the peer closed; -EMSGSIZE when the message
 * was longer than CONTROL_MSG_MAX (dropped); -EBADMSG when it is not a
 * JSON object (dropped); -errno. err (may be NULL) says what. */
int control_recv_msg(int fd, json_t **msg, char *err, size_t errlen);

/* A reply {"ok": false, "error": message, "code": -e} (e is -errno). NULL
 * on ENOMEM. */
json_t *control_error_reply(int e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A reply {"ok": true} with the fields of extra merged in (extra may be
 * NULL; its reference is taken). NULL on ENOMEM. */
json_t *control_ok_reply(json_t *extra);

/* For a reply: 0 when "ok" is true; else -code (-EPROTO when the reply has
 * none) with its "error" copied into err. */
int control_reply_status(const json_t *reply, char *err, size_t errlen);

#endif
