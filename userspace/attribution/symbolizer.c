/* symbolizer — see symbolizer.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "userspace/attribution/symbolizer.h"
#include "userspace/log/log.h"

extern char **environ;

/* what we keep of the tool's stderr to explain a failure */
#define SYMBOLIZER_STDERR_KEEP 512

void symbolizer_result_release(struct symbolizer_result *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->n_frames && r->frames; i++) {
		free(r->frames[i].function);
		free(r->frames[i].file);
		free(r->frames[i].start_file);
	}
	free(r->frames);
	memset(r, 0, sizeof(*r));
}

/* "0x" followed by 1 to 16 hex digits and nothing else: strtoull would also
 * accept blanks, signs and overflow, which a fuzzed line must not get past */
static int parse_hex_address(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2])
		return -EINVAL;
	for (i = 2; s[i]; i++) {
		char c = s[i];
		unsigned digit;

		if (i >= 2 + 16)
			return -EINVAL;
		if (c >= '0' && c <= '9')
			digit = c - '0';
		else if (c >= 'a' && c <= 'f')
			digit = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			digit = c - 'A' + 10;
		else
			return -EINVAL;
		v = v << 4 | digit;
	}
	*out = v;
	return 0;
}

/* required string member: non-NULL copy, or -EINVAL when absent/not a string */
static int dup_string_member(json_t *obj, const char *key, int required, char **out)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v) {
		if (required)
			return -EINVAL;
		*out = strdup("");
		return *out ? 0 : -ENOMEM;
	}
	if (!json_is_string(v))
		return -EINVAL;
	*out = strdup(json_string_value(v));
	return *out ? 0 : -ENOMEM;
}

static int u32_member(json_t *obj, const char *key, int required, uint32_t *out)
{
	json_t *v = json_object_get(obj, key);
	json_int_t i;

	*out = 0;
	if (!v)
		return required ? -EINVAL : 0;
	if (!json_is_integer(v))
		return -EINVAL;
	i = json_integer_value(v);
	if (i < 0 || (unsigned long long)i > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)i;
	return 0;
}

static int parse_frame(json_t *obj, struct symbolizer_frame *f)
{
	json_t *start;
	int err;

	if (!json_is_object(obj))
		return -EINVAL;
	err = dup_string_member(obj, "FunctionName", 1, &f->function);
	if (!err)
		err = dup_string_member(obj, "FileName", 1, &f->file);
	if (!err)
		err = u32_member(obj, "Line", 1, &f->line);
	/* older llvm-symbolizers lack these: optional, but typed when present */
	if (!err)
		err = u32_member(obj, "Column", 0, &f->column);
	if (!err)
		err = dup_string_member(obj, "StartFileName", 0, &f->start_file);
	if (!err)
		err = u32_member(obj, "StartLine", 0, &f->start_line);
	if (err)
		return err;

	start = json_object_get(obj, "StartAddress");
	if (!start)
		return 0;
	if (!json_is_string(start))
		return -EINVAL;
	if (!json_string_value(start)[0])
		return 0; /* "" when the tool does not know the function */
	err = parse_hex_address(json_string_value(start), &f->start_address);
	if (err)
		return err;
	f->has_start_address = 1;
	return 0;
}

/* The parser proper; error_msg receives the tool's "Error" message, if any,
 * so that symbolizer_run() can tell why a whole module failed. */
static int parse_line(const char *line, size_t len, struct symbolizer_result *out, char *error_msg,
		      size_t error_msglen)
{
	json_t *root = NULL, *v, *symbols, *error;
	json_error_t jerr;
	size_t i;
	int err = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (error_msglen)
		error_msg[0] = '\0';
	if (!line)
		return -EINVAL;

	root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root || !json_is_object(root))
		goto cleanup;

	v = json_object_get(root, "Address");
	if (!v || !json_is_string(v) || parse_hex_address(json_string_value(v), &out->address))
		goto cleanup;

	error = json_object_get(root, "Error");
	symbols = json_object_get(root, "Symbol");
	if (error) {
		json_t *msg;

		if (!json_is_object(error) || symbols)
			goto cleanup;
		msg = json_object_get(error, "Message");
		if (msg && !json_is_string(msg))
			goto cleanup;
		if (msg && error_msglen)
			snprintf(error_msg, error_msglen, "%s", json_string_value(msg));
		err = 0;
		goto cleanup;
	}
	/* the tool always answers at least one (possibly unknown) frame */
	if (!symbols || !json_is_array(symbols) || json_array_size(symbols) == 0)
		goto cleanup;

	out->frames = calloc(json_array_size(symbols), sizeof(*out->frames));
	if (!out->frames) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < json_array_size(symbols); i++) {
		/* counted before parsing so that release frees a half-filled frame */
		out->n_frames = i + 1;
		err = parse_frame(json_array_get(symbols, i), &out->frames[i]);
		if (err)
			goto cleanup;
	}
	err = 0;

cleanup:
	json_decref(root);
	if (err)
		symbolizer_result_release(out);
	return err;
}

int symbolizer_parse_json_line(const char *line, struct symbolizer_result *out)
{
	if (!out)
		return -EINVAL;
	if (!line) {
		memset(out, 0, sizeof(*out));
		return -EINVAL;
	}
	return parse_line(line, strlen(line), out, NULL, 0);
}

struct growbuf {
	char *data;
	size_t len, cap;
};

static int growbuf_reserve(struct growbuf *b, size_t more)
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

/* Starts `tool --output-style=JSON --inlining --demangle --obj=PATH` with
 * stdin on a socket (so that writing to a dead child is EPIPE thanks to
 * MSG_NOSIGNAL, never a SIGPIPE that would kill the Aggregator) and stdout,
 * stderr on pipes. The parent's ends are non-blocking and close-on-exec. */
static int symbolizer_spawn(const char *tool, const char *module_path, pid_t *pid, int *in_fd,
			    int *out_fd, int *err_fd)
{
	int in_sv[2] = {-1, -1}, out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
	posix_spawn_file_actions_t fa;
	int fa_ready = 0;
	char *obj_arg = NULL;
	int err;

	/* no module: each input line names its own ("path" 0xaddr) */
	if (module_path && asprintf(&obj_arg, "--obj=%s", module_path) < 0) {
		obj_arg = NULL;
		return -ENOMEM;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_sv) || pipe2(out_p, O_CLOEXEC) ||
	    pipe2(err_p, O_CLOEXEC)) {
		err = -errno;
		goto cleanup;
	}

	err = -posix_spawn_file_actions_init(&fa);
	if (err)
		goto cleanup;
	fa_ready = 1;
	/* dup2 clears FD_CLOEXEC on the target; every other fd is CLOEXEC */
	err = -posix_spawn_file_actions_adddup2(&fa, in_sv[1], STDIN_FILENO);
	if (!err)
		err = -posix_spawn_file_actions_adddup2(&fa, out_p[1], STDOUT_FILENO);
	if (!err)
		err = -posix_spawn_file_actions_adddup2(&fa, err_p[1], STDERR_FILENO);
	if (err)
		goto cleanup;

	{
		char *argv[] = {
		    (char *)tool, "--output-style=JSON", "--inlining", "--demangle", obj_arg, NULL};

		if (strchr(tool, '/'))
			err = -posix_spawn(pid, tool, &fa, NULL, argv, environ);
		else
			err = -posix_spawnp(pid, tool, &fa, NULL, argv, environ);
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
	if (fa_ready)
		posix_spawn_file_actions_destroy(&fa);
	for (int i = 0; i < 2; i++) {
		if (in_sv[i] >= 0)
			close(in_sv[i]);
		if (out_p[i] >= 0)
			close(out_p[i]);
		if (err_p[i] >= 0)
			close(err_p[i]);
	}
	free(obj_arg);
	return err;
}

/* Reads what is available on fd into b (or, when keep is 0, into the void).
 * Returns 1 at EOF, 0 when it would block, -errno otherwise. */
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

/* Feeds input to the child while collecting its stdout and stderr, so that
 * neither side can block on a full pipe however large the batch is. */
static int symbolizer_exchange(int in_fd, int out_fd, int err_fd, const struct growbuf *input,
			       struct growbuf *output, struct growbuf *errors)
{
	size_t written = 0;
	int err = 0;

	if (input->len == 0) {
		close(in_fd);
		in_fd = -1;
	}
	while (out_fd >= 0 || err_fd >= 0) {
		struct pollfd pfd[3];
		int nfds = 0, in_idx = -1, out_idx = -1, err_idx = -1;

		if (in_fd >= 0) {
			in_idx = nfds;
			pfd[nfds++] = (struct pollfd){.fd = in_fd, .events = POLLOUT};
		}
		if (out_fd >= 0) {
			out_idx = nfds;
			pfd[nfds++] = (struct pollfd){.fd = out_fd, .events = POLLIN};
		}
		if (err_fd >= 0) {
			err_idx = nfds;
			pfd[nfds++] = (struct pollfd){.fd = err_fd, .events = POLLIN};
		}
		if (poll(pfd, nfds, -1) < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto cleanup;
		}

		if (in_idx >= 0 && pfd[in_idx].revents) {
			ssize_t sent = send(in_fd, input->data + written, input->len - written,
					    MSG_NOSIGNAL | MSG_DONTWAIT);

			if (sent > 0)
				written += sent;
			if ((sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
			     errno != EINTR) ||
			    written == input->len) {
				/* EPIPE: the child stopped reading; the line count tells */
				close(in_fd);
				in_fd = -1;
			}
		}
		if (out_idx >= 0 && pfd[out_idx].revents) {
			int r = drain_fd(out_fd, output, SIZE_MAX);

			if (r < 0) {
				err = r;
				goto cleanup;
			}
			if (r == 1) {
				close(out_fd);
				out_fd = -1;
			}
		}
		if (err_idx >= 0 && pfd[err_idx].revents) {
			int r = drain_fd(err_fd, errors, SYMBOLIZER_STDERR_KEEP);

			if (r < 0) {
				err = r;
				goto cleanup;
			}
			if (r == 1) {
				close(err_fd);
				err_fd = -1;
			}
		}
	}

cleanup:
	if (in_fd >= 0)
		close(in_fd);
	if (out_fd >= 0)
		close(out_fd);
	if (err_fd >= 0)
		close(err_fd);
	return err;
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

static int symbolizer_parse_output(const char *tool, const char *module_path,
				   const struct growbuf *output, const uint64_t *addrs, size_t n,
				   struct symbolizer_result *results)
{
	const char *p = output->data, *end = output->data + output->len;
	char error_msg[256];
	int warned = 0;
	size_t i = 0;
	int err;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (len == 0) {
			p = nl + 1;
			continue;
		}
		if (i == n) {
			pr_warn("'%s' answered more lines than the %zu addresses of '%s'", tool, n,
				module_path);
			return -EIO;
		}
		err = parse_line(p, len, &results[i], error_msg, sizeof(error_msg));
		if (err == -ENOMEM)
			return err;
		if (err) {
			pr_warn("unparsable output from '%s' for '%s': line %zu", tool, module_path,
				i + 1);
			return -EIO;
		}
		if (results[i].address != addrs[i]) {
			pr_warn("'%s' answered 0x%llx instead of 0x%llx for '%s'", tool,
				(unsigned long long)results[i].address,
				(unsigned long long)addrs[i], module_path);
			return -EIO;
		}
		if (error_msg[0] && !warned) {
			pr_warn("'%s' cannot symbolize '%s': %s", tool, module_path, error_msg);
			warned = 1;
		}
		i++;
		p = nl ? nl + 1 : end;
	}
	if (i != n) {
		pr_warn("'%s' answered %zu lines for the %zu addresses of '%s'", tool, i, n,
			module_path);
		return -EIO;
	}
	return 0;
}

static int symbolizer_run_input(const char *tool, const char *module_path, const char *label,
				struct growbuf *input, const uint64_t *addrs, size_t n,
				struct symbolizer_result *results);

int symbolizer_run(const char *tool, const char *module_path, const uint64_t *addrs, size_t n,
		   struct symbolizer_result *results)
{
	struct growbuf input = {0};
	size_t i;
	int err;

	if (!tool || !tool[0] || !module_path || (n && (!addrs || !results)))
		return -EINVAL;
	if (n > SIZE_MAX / sizeof(*results) / 32)
		return -EINVAL;
	if (n == 0)
		return 0;
	memset(results, 0, n * sizeof(*results));

	/* "0x" + 16 digits + '\n' + the NUL of snprintf */
	err = growbuf_reserve(&input, n * 20);
	if (err)
		return err;
	for (i = 0; i < n; i++)
		input.len += snprintf(input.data + input.len, input.cap - input.len, "0x%llx\n",
				      (unsigned long long)addrs[i]);
	err = symbolizer_run_input(tool, module_path, module_path, &input, addrs, n, results);
	free(input.data);
	return err;
}

int symbolizer_run_modules(const char *tool, struct symbolizer_batch *batches, size_t n_batches)
{
	struct symbolizer_result *results = NULL;
	struct growbuf input = {0};
	uint64_t *addrs = NULL;
	size_t total = 0, b, i, k;
	int err;

	if (!tool || !tool[0] || (n_batches && !batches))
		return -EINVAL;
	for (b = 0; b < n_batches; b++) {
		/* a quote or a newline would end the path early */
		if (!batches[b].path || strpbrk(batches[b].path, "\"\n") ||
		    (batches[b].n && (!batches[b].addrs || !batches[b].results)))
			return -EINVAL;
		total += batches[b].n;
	}
	if (!total)
		return 0;
	addrs = calloc(total, sizeof(*addrs));
	results = calloc(total, sizeof(*results));
	err = addrs && results ? 0 : -ENOMEM;
	for (b = 0, k = 0; !err && b < n_batches; b++) {
		err = growbuf_reserve(&input, input.len + batches[b].n * (strlen(batches[b].path) + 24));
		for (i = 0; !err && i < batches[b].n; i++, k++) {
			addrs[k] = batches[b].addrs[i];
			input.len += snprintf(input.data + input.len, input.cap - input.len,
					      "\"%s\" 0x%llx\n", batches[b].path,
					      (unsigned long long)addrs[k]);
		}
	}
	if (!err)
		err = symbolizer_run_input(tool, NULL, "several modules", &input, addrs, total,
					   results);
	for (b = 0, k = 0; !err && b < n_batches; b++) {
		memcpy(batches[b].results, results + k, batches[b].n * sizeof(*results));
		k += batches[b].n;
	}
	free(results); /* the strings now belong to the batches */
	free(addrs);
	free(input.data);
	return err;
}

static int symbolizer_run_input(const char *tool, const char *module_path, const char *label,
				struct growbuf *input_buf, const uint64_t *addrs, size_t n,
				struct symbolizer_result *results)
{
	struct growbuf output = {0}, errors = {0};
	int in_fd = -1, out_fd = -1, err_fd = -1, status = 0;
	pid_t pid = -1;
	size_t i;
	int err;

	err = symbolizer_spawn(tool, module_path, &pid, &in_fd, &out_fd, &err_fd);
	if (err) {
		if (err == -ENOENT)
			pr_debug("cannot find '%s'", tool);
		else
			pr_warn("cannot start '%s': %s", tool, strerror(-err));
		pid = -1;
		goto cleanup;
	}

	err = symbolizer_exchange(in_fd, out_fd, err_fd, input_buf, &output, &errors);
	if (err) {
		/* we cannot finish reading: do not wait on a child that may block */
		kill(pid, SIGKILL);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			if (!err)
				err = -errno;
			break;
		}
	}
	pid = -1;
	if (err)
		goto cleanup;

	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		const char *why = first_stderr_line(&errors);

		if (WIFEXITED(status))
			pr_warn("exit status %d from '%s' on '%s'%s%s", WEXITSTATUS(status), tool,
				label, why[0] ? ": " : "", why);
		else
			pr_warn("signal %d killed '%s' on '%s'", WTERMSIG(status), tool, label);
		err = -EIO;
		goto cleanup;
	}

	err = symbolizer_parse_output(tool, label, &output, addrs, n, results);

cleanup:
	if (err) {
		for (i = 0; i < n; i++)
			symbolizer_result_release(&results[i]);
	}
	free(output.data);
	free(errors.data);
	return err;
}
