/* slurm_setup — libslurm's one configuration per process, tried first in
 * a child (libslurm fatal()s on a bad one), and a quick reachability probe
 * of slurmctld (libslurm retries a refused connection for about
 * 2 x (MessageTimeout - 1) s). See slurm_job.h. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <slurm/slurm.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "userspace/slurm/slurm_internal.h"

/* libslurm's parsed configuration (exported by libslurm.so, typed in the
 * public slurm.h, declared only in Slurm's own read_config.h) */
extern slurm_conf_t slurm_conf;

#define INIT_OK_MARK "\n@nunatak-slurm-init-ok@\n"

static char initialized_conf[PATH_MAX];

int slurm_error(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The child: libslurm's messages go to the pipe; the mark follows a
 * slurm_init that returned (a bad configuration exit()s before it). */
static void __attribute__((noreturn)) init_child(int fd, const char *conf)
{
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

	if (devnull >= 0)
		dup2(devnull, STDIN_FILENO);
	dup2(fd, STDOUT_FILENO);
	dup2(fd, STDERR_FILENO);
	slurm_init(conf);
	if (write(fd, INIT_OK_MARK, strlen(INIT_OK_MARK)) < 0)
		_exit(2);
	_exit(0);
}

/* Reads the child's output until EOF or the deadline. 1 when it ended in
 * time, 0 at the deadline. */
static int read_child(int fd, char *out, size_t outlen, long long deadline)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	size_t used = 0;
	char buf[512];
	ssize_t n;
	long long left;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return 0;
		if (poll(&pfd, 1, (int)left) <= 0) {
			if (errno == EINTR)
				continue;
			return 0;
		}
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 1;
		/* keep the end: libslurm's last lines say why */
		if (used + n >= outlen) {
			size_t drop = used + n - (outlen - 1);

			drop = drop > used ? used : drop;
			memmove(out, out + drop, used - drop);
			used -= drop;
		}
		if ((size_t)n >= outlen)
			n = outlen - 1;
		memcpy(out + used, buf, n);
		used += n;
		out[used] = '\0';
	}
}

/* The child's messages (text) as one line into s (len bytes):
 * "error: X; fatal: Y" (libslurm starts each with the program's name, left
 * out) */
static void one_line(const char *text, char *s, size_t len)
{
	size_t plen = strlen(program_invocation_short_name);
	const char *line, *next;
	char *out = s, *end = s + len - 1;

	for (line = text; *line; line = next) {
		next = strchr(line, '\n');
		next = next ? next + 1 : line + strlen(line);
		if (!strncmp(line, program_invocation_short_name, plen) && line[plen] == ':' &&
		    line[plen + 1] == ' ')
			line += plen + 2;
		if (out != s && line < next && *line != '\n' && out + 2 < end) {
			*out++ = ';';
			*out++ = ' ';
		}
		while (line < next && *line != '\n' && out < end)
			*out++ = *line++;
	}
	*out = '\0';
}

/* 0 when slurm_init(conf) returns in a child within the bound */
static int try_init(const char *conf, char *err, size_t errlen)
{
	char out[1024] = "", why[1024];
	int fds[2], in_time, status, ret;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return slurm_error(err, errlen, -errno, "slurm: pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(fds[0]);
		close(fds[1]);
		return slurm_error(err, errlen, ret, "slurm: fork to try '%s': %s", conf,
				   strerror(-ret));
	}
	if (pid == 0) {
		close(fds[0]);
		init_child(fds[1], conf);
	}
	close(fds[1]);
	in_time = read_child(fds[0], out, sizeof(out), now_ms() + SLURM_JOB_INIT_TIMEOUT_MS);
	close(fds[0]);
	if (!in_time)
		kill(pid, SIGKILL);
	/* ECHILD when the process ignores SIGCHLD: the mark decides anyway */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!in_time)
		return slurm_error(err, errlen, -ETIMEDOUT,
				   "slurm: loading '%s' took more than %d ms (libslurm hangs on "
				   "it): check the file and the hosts it names",
				   conf, SLURM_JOB_INIT_TIMEOUT_MS);
	if (strstr(out, INIT_OK_MARK + 1))
		return 0;
	one_line(out, why, sizeof(why));
	return slurm_error(err, errlen, -EINVAL,
			   "slurm: libslurm cannot use '%s': %s: fix it (slurmctld and every "
			   "node read the same file) or point [service].slurm_conf elsewhere",
			   conf, why[0] ? why : "it gave no reason");
}

int slurm_setup(const char *conf, char *err, size_t errlen)
{
	const char *path = conf;
	struct stat st;
	int ret;

	if (!path || !*path)
		path = getenv("SLURM_CONF");
	if (!path || !*path)
		path = SLURM_DEFAULT_CONF;
	if (initialized_conf[0]) {
		if (!strcmp(initialized_conf, path))
			return 0;
		return slurm_error(err, errlen, -EINVAL,
				   "slurm: this process uses '%s' already, not '%s': libslurm "
				   "keeps one configuration per process",
				   initialized_conf, path);
	}
	if (path[0] != '/' || strlen(path) >= sizeof(initialized_conf))
		return slurm_error(err, errlen, -EINVAL,
				   "slurm: the configuration '%s' must be an absolute path", path);
	/* -EINVAL, not -ENOENT: that one means "no such job" */
	if (stat(path, &st))
		return slurm_error(err, errlen, -EINVAL,
				   "slurm: cannot read the Slurm configuration '%s': %s: set "
				   "[service].slurm_conf (or SLURM_CONF) to the cluster's slurm.conf "
				   "(configless Slurm is not supported)",
				   path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return slurm_error(err, errlen, -EINVAL,
				   "slurm: the Slurm configuration '%s' is not a regular file", path);
	ret = try_init(path, err, errlen);
	if (ret)
		return ret;
	slurm_init(path);
	snprintf(initialized_conf, sizeof(initialized_conf), "%s", path);
	return 0;
}

const char *slurm_setup_conf(void)
{
	return initialized_conf;
}

/* 0 when a TCP connection to host:port opens within timeout_ms */
static int probe_one(const char *host, unsigned port, int timeout_ms, char *why,
		     size_t whylen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL, *ai;
	char service[16];
	int fd, ret = -EHOSTUNREACH, soerr, rc;
	socklen_t sl = sizeof(soerr);
	struct pollfd pfd;

	snprintf(service, sizeof(service), "%u", port);
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc) {
		snprintf(why, whylen, "%s: %s", host, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	for (ai = res; ai && ret; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0)
			continue;
		soerr = 0;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
			soerr = errno;
		} else {
			pfd = (struct pollfd){.fd = fd, .events = POLLOUT};
			if (poll(&pfd, 1, timeout_ms) != 1)
				soerr = ETIMEDOUT;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl))
				soerr = errno;
		}
		close(fd);
		if (!soerr)
			ret = 0;
		else
			snprintf(why, whylen, "%s:%u: %s", host, port, strerror(soerr));
	}
	freeaddrinfo(res);
	return ret;
}

int slurm_setup_probe(char *err, size_t errlen)
{
	char why[256] = "no SlurmctldHost in the configuration";
	uint32_t i;

	for (i = 0; i < slurm_conf.control_cnt; i++) {
		const char *host = slurm_conf.control_addr && slurm_conf.control_addr[i]
					   ? slurm_conf.control_addr[i]
					   : slurm_conf.control_machine[i];

		if (host && !probe_one(host, slurm_conf.slurmctld_port, SLURM_JOB_PROBE_MS, why,
				       sizeof(why)))
			return 0;
	}
	return slurm_error(err, errlen, -EHOSTUNREACH,
			   "slurm: slurmctld unreachable (%s; configuration '%s'): start "
			   "slurmctld or check SlurmctldHost/SlurmctldPort and the network",
			   why, initialized_conf);
}
