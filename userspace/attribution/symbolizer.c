/* symbolizer — see symbolizer.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "userspace/attribution/symbolizer.h"
#include "userspace/attribution/symbolizer_exec.h"
#include "userspace/log/log.h"

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

/* partial: the tool was stopped at a bound, so fewer lines than addresses
 * are fine and a last line without its newline is cut, not malformed.
 * *answered: how many results were filled. */
static int symbolizer_parse_output(const char *tool, const char *module_path,
				   const struct growbuf *output, const uint64_t *addrs, size_t n,
				   struct symbolizer_result *results, int partial, size_t *answered)
{
	const char *p = output->data, *end = output->data + output->len;
	char error_msg[256];
	int warned = 0;
	size_t i = 0;
	int err;

	*answered = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (partial && !nl)
			break;
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
		*answered = ++i;
		p = nl ? nl + 1 : end;
	}
	if (i != n && !partial) {
		pr_warn("'%s' answered %zu lines for the %zu addresses of '%s'", tool, i, n,
			module_path);
		return -EIO;
	}
	return 0;
}

static __thread struct symbolizer_budget *bound_budget;

void symbolizer_budget_init(struct symbolizer_budget *b, int request_ms, int total_ms,
			    int cancel_fd)
{
	memset(b, 0, sizeof(*b));
	b->request_ms = request_ms > 0 ? request_ms : SYMBOLIZER_REQUEST_MS;
	b->total_ms = total_ms;
	b->cancel_fd = cancel_fd;
}

struct symbolizer_budget *symbolizer_budget_bind(struct symbolizer_budget *b)
{
	struct symbolizer_budget *previous = bound_budget;

	bound_budget = b;
	return previous;
}

struct symbolizer_budget *symbolizer_budget_bound(void)
{
	return bound_budget;
}

/* One tool process on a prepared input, charged to the bound budget (a
 * default one of its own when none is). */
static int symbolizer_run_input(const char *tool, const char *module_path, const char *label,
				struct growbuf *input, const uint64_t *addrs, size_t n,
				struct symbolizer_result *results)
{
	struct symbolizer_budget own, *budget = bound_budget;
	struct growbuf output = {0};
	size_t i, answered = 0;
	int err, parse_err;

	if (!budget) {
		symbolizer_budget_init(&own, SYMBOLIZER_REQUEST_MS, SYMBOLIZER_TOTAL_MS, -1);
		budget = &own;
	}
	err = symbolizer_exec(tool, module_path, label, input, n, budget, &output);
	if (!err || err == -ETIMEDOUT || err == -ECANCELED) {
		/* stopped at a bound: what it answered until then is kept */
		parse_err = symbolizer_parse_output(tool, label, &output, addrs, n, results,
						    err != 0, &answered);
		err = parse_err ?: err;
	}
	if (err && err != -ETIMEDOUT && err != -ECANCELED) {
		for (i = 0; i < n; i++)
			symbolizer_result_release(&results[i]);
		answered = 0;
	}
	budget->answered += answered;
	free(output.data);
	return err;
}

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
	/* what a stopped tool answered is kept; after a failure all is empty */
	for (b = 0, k = 0; results && b < n_batches; b++) {
		memcpy(batches[b].results, results + k, batches[b].n * sizeof(*results));
		k += batches[b].n;
	}
	free(results); /* the strings now belong to the batches */
	free(addrs);
	free(input.data);
	return err;
}
