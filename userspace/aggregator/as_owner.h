/* as_owner — file operations of a Run made as the Run's owner.
 *
 * The service Aggregator runs as root and writes every user's Runs: each
 * file operation of a Run (the directory made, the pivot and its journal,
 * the manifest, the storage reserve) runs with the filesystem uid and gid
 * of the Run's owner (setfsuid/setfsgid), on the thread doing it and only
 * there (both are per thread on Linux), so the kernel checks that the
 * owner could do it: a symbolic link or directory another user planted
 * leads nowhere the owner could not write themselves, and what is created
 * belongs to the owner.
 *
 * An owner uid 0, or the euid itself (an unprivileged embedded nunatak),
 * switches nothing. as_owner_enter()/as_owner_leave() pair up on one
 * thread; they do not nest.
 */
#ifndef NUNATAK_AGGREGATOR_AS_OWNER_H
#define NUNATAK_AGGREGATOR_AS_OWNER_H

#include <sys/types.h>

struct as_owner {
	uid_t uid, saved_uid;
	gid_t gid, saved_gid;
	int switched;
};

/* Switches this thread's fsuid/fsgid to uid/gid (see above). 0, or -EPERM
 * when the kernel did not take them (no CAP_SETUID/CAP_SETGID): nothing
 * is switched then, and the caller must not go on as if it were. */
int as_owner_enter(struct as_owner *o, uid_t uid, gid_t gid);
/* Back to the thread's previous fsuid/fsgid. */
void as_owner_leave(struct as_owner *o);

/* The fsuid of this thread: the uid a file made now belongs to (the euid
 * outside of as_owner_enter()). */
uid_t as_owner_fsuid(void);
/* The fsgid of this thread, likewise. */
gid_t as_owner_fsgid(void);

#endif
