/* control_server — the server side of the control socket: the listening
 * socket, who is asking (SO_PEERCRED of the connection), and whether they
 * may have what they ask.
 *
 * Access is decided per request, never by who could open the socket (it
 * is 0666): a user may observe only a process whose real AND effective
 * uid are theirs at the time of the request (the kernel side keeps it so
 * at every later exec); root may observe anything. A Run's facts (its
 * directory, its command line) are shown only to its owner and to root.
 */
#ifndef NUNATAK_CONTROL_SERVER_H
#define NUNATAK_CONTROL_SERVER_H

#include <stddef.h>
#include <sys/types.h>

struct control_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
};

/* Binds and listens at path (SOCK_SEQPACKET, non-blocking, close-on-exec),
 * mode: the socket file's (0666 for nunatakd). A socket file left there
 * by a service that is gone (nothing accepts on it) is replaced; anything
 * else there, or a service that answers, is -EEXIST / -EADDRINUSE. The
 * directory must exist. 0 and *fd, or -errno with err saying what. */
int control_listen(const char *path, mode_t mode, int *fd, char *err, size_t errlen);

/* The credentials of the peer of a connected socket (fixed at its
 * connect or socketpair). 0 or -errno. */
int control_peer_of(int fd, struct control_peer *p);

/* The real and effective uid of process pid, from /proc/PID/status. 0,
 * -ESRCH (no such process), -errno. */
int control_process_uids(pid_t pid, uid_t *ruid, uid_t *euid);

/* 0 when peer may observe pid: it exists and its real and effective uid
 * are peer's (or peer is root). -ESRCH, -EPERM, -errno; err says what,
 * why and what to do. */
int control_may_observe(const struct control_peer *peer, pid_t pid, char *err, size_t errlen);

/* 1 when the file at path (followed) is one peer could read itself by
 * its mode bits (owner, group, other; root: any), 0 otherwise: what the
 * service reads on a caller's word (the target program, for its MPI
 * library) must be the caller's to read. */
int control_may_read(const struct control_peer *peer, const char *path);

/* 1 when peer may see what belongs to owner (a Run): owner or root */
int control_may_see(const struct control_peer *peer, uid_t owner);

#endif
