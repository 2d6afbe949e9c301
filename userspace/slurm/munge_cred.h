/* munge_cred — a user's identity as a munge credential (libmunge, the
 * authentication Slurm itself uses), made by the CLI and checked by the
 * Aggregator, so an Aggregator never trusts a claimed uid.
 *
 * A credential carries a payload (for `nunatak attach`: exactly
 * "nunatak attach job=J") and the uid/gid of the process that asked munged
 * to make it. It is checked by the munged of the checking host: it must
 * decode with EMUNGE_SUCCESS only, so an expired, replayed (decoded once
 * already on this host), invalid (another key, tampered) or unauthorized
 * (restricted to another uid) credential is refused, the message naming
 * which. The payload must then be exactly the expected one: a credential
 * made for another job or another purpose is refused too.
 *
 * socket: the munged socket path (absolute); NULL: libmunge's default
 * (/run/munge/munge.socket.2). Each call creates and destroys its own munge
 * context: both functions are thread-safe and hold no state. Every wait is
 * libmunge's own (measured, munge 0.5.15): no munged at socket fails at
 * once (connect() refused or no such file); a munged that accepts and never
 * answers (stopped, overloaded) costs 10 s (5 attempts of 2 s) before
 * -EHOSTUNREACH. Call them off any latency-critical thread.
 *
 * err (errlen bytes, may be NULL when errlen is 0) receives one line saying
 * what failed, where (the socket) and what to do, at every error.
 */
#ifndef NUNATAK_MUNGE_CRED_H
#define NUNATAK_MUNGE_CRED_H

#include <stddef.h>
#include <sys/types.h>

#define MUNGE_CRED_DEFAULT_SOCKET "/run/munge/munge.socket.2"

/* A credential for payload (not NULL, may be ""), decodable by root only
 * (MUNGE_OPT_UID_RESTRICTION 0) and valid ttl_s seconds (1..3600; munged
 * caps it at its --max-ttl). 0 and *cred (a NUL-terminated "MUNGE:..."
 * string, the caller free()s it), or -errno with err: -EINVAL (bad
 * arguments), -EHOSTUNREACH (munged unreachable at socket), -ENOMEM,
 * -EIO (any other munge error). */
int munge_cred_make(const char *socket, const char *payload, int ttl_s, char **cred,
		    char *err, size_t errlen);

/* Same, restricted to decoding by uid restrict_uid instead of root (the
 * tests use it to prove a restricted credential is refused elsewhere). */
int munge_cred_make_for(const char *socket, const char *payload, int ttl_s,
			uid_t restrict_uid, char **cred, char *err, size_t errlen);

/* 0 and *uid, *gid (those munged vouches for, never a claimed one) when
 * cred decodes with EMUNGE_SUCCESS and its payload is exactly expected
 * (same bytes, same length). -EACCES: a bad credential (expired, replayed,
 * invalid, unauthorized, malformed: err names which); -EPROTO: it decodes
 * but carries another payload; -EHOSTUNREACH: munged unreachable at
 * socket; -EINVAL: bad arguments; -ENOMEM; -EIO: another munge error. uid
 * and gid are left untouched at every error. The credential counts as
 * used (replay) once decoded, also when its payload is refused. */
int munge_cred_check(const char *socket, const char *cred, const char *expected, uid_t *uid,
		     gid_t *gid, char *err, size_t errlen);

#endif
