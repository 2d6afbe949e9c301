/* as_owner — see as_owner.h. */
#include <errno.h>
#include <sys/fsuid.h>
#include <unistd.h>

#include "userspace/aggregator/as_owner.h"

/* setfsuid() says nothing of failure but returns the previous value:
 * asking again with an invalid id (-1 changes nothing) reads it back */
uid_t as_owner_fsuid(void)
{
	return (uid_t)setfsuid((uid_t)-1);
}

gid_t as_owner_fsgid(void)
{
	return (gid_t)setfsgid((gid_t)-1);
}

int as_owner_enter(struct as_owner *o, uid_t uid, gid_t gid)
{
	o->uid = uid;
	o->gid = gid;
	o->switched = 0;
	if (uid == 0 || uid == geteuid())
		return 0;
	o->saved_gid = (gid_t)setfsgid(gid);
	o->saved_uid = (uid_t)setfsuid(uid);
	if (as_owner_fsuid() != uid || as_owner_fsgid() != gid) {
		setfsuid(o->saved_uid);
		setfsgid(o->saved_gid);
		return -EPERM;
	}
	o->switched = 1;
	return 0;
}

void as_owner_leave(struct as_owner *o)
{
	if (!o->switched)
		return;
	setfsuid(o->saved_uid);
	setfsgid(o->saved_gid);
	o->switched = 0;
}
