/* symbolizer_exec — see symbolizer_exec.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "userspace/attribution/symbolizer.h"
#include "userspace/attribution/symbolizer_exec.h"
#include "userspace/launch/tool.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"

/* what we keep of the tool's stderr to explain a failure */
#define SYMBOLIZER_STDERR_KEEP 512

int growbuf_reserve(struct growbuf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *data;

	if (b->len + more <= b->cap)
		return 0;
	while (cap < b->len + more)
		cap *= 2;
	data = realloc(b->data, cap);
	if (!data)
		return -ENOMEM;
	b->data = data;
	b->cap = cap;
	return 0;
}

/* Starts the tool (tool_spawn(): an absolute path, its own process group,
 * default signals) with stdin on a socket and stdout, stderr on pipes. The
 * parent's ends are non-blocking and close-on-exec. */
static int symbolizer_spawn(const char *tool, const char *module_path, pid_t *pid, int *in_fd,
			    int *out_fd, int *err_fd)
{
	int in_sv[2] = {-1, -1}, out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
	char *obj_arg = NULL, **debug_args = NULL, **argv = NULL;
	size_t n_debug = 0, k = 0, j;
	int i, err;

	/* no module: each input line names its own ("path" 0xaddr) */
	if (module_path && asprintf(&obj_arg, "--obj=%s", module_path) < 0)
		return -ENOMEM;
	err = symbolizer_debug_dir_args(&debug_args, &n_debug);
	argv = err ? NULL : calloc(n_debug + 6, sizeof(*argv));
	if (!argv) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_sv) || pipe2(out_p, O_CLOEXEC) ||
	    pipe2(err_p, O_CLOEXEC)) {
		err = -errno;
		goto cleanup;
	}
	argv[k++] = (char *)tool;
	argv[k++] = "--output-style=JSON";
	argv[k++] = "--inlining";
	argv[k++] = "--demangle";
	for (j = 0; j < n_debug; j++)
		argv[k++] = debug_args[j];
	argv[k++] = obj_arg; /* NULL ends argv without a module */
	{
		const int stdio[3] = {in_sv[1], out_p[1], err_p[1]};

		err = tool_spawn(tool, argv, stdio, pid);
	}
	if (err)
		goto cleanup;
	*in_fd = in_sv[0];
	*out_fd = out_p[0];
	*err_fd = err_p[0];
	in_sv[0] = out_p[0] = err_p[0] = -1;
	fcntl(*in_fd, F_SETFL, O_NONBLOCK);
	fcntl(*out_fd, F_SETFL, O_NONBLOCK);
	fcntl(*err_fd, F_SETFL, O_NONBLOCK);
cleanup:
	for (i = 0; i < 2; i++) {
		if (in_sv[i] >= 0)
			close(in_sv[i]);
		if (out_p[i] >= 0)
			close(out_p[i]);
		if (err_p[i] >= 0)
			close(err_p[i]);
	}
	for (j = 0; debug_args && j < n_debug; j++)
		free(debug_args[j]);
	free(debug_args);
	free(argv);
	free(obj_arg);
	return err;
}

/* Reads what is available on fd into b (only up to keep bytes; the rest
 * into the void). Returns 1 at EOF, 0 when it would block, -errno. */
static int drain_fd(int fd, struct growbuf *b, size_t keep)
{
	char sink[4096];

	for (;;) {
		ssize_t got;
		int err;

		if (b->len < keep) {
			size_t room = keep - b->len < 65536 ? keep - b->len : 65536;

			err = growbuf_reserve(b, room);
			if (err)
				return err;
			got = read(fd, b->data + b->len, room);
		} else {
			got = read(fd, sink, sizeof(sink));
		}
		if (got > 0) {
			if (b->len < keep)
				b->len += got;
			continue;
		}
		if (got == 0)
			return 1;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		return -errno;
	}
}

/* One exchange with a running tool: input fed, output and errors read,
 * under two bounds (silence between answers, the call's deadline). */
struct exchange {
	int fd[3]; /* in, out, err; -1 once closed */
	const struct growbuf *input;
	size_t written, lines;
	struct growbuf *output, *errors;
	long long last_answer_ms, deadline_ms;
	int request_ms, cancel_fd;
};

static int exchange_write(struct exchange *x)
{
	ssize_t sent = send(x->fd[0], x->input->data + x->written, x->input->len - x->written,
			    MSG_NOSIGNAL | MSG_DONTWAIT);

	if (sent > 0)
		x->written += sent;
	if ((sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
	    x->written == x->input->len) {
		/* EPIPE: the tool stopped reading; the line count tells */
		close(x->fd[0]);
		x->fd[0] = -1;
	}
	return 0;
}

static int exchange_read(struct exchange *x, int which)
{
	struct growbuf *b = which == 1 ? x->output : x->errors;
	size_t before = b->len;
	int r = drain_fd(x->fd[which], b, which == 1 ? SIZE_MAX : SYMBOLIZER_STDERR_KEEP);

	if (r < 0)
		return r;
	if (which == 1) {
		size_t lines = x->lines, i;

		for (i = before; i < b->len; i++)
			lines += b->data[i] == '\n';
		if (lines > x->lines)
			x->last_answer_ms = clock_monotonic_ms(); /* progress: the silence starts again */
		x->lines = lines;
	}
	if (r == 1) {
		close(x->fd[which]);
		x->fd[which] = -1;
	}
	return 0;
}

/* 0 once stdout and stderr are closed; -ETIMEDOUT, -ECANCELED, -errno. */
static int exchange_run(struct exchange *x)
{
	while (x->fd[1] >= 0 || x->fd[2] >= 0) {
		struct pollfd pfd[4];
		int nfds = 0, idx[4], i, err = 0;
		long long now = clock_monotonic_ms(), until = x->last_answer_ms + x->request_ms;

		if (until > x->deadline_ms)
			until = x->deadline_ms;
		if (now >= until)
			return -ETIMEDOUT;
		for (i = 0; i < 3; i++) {
			if (x->fd[i] < 0)
				continue;
			idx[nfds] = i;
			pfd[nfds++] =
			    (struct pollfd){.fd = x->fd[i], .events = i ? POLLIN : POLLOUT};
		}
		if (x->cancel_fd >= 0) {
			idx[nfds] = 3;
			pfd[nfds++] = (struct pollfd){.fd = x->cancel_fd, .events = POLLIN};
		}
		if (poll(pfd, nfds, until - now > INT_MAX ? INT_MAX : (int)(until - now)) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (i = 0; i < nfds && !err; i++) {
			if (!pfd[i].revents)
				continue;
			if (idx[i] == 3)
				return -ECANCELED;
			err = idx[i] ? exchange_read(x, idx[i]) : exchange_write(x);
		}
		if (err)
			return err;
	}
	return 0;
}

/* first line of the tool's stderr, for a one-line message */
static const char *first_stderr_line(struct growbuf *errors)
{
	char *nl;

	if (growbuf_reserve(errors, 1))
		return "";
	errors->data[errors->len] = '\0';
	nl = strchr(errors->data, '\n');
	if (nl)
		*nl = '\0';
	return errors->data;
}

static int exit_status_error(const char *tool, const char *label, int status,
			     struct growbuf *errors)
{
	const char *why = first_stderr_line(errors);

	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		pr_warn("exit status %d from '%s' on '%s'%s%s", WEXITSTATUS(status), tool, label,
			why[0] ? ": " : "", why);
	else
		pr_warn("signal %d killed '%s' on '%s'", WTERMSIG(status), tool, label);
	return -EIO;
}

static int exchange_with(const char *tool, const char *label, pid_t pid, struct exchange *x)
{
	int err, status = 0, reaped;

	err = exchange_run(x);
	for (int i = 0; i < 3; i++)
		if (x->fd[i] >= 0)
			close(x->fd[i]);
	/* a tool that closed its output may still not exit: same bounds */
	reaped = tool_reap(pid,
			      err ? 0
			      : x->last_answer_ms + x->request_ms < x->deadline_ms
				  ? x->last_answer_ms + x->request_ms
				  : x->deadline_ms,
			      &status);
	if (err == -ETIMEDOUT)
		pr_warn("'%s' killed on '%s': no answer within its bound (%zu lines answered)",
			tool, label, x->lines);
	if (err)
		return err;
	if (reaped == -ETIMEDOUT)
		pr_warn("'%s' killed on '%s': it answered but did not exit", tool, label);
	if (reaped)
		return reaped;
	return exit_status_error(tool, label, status, x->errors);
}

int symbolizer_exec(const char *tool, const char *module_path, const char *label,
		    const struct growbuf *input, size_t n_lines, struct symbolizer_budget *b,
		    struct growbuf *output)
{
	struct growbuf errors = {0};
	struct exchange x = {.fd = {-1, -1, -1},
			     .input = input,
			     .output = output,
			     .errors = &errors,
			     .cancel_fd = b->cancel_fd};
	long long start = clock_monotonic_ms();
	pid_t pid = -1;
	int err;

	if (!tool || tool[0] != '/') {
		/* a bare name would be a PATH search: no trust check */
		pr_warn("symbolizer '%s' refused on '%s': not an absolute path; give the trusted "
			"path of llvm-symbolizer",
			tool ? tool : "", label);
		return -EINVAL;
	}
	if (!b->stopped && b->total_ms > 0 && b->spent_ms >= b->total_ms)
		b->stopped = -ETIMEDOUT; /* spent by the calls before */
	if (b->stopped)
		return b->stopped;
	x.request_ms = b->request_ms > 0 ? b->request_ms : SYMBOLIZER_REQUEST_MS;
	x.deadline_ms = b->total_ms > 0 ? start + b->total_ms - b->spent_ms : LLONG_MAX;
	x.last_answer_ms = start;
	err = symbolizer_spawn(tool, module_path, &pid, &x.fd[0], &x.fd[1], &x.fd[2]);
	if (err) {
		if (err == -ENOENT)
			pr_debug("cannot find '%s'", tool);
		else
			pr_warn("cannot start '%s': %s", tool, strerror(-err));
		return err;
	}
	if (input->len == 0) {
		close(x.fd[0]);
		x.fd[0] = -1;
	}
	err = exchange_with(tool, label, pid, &x);
	b->spent_ms += clock_monotonic_ms() - start;
	b->asked += n_lines;
	if (err == -ETIMEDOUT || err == -ECANCELED)
		b->stopped = err;
	free(errors.data);
	return err;
}
