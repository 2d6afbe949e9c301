/* source_fetch — the file operations of a Run's extracts in a child
 * process with the Run owner's identity (source.h). The child answers on
 * a pipe, each answer as fields of (u32 length, bytes); the parent reads
 * them within SOURCE_FETCH_TIMEOUT_MS, then kills and reaps the child. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "userspace/log/clock.h"
#include "userspace/source/source.h"

#define MAX_GROUPS 256
#define MAX_REPLY_BYTES (256u << 20)
#define NO_STRING 0xffffffffu

struct wbuf {
	char *data;
	size_t len, cap;
	int failed;
};

static void put(struct wbuf *w, const void *p, size_t n)
{
	if (w->failed)
		return;
	if (w->len + n > w->cap) {
		size_t cap = (w->cap ? w->cap * 2 : 4096) + n;
		char *data = realloc(w->data, cap);

		if (!data) {
			w->failed = 1;
			return;
		}
		w->data = data;
		w->cap = cap;
	}
	memcpy(w->data + w->len, p, n);
	w->len += n;
}

static void put_u32(struct wbuf *w, uint32_t v)
{
	put(w, &v, sizeof(v));
}

static void put_str(struct wbuf *w, const char *s)
{
	put_u32(w, s ? (uint32_t)strlen(s) : NO_STRING);
	if (s)
		put(w, s, strlen(s));
}

static void put_answer(struct wbuf *w, const struct source_answer *a)
{
	size_t i;

	put_u32(w, a->status);
	put_str(w, a->resolved);
	put_str(w, a->reason);
	put_u32(w, a->first_line);
	put_u32(w, a->last_line);
	put_u32(w, (uint32_t)a->truncated);
	put_u32(w, (uint32_t)a->n_lines);
	for (i = 0; i < a->n_lines; i++)
		put_str(w, a->lines[i]);
}

struct rbuf {
	const char *data;
	size_t len, pos;
	int failed;
};

static uint32_t get_u32(struct rbuf *r)
{
	uint32_t v = 0;

	if (r->failed || r->len - r->pos < sizeof(v)) {
		r->failed = 1;
		return 0;
	}
	memcpy(&v, r->data + r->pos, sizeof(v));
	r->pos += sizeof(v);
	return v;
}

static char *get_str(struct rbuf *r)
{
	uint32_t n = get_u32(r);
	char *s;

	if (r->failed || n == NO_STRING)
		return NULL;
	if (r->len - r->pos < n || !(s = strndup(r->data + r->pos, n))) {
		r->failed = 1;
		return NULL;
	}
	r->pos += n;
	return s;
}

/* one answer; 0, or -EBADMSG (a is then released) */
static int get_answer(struct rbuf *r, struct source_answer *a)
{
	char *reason;
	size_t i;

	memset(a, 0, sizeof(*a));
	a->status = (enum source_status)get_u32(r);
	a->resolved = get_str(r);
	reason = get_str(r);
	snprintf(a->reason, sizeof(a->reason), "%s", reason ? reason : "");
	free(reason);
	a->first_line = get_u32(r);
	a->last_line = get_u32(r);
	a->truncated = (int)get_u32(r);
	a->n_lines = get_u32(r);
	if (!r->failed && a->n_lines > SOURCE_MAX_LINES)
		r->failed = 1;
	a->lines = r->failed ? NULL : calloc(a->n_lines + 1, sizeof(*a->lines));
	for (i = 0; a->lines && i < a->n_lines && !r->failed; i++)
		if (!(a->lines[i] = get_str(r)))
			r->failed = 1;
	if (r->failed || !a->lines || a->status > SOURCE_DISABLED) {
		source_answer_release(a);
		return -EBADMSG;
	}
	return 0;
}

/* the child: the owner's identity, then every answer on fd */
static void child(int fd, const struct source_options *o, const struct source_request *rq,
		  size_t n, uid_t uid, gid_t gid, const gid_t *groups, int n_groups)
{
	struct wbuf w = {0};
	struct source_answer a;
	int dropped = 1;
	size_t i, off;
	ssize_t wr;

	if (uid != geteuid())
		dropped = !setgroups((size_t)n_groups, groups) && !setresgid(gid, gid, gid) &&
			  !setresuid(uid, uid, uid);
	for (i = 0; i < n; i++) {
		if (!dropped) {
			memset(&a, 0, sizeof(a));
			a.status = SOURCE_MISSING;
			snprintf(a.reason, sizeof(a.reason),
				 "not read: the Run owner's identity (uid %u) could not be taken",
				 (unsigned)uid);
		} else if (source_fetch_one(o, &rq[i], &a)) {
			_exit(2);
		}
		put_answer(&w, &a);
		source_answer_release(&a);
	}
	for (off = 0; !w.failed && off < w.len; off += (size_t)wr) {
		wr = write(fd, w.data + off, w.len - off);
		if (wr < 0 && errno == EINTR)
			wr = 0;
		else if (wr < 0)
			_exit(3);
	}
	_exit(w.failed ? 2 : 0);
}

/* everything the child writes until EOF or the deadline: 0 or -errno */
static int read_reply(int fd, long long deadline, struct wbuf *w)
{
	char buf[65536];
	ssize_t r;

	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		long long left = deadline - clock_monotonic_ms();

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		r = read(fd, buf, sizeof(buf));
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return -errno;
		if (!r)
			return 0;
		put(w, buf, (size_t)r);
		if (w->failed || w->len > MAX_REPLY_BYTES)
			return -ENOMEM;
	}
}

static int owner_groups(uid_t uid, gid_t gid, gid_t *groups, int *n)
{
	char buf[16384];
	struct passwd pw, *res = NULL;

	*n = MAX_GROUPS;
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) || !res ||
	    getgrouplist(res->pw_name, gid, groups, n) < 0) {
		groups[0] = gid; /* no account, or too many groups: its gid only */
		*n = 1;
	}
	return 0;
}

int source_fetch(const struct source_options *o, const struct source_request *rq, size_t n,
		 uid_t uid, gid_t gid, struct source_answer *out)
{
	long long deadline = clock_monotonic_ms() + SOURCE_FETCH_TIMEOUT_MS;
	gid_t groups[MAX_GROUPS];
	struct wbuf w = {0};
	struct rbuf r;
	int pipefd[2], n_groups = 0, err, status;
	size_t i;
	pid_t pid;

	owner_groups(uid, gid, groups, &n_groups);
	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return err;
	}
	if (!pid) {
		close(pipefd[0]);
		child(pipefd[1], o, rq, n, uid, gid, groups, n_groups);
	}
	close(pipefd[1]);
	err = read_reply(pipefd[0], deadline, &w);
	close(pipefd[0]);
	kill(pid, SIGKILL); /* done or late: it has nothing more to say */
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (err == -ENOMEM) {
		free(w.data);
		return err;
	}
	r = (struct rbuf){.data = w.data, .len = w.len};
	for (i = 0; i < n; i++) {
		if (!r.failed && !get_answer(&r, &out[i]))
			continue;
		r.failed = 1;
		memset(&out[i], 0, sizeof(out[i]));
		out[i].status = SOURCE_MISSING;
		snprintf(out[i].reason, sizeof(out[i].reason), "not read: %s",
			 err == -ETIMEDOUT ? "the reading timed out" : "the reader failed");
	}
	free(w.data);
	return 0;
}
