/* control_server — the server side of the control socket: the listening
 * socket, who is asking (SO_PEERCRED of the connection), and whether they
 * may have what they ask.
 *
 * Access is decided per request, never by who could open the socket (it
 * is 0666): a user may observe only a process they could debug
 * themselves at the time of the request — its four uids (real,
 * effective, saved, fs) are theirs, its four gids are their gid (no
 * setgid program), it holds no capability, and the kernel keeps it
 * dumpable as them (/proc/PID/maps is theirs) — the kernel side keeps it so at
 * every later exec (bpf/target.h); root may observe anything. A Run's facts (its
 * directory, its command line) are shown only to its owner and to root.
 */
#ifndef NUNATAK_CONTROL_SERVER_H
#define NUNATAK_CONTROL_SERVER_H

#include <stddef.h>
#include <stdint.h>
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

/* what decides whether a user may observe a process */
struct control_process_creds {
	uid_t uid[4]; /* real, effective, saved, fs (/proc/PID/status Uid) */
	gid_t gid[4]; /* the same for gids (Gid) */
	uint64_t cap_permitted; /* CapPrm */
	uid_t dump_owner; /* owner of /proc/PID/maps: root while not dumpable */
};

/* The credentials of process pid, from /proc/PID/status and /proc/PID/maps.
 * 0, -ESRCH (no such process, or a zombie), -errno. */
int control_process_creds(pid_t pid, struct control_process_creds *c);

/* 0 when peer may observe pid: it exists and peer could debug it (above;
 * peer root: any). -ESRCH, -EPERM, -errno; err says what, which
 * credential, why and what to do. */
int control_may_observe(const struct control_peer *peer, pid_t pid, char *err, size_t errlen);

/* 1 when the file at path (followed) is one peer could read itself by
 * its mode bits (owner, group, other; root: any), 0 otherwise: what the
 * service reads on a caller's word (the target program, for its MPI
 * library) must be the caller's to read. */
int control_may_read(const struct control_peer *peer, const char *path);

/* 1 when peer may see what belongs to owner (a Run): owner or root */
int control_may_see(const struct control_peer *peer, uid_t owner);

#endif
