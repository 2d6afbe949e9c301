/* control_server — see control_server.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
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

/* one "Name:\t..." line of /proc/PID/status into c */
static void creds_line(const char *line, struct control_process_creds *c, int *found)
{
	unsigned long u[4];
	unsigned long long caps;

	if (sscanf(line, "Uid: %lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]) == 4) {
		for (int i = 0; i < 4; i++)
			c->uid[i] = (uid_t)u[i];
		*found |= 1;
	} else if (sscanf(line, "Gid: %lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]) == 4) {
		for (int i = 0; i < 4; i++)
			c->gid[i] = (gid_t)u[i];
		*found |= 2;
	} else if (sscanf(line, "CapPrm: %llx", &caps) == 1) {
		c->cap_permitted = (uint64_t)caps;
		*found |= 4;
	}
}

int control_process_creds(pid_t pid, struct control_process_creds *c)
{
	char path[64], line[256];
	struct stat st;
	int found = 0;
	FILE *f;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (found != 7 && fgets(line, sizeof(line), f))
		creds_line(line, c, &found);
	fclose(f);
	/* the kernel makes the files of /proc/PID root's while the process
	 * is not dumpable as its user (not the directory itself): its verdict
	 * on who may debug it, on the file the Agent reads */
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (found != 7 || stat(path, &st))
		return -ESRCH; /* a zombie or a process gone while read */
	c->dump_owner = st.st_uid;
	return 0;
}

/* 1 and why[] when creds c are not peer's to observe, 0 when they are */
static int not_observable(const struct control_peer *peer, const struct control_process_creds *c,
			  char *why, size_t n)
{
	static const char *const names[4] = {"real", "effective", "saved", "file system"};

	for (int i = 0; i < 4; i++)
		if (c->uid[i] != peer->uid) {
			snprintf(why, n, "its %s uid is %u", names[i], (unsigned)c->uid[i]);
			return 1;
		}
	for (int i = 0; i < 4; i++)
		if (c->gid[i] != peer->gid) {
			snprintf(why, n, "its %s gid is %u, not yours (%u)%s", names[i],
				 (unsigned)c->gid[i], (unsigned)peer->gid,
				 i ? ": a setgid program" : "");
			return 1;
		}
	if (c->cap_permitted) {
		snprintf(why, n, "it holds capabilities (CapPrm %016llx): a program with file "
				 "capabilities, or one started by root",
			 (unsigned long long)c->cap_permitted);
		return 1;
	}
	if (c->dump_owner != peer->uid) {
		snprintf(why, n, "the kernel made it not dumpable (a setuid/setgid program, an "
				 "unreadable binary, or prctl(PR_SET_DUMPABLE, 0)): you may not "
				 "debug it yourself");
		return 1;
	}
	return 0;
}

int control_may_observe(const struct control_peer *peer, pid_t pid, char *err, size_t errlen)
{
	struct control_process_creds c;
	char why[256];
	int e;

	e = control_process_creds(pid, &c);
	if (e) {
		snprintf(err, errlen, "process %d cannot be observed: %s", (int)pid,
			 e == -ESRCH ? "it does not exist" : strerror(-e));
		return e;
	}
	if (peer->uid == 0)
		return 0;
	if (!not_observable(peer, &c, why, sizeof(why)))
		return 0;
	snprintf(err, errlen, "process %d is not yours to observe (you are uid %u, gid %u): %s; "
			      "a user may observe only processes they could debug themselves: run "
			      "it as yourself without setuid/setgid/capabilities, or ask root to "
			      "profile it",
		 (int)pid, (unsigned)peer->uid, (unsigned)peer->gid, why);
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
