/* source_extracts — see source_extracts.h. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/aggregator/as_owner.h"
#include "userspace/attribution/symbolizer.h"
#include "userspace/launch/tool.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"
#include "userspace/source/dwarf_checksums.h"
#include "userspace/source/source.h"
#include "userspace/source/source_extracts.h"

struct candidate {
	int64_t hotspot;
	char *source_file, *module_path;
	uint32_t first_line, last_line;
	int module_read; /* its module's line tables were read (or tried) */
};

struct extract_job {
	struct candidate c[SOURCE_MAX_HOTSPOTS];
	size_t n;
	struct source_request rq[SOURCE_MAX_HOTSPOTS];
	char no_md5[SOURCE_MAX_HOTSPOTS][PATH_MAX + 200];
	struct source_answer answers[SOURCE_MAX_HOTSPOTS];
	/* the source map, borrowed from the manifest */
	const char *map_old[64], *map_new[64];
	struct source_options o;
};

static int collect(const struct pivot_source_candidate *pc, void *ctx)
{
	struct extract_job *j = ctx;
	struct candidate *c = &j->c[j->n];

	if (j->n >= SOURCE_MAX_HOTSPOTS)
		return 0;
	c->hotspot = pc->hotspot;
	c->source_file = strdup(pc->source_file);
	c->module_path = strdup(pc->module_path);
	if (!c->source_file || !c->module_path) {
		free(c->source_file);
		free(c->module_path);
		return -ENOMEM;
	}
	/* the function's first line when it comes before its lines sampled
	 * (an inlined callee's lines may be above it) */
	c->first_line = pc->start_line && pc->start_line < pc->first_sampled ? pc->start_line
									     : pc->first_sampled;
	c->last_line = pc->last_sampled;
	j->n++;
	return 0;
}

static const json_t *effective(const json_t *manifest, const char *key)
{
	return json_object_get(
	    json_object_get(json_object_get(json_object_get(manifest, "provenance"),
					    "effective_configuration"),
			    key),
	    "value");
}

/* 1 when the user stopped the finalize (the symbolizer's budget, bound by
 * the Aggregator, says so or its cancel descriptor is readable) */
static int finalize_stopped(void)
{
	const struct symbolizer_budget *b = symbolizer_budget_bound();
	struct pollfd pfd;

	if (!b)
		return 0;
	if (b->stopped == -ECANCELED)
		return 1;
	pfd = (struct pollfd){.fd = b->cancel_fd, .events = POLLIN};
	return b->cancel_fd >= 0 && poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN);
}

/* the reason extracts are disabled, or NULL when they are not */
static const char *disabled_reason(const json_t *manifest, char *buf, size_t len)
{
	const json_t *entry = json_object_get(
	    json_object_get(json_object_get(manifest, "provenance"), "effective_configuration"),
	    "source.embed");
	const char *from = json_string_value(json_object_get(entry, "source"));

	if (!json_is_false(json_object_get(entry, "value")))
		return NULL;
	if (!from || !strcmp(from, "command line"))
		return "--no-source";
	snprintf(buf, len, "source.embed = false in '%s'", from);
	return buf;
}

static void read_options(struct extract_job *j, const json_t *manifest, int run_dir_fd)
{
	const json_t *map = effective(manifest, "source_map"), *pair;
	struct stat st;
	size_t i;

	json_array_foreach(map, i, pair) {
		const char *old = json_string_value(json_object_get(pair, "old"));
		const char *new = json_string_value(json_object_get(pair, "new"));

		if (!old || !new || j->o.n_map >= 64)
			continue;
		j->map_old[j->o.n_map] = old;
		j->map_new[j->o.n_map++] = new;
	}
	j->o.map_old = j->map_old;
	j->o.map_new = j->map_new;
	j->o.root = json_string_value(
	    json_object_get(json_object_get(manifest, "run"), "project_root"));
	if (run_dir_fd >= 0 && !fstatat(run_dir_fd, "..", &st, 0)) {
		j->o.has_skip = 1;
		j->o.skip_dev = st.st_dev;
		j->o.skip_ino = st.st_ino;
	}
}

/* llvm-dwarfdump beside symbolizer, else in PATH: 0 or -errno (why says) */
static int dwarfdump_tool(const char *symbolizer, char *path, size_t len, char *why,
			  size_t whylen)
{
	char sibling[PATH_MAX], dir[PATH_MAX];

	if (symbolizer && symbolizer[0] == '/') {
		snprintf(dir, sizeof(dir), "%s", symbolizer);
		snprintf(sibling, sizeof(sibling), "%s/llvm-dwarfdump", dirname(dir));
		if (!tool_resolve_trusted(sibling, path, len, why, whylen))
			return 0;
	}
	return tool_resolve_trusted("llvm-dwarfdump", path, len, why, whylen);
}

/* the MD5s of every candidate's file, one llvm-dwarfdump per module */
static int find_checksums(struct extract_job *j, const char *symbolizer)
{
	char tool[PATH_MAX], why[PATH_MAX + 200];
	long long deadline = clock_monotonic_ms() + DWARF_CHECKSUMS_TIMEOUT_MS;
	struct dwarf_checksums dc;
	size_t i, k;
	int tool_err, err;

	tool_err = dwarfdump_tool(symbolizer, tool, sizeof(tool), why, sizeof(why));
	for (i = 0; i < j->n; i++) {
		j->rq[i] = (struct source_request){.dwarf_path = j->c[i].source_file,
						   .first_line = j->c[i].first_line,
						   .last_line = j->c[i].last_line,
						   .no_md5_reason = j->no_md5[i]};
		snprintf(j->no_md5[i], sizeof(j->no_md5[i]),
			 tool_err ? "llvm-dwarfdump could not be run (%s)"
				  : "no checksum in the debug info",
			 why);
	}
	for (i = 0; !tool_err && i < j->n; i++) {
		if (j->c[i].module_read)
			continue;
		dwarf_checksums_init(&dc);
		err = deadline > clock_monotonic_ms()
			  ? dwarf_checksums_read(tool, j->c[i].module_path,
						 (int)(deadline - clock_monotonic_ms()), &dc)
			  : -ETIMEDOUT; /* one bound for every module */
		if (err == -ENOMEM) {
			dwarf_checksums_release(&dc);
			return err;
		}
		for (k = i; k < j->n; k++) {
			if (strcmp(j->c[k].module_path, j->c[i].module_path))
				continue;
			j->c[k].module_read = 1;
			if (err)
				snprintf(j->no_md5[k], sizeof(j->no_md5[k]),
					 "the line table of '%s' could not be read (llvm-dwarfdump: "
					 "%s)",
					 j->c[i].module_path, strerror(-err));
			else
				j->rq[k].has_md5 = dwarf_checksums_lookup(&dc, j->c[k].source_file,
									  j->rq[k].md5);
		}
		dwarf_checksums_release(&dc);
	}
	return 0;
}

static int store_answer(struct pivot *p, const struct candidate *c, const struct source_answer *a)
{
	struct pivot_source s = {
	    .hotspot = c->hotspot,
	    .dwarf_path = c->source_file,
	    .resolved_path = a->resolved,
	    .status = source_status_name(a->status),
	    .reason = a->reason,
	    .first_line = a->first_line,
	    .last_line = a->last_line,
	    .truncated = a->truncated,
	};

	return pivot_store_source(p, &s, (const char *const *)a->lines, a->n_lines);
}

int source_extracts_store(struct pivot *p, int run_dir_fd, const json_t *manifest,
			  const char *symbolizer)
{
	struct extract_job *j = calloc(1, sizeof(*j));
	const char *disabled;
	char buf[PATH_MAX + 64];
	size_t i;
	int err, stopped;

	if (!j)
		return -ENOMEM;
	err = pivot_for_each_source_candidate(p, SOURCE_MAX_HOTSPOTS, collect, j);
	if (err || !j->n)
		goto cleanup;
	stopped = finalize_stopped();
	disabled = stopped ? "not read: the finalize was stopped by the user"
			   : disabled_reason(manifest, buf, sizeof(buf));
	for (i = 0; disabled && i < j->n; i++) {
		j->answers[i].status = stopped ? SOURCE_MISSING : SOURCE_DISABLED;
		snprintf(j->answers[i].reason, sizeof(j->answers[i].reason), "%s", disabled);
	}
	if (!disabled) {
		read_options(j, manifest, run_dir_fd);
		err = find_checksums(j, symbolizer);
		err = err ?: source_fetch(&j->o, j->rq, j->n, as_owner_fsuid(),
					  as_owner_fsgid(), j->answers);
		if (err)
			goto cleanup;
	}
	for (i = 0; !err && i < j->n; i++)
		err = store_answer(p, &j->c[i], &j->answers[i]);
cleanup:
	for (i = 0; i < j->n; i++) {
		source_answer_release(&j->answers[i]);
		free(j->c[i].source_file);
		free(j->c[i].module_path);
	}
	free(j);
	if (err)
		pr_warn("source extracts not stored: %s", strerror(-err));
	return err;
}
