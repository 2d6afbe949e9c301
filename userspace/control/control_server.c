/* control_server — see control_server.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "userspace/control/control_server.h"

/* 1 when something accepts connections at sa */
static int someone_listens(const struct sockaddr_un *sa)
{
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int up;

	if (s < 0)
		return 1; /* cannot tell: do not replace it */
	up = !connect(s, (const struct sockaddr *)sa, sizeof(*sa)) || errno == EAGAIN;
	close(s);
	return up;
}

/* a stale socket file at path is removed: 0, or -EEXIST/-EADDRINUSE */
static int clear_stale(const struct sockaddr_un *sa, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(sa->sun_path, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "'%s' exists and is not a socket: remove it or choose "
				      "another path (--socket)", sa->sun_path);
		return -EEXIST;
	}
	if (someone_listens(sa)) {
		snprintf(err, errlen, "a node service already listens at '%s': stop it first, "
				      "or choose another path (--socket)", sa->sun_path);
		return -EADDRINUSE;
	}
	if (unlink(sa->sun_path) && errno != ENOENT) {
		int e = -errno;

		snprintf(err, errlen, "cannot remove the stale socket '%s': %s", sa->sun_path,
			 strerror(-e));
		return e;
	}
	return 0;
}

int control_listen(const char *path, mode_t mode, int *fd, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = -1, e;

	*fd = -1;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "the control socket path '%s' is longer than %zu bytes", path,
			 sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	e = clear_stale(&sa, err, errlen);
	if (e)
		return e;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0) {
		e = -errno;
		snprintf(err, errlen, "cannot create the control socket: %s", strerror(-e));
		return e;
	}
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa))) {
		e = -errno;
		snprintf(err, errlen, "cannot create the control socket '%s': %s", path,
			 strerror(-e));
		goto fail;
	}
	/* the bound file is ours: a chmod by path cannot be raced by another
	 * user in a directory only root writes (nunatakd's) */
	if (chmod(path, mode) || listen(s, 64)) {
		e = -errno;
		snprintf(err, errlen, "cannot set up the control socket '%s': %s", path,
			 strerror(-e));
		unlink(path);
		goto fail;
	}
	*fd = s;
	return 0;
fail:
	close(s);
	return e;
}

int control_peer_of(int fd, struct control_peer *p)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return -errno;
	p->pid = cred.pid;
	p->uid = cred.uid;
	p->gid = cred.gid;
	return 0;
}

int control_process_uids(pid_t pid, uid_t *ruid, uid_t *euid)
{
	char path[64], line[256];
	unsigned long r, e;
	int found = 0;
	FILE *f;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
			found = 1;
			break;
		}
	}
	fclose(f);
	if (!found)
		return -ESRCH; /* a zombie or a process gone while read */
	*ruid = (uid_t)r;
	*euid = (uid_t)e;
	return 0;
}

int control_may_observe(const struct control_peer *peer, pid_t pid, char *err, size_t errlen)
{
	uid_t ruid, euid;
	int e;

	e = control_process_uids(pid, &ruid, &euid);
	if (e) {
		snprintf(err, errlen, "process %d cannot be observed: %s", (int)pid,
			 e == -ESRCH ? "it does not exist" : strerror(-e));
		return e;
	}
	if (peer->uid == 0 || (ruid == peer->uid && euid == peer->uid))
		return 0;
	snprintf(err, errlen, "process %d runs as uid %u (effective %u), not as you (uid %u): a "
			      "user may observe only their own processes; run it as yourself, or "
			      "ask root to profile it",
		 (int)pid, (unsigned)ruid, (unsigned)euid, (unsigned)peer->uid);
	return -EPERM;
}

int control_may_read(const struct control_peer *peer, const char *path)
{
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	if (peer->uid == 0)
		return 1;
	if (st.st_uid == peer->uid)
		return !!(st.st_mode & S_IRUSR);
	if (st.st_gid == peer->gid)
		return !!(st.st_mode & S_IRGRP);
	return !!(st.st_mode & S_IROTH);
}

int control_may_see(const struct control_peer *peer, uid_t owner)
{
	return peer->uid == 0 || peer->uid == owner;
}
