/* control_client — see control_client.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "userspace/control/control.h"
#include "userspace/control/control_client.h"
#include "userspace/log/clock.h"

const char *control_socket_path(const char *configured)
{
	const char *env = getenv("NUNATAK_AGENT_SOCKET");

	if (env && env[0])
		return env;
	return configured && configured[0] ? configured : CONTROL_SOCKET_DEFAULT;
}

/* The socket file and its directory are root's, the directory writable by
 * root only. 0, -ENOENT, -EPERM, -errno (err set). */
static int check_socket_file(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;
	int dfd, e = 0;

	if (!slash || path[0] != '/' || (size_t)(slash - path) >= sizeof(dir)) {
		snprintf(err, errlen, "the control socket path '%s' is not absolute: name it "
				      "from / in NUNATAK_AGENT_SOCKET or [service].agent_socket", path);
		return -EINVAL;
	}
	memcpy(dir, path, slash - path);
	dir[slash - path] = '\0';
	dfd = open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		e = -errno;
		snprintf(err, errlen, "no control socket at '%s': its directory: %s", path,
			 strerror(-e));
		return e == -ELOOP || e == -ENOTDIR ? -EPERM : e;
	}
	if (fstat(dfd, &st)) {
		e = -errno;
	} else if (st.st_uid != 0 || (st.st_mode & 022)) {
		snprintf(err, errlen, "the control socket '%s' is not used: its directory is %s "
				      "(uid %u, mode %04o), not root's alone: ask the "
				      "administrator to fix it",
			 path, st.st_uid != 0 ? "owned by another user" : "writable by others",
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		e = -EPERM;
	} else if (fstatat(dfd, slash + 1, &st, AT_SYMLINK_NOFOLLOW)) {
		e = -errno;
		snprintf(err, errlen, "no control socket at '%s': %s", path, strerror(-e));
	} else if (!S_ISSOCK(st.st_mode) || st.st_uid != 0) {
		snprintf(err, errlen, "'%s' is not used as the control socket: it is %s", path,
			 !S_ISSOCK(st.st_mode) ? "not a socket" : "not owned by root");
		e = -EPERM;
	}
	close(dfd);
	return e;
}

/* the process that accepted is root's: 0 or -EPERM */
static int check_peer(int fd, const char *path, char *err, size_t errlen)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		int e = -errno;

		snprintf(err, errlen, "cannot tell who serves '%s': %s", path, strerror(-e));
		return e;
	}
	if (cred.uid != 0) {
		snprintf(err, errlen, "the control socket '%s' is served by uid %u, not root: it "
				      "is not used",
			 path, (unsigned)cred.uid);
		return -EPERM;
	}
	return 0;
}

int control_connect(const char *path, int *fd, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s, e;

	*fd = -1;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "the control socket path '%s' is longer than %zu bytes", path,
			 sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	e = check_socket_file(path, err, errlen);
	if (e)
		return e;
	strcpy(sa.sun_path, path);
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0) {
		e = -errno;
		snprintf(err, errlen, "cannot create a control socket: %s", strerror(-e));
		return e;
	}
	/* a Unix connect completes at once or fails (EAGAIN: backlog full) */
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		e = -errno;
		snprintf(err, errlen, "cannot connect to the node service at '%s': %s", path,
			 strerror(-e));
		close(s);
		return e == -EAGAIN ? -ECONNREFUSED : e;
	}
	e = check_peer(s, path, err, errlen);
	if (e) {
		close(s);
		return e;
	}
	control_socket_room(s);
	*fd = s;
	return 0;
}

int control_await(int fd, json_t **msg, int timeout_ms, struct control_wait *w, char *err,
		  size_t errlen)
{
	long long deadline = clock_monotonic_ms() + timeout_ms;

	*msg = NULL;
	for (;;) {
		struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
				       { .fd = w ? w->fd : -1, .events = POLLIN } };
		long long until = w && w->deadline_ms && w->deadline_ms < deadline ? w->deadline_ms
										  : deadline;
		long long left = until - clock_monotonic_ms();
		int n;

		if (left <= 0) {
			snprintf(err, errlen, "the node service did not answer within %lld ms",
				 timeout_ms - (deadline - until));
			return -ETIMEDOUT;
		}
		n = poll(p, w && w->fd >= 0 ? 2 : 1, (int)(left > INT_MAX ? INT_MAX : left));
		if (n < 0 && errno != EINTR) {
			int e = -errno;

			snprintf(err, errlen, "waiting for the node service: %s", strerror(-e));
			return e;
		}
		if (n > 0 && p[0].revents) {
			int got = control_recv_msg(fd, msg, err, errlen);

			if (got == 1)
				return 0;
			if (got == -ECONNRESET) {
				snprintf(err, errlen, "the node service closed the connection");
				return got;
			}
			if (got < 0)
				return got;
		}
		if (n > 0 && (p[1].revents & POLLIN) && w->on_fd(w)) {
			snprintf(err, errlen, "stopped waiting for the node service");
			return -EINTR;
		}
	}
}

int control_request(int fd, const json_t *req, json_t **reply, int timeout_ms,
		    struct control_wait *w, char *err, size_t errlen)
{
	int e;

	*reply = NULL;
	e = control_send_msg(fd, req, timeout_ms < CONTROL_SEND_TIMEOUT_MS ? timeout_ms
									  : CONTROL_SEND_TIMEOUT_MS);
	if (e) {
		snprintf(err, errlen, "cannot send the request to the node service: %s",
			 e == -ETIMEDOUT ? "it reads nothing" : strerror(-e));
		return e == -EPIPE ? -ECONNRESET : e;
	}
	return control_await(fd, reply, timeout_ms, w, err, errlen);
}

int control_ask_status(const char *path, int timeout_ms, json_t **reply, char *err, size_t errlen)
{
	json_t *req;
	int fd, e;

	*reply = NULL;
	e = control_connect(path, &fd, err, errlen);
	if (e)
		return e;
	req = json_pack("{s:s}", "request", CONTROL_STATUS);
	e = req ? control_request(fd, req, reply, timeout_ms, NULL, err, errlen) : -ENOMEM;
	json_decref(req);
	close(fd);
	if (!e)
		e = control_reply_status(*reply, err, errlen);
	if (e == -ENOMEM)
		snprintf(err, errlen, "%s", strerror(ENOMEM));
	if (e) {
		json_decref(*reply);
		*reply = NULL;
	}
	return e;
}
