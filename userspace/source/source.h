/* source — source extracts of a Run's Hotspots: where a file named by
 * the debug information is on this machine, whether it is still the file
 * that was compiled, and the lines of it a Run keeps.
 *
 * A file is found (source_resolve()) as the DWARF names it, else through
 * the --source-map / [source_map] prefixes OLD=NEW (in their order, OLD
 * matching whole leading path components), else by one search of its
 * base name under the project root (bounded: SOURCE_SEARCH_MAX_DEPTH
 * levels, SOURCE_SEARCH_MAX_ENTRIES entries; .git, the runs directory and
 * symbolic links not entered). Two matches or more: ambiguous, none:
 * missing; the reason says which and where. The last component of a path
 * is opened with O_NOFOLLOW (a symbolic link is not a source file here),
 * a file must be regular and at most SOURCE_MAX_FILE_BYTES.
 *
 * Staleness: with the MD5 the line table recorded (DWARF 5), a file whose
 * MD5 differs is `stale` and none of its text is kept; without one the
 * text is kept as `not-verified`, with the reason. A file shorter than
 * the lines sampled in it is stale whatever the checksum says.
 *
 * Every file operation of a Run's extracts runs in a child process that
 * took the Run owner's identity (uid, gid, supplementary groups) when it
 * differs from this process' (source_fetch()): a root nunatak never puts
 * a file the owner could not read into the owner's Run.
 */
#ifndef NUNATAK_SOURCE_H
#define NUNATAK_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "userspace/source/md5.h"

#define SOURCE_SEARCH_MAX_DEPTH 8
#define SOURCE_SEARCH_MAX_ENTRIES 50000
#define SOURCE_MAX_FILE_BYTES (8 << 20)
#define SOURCE_CONTEXT_LINES 3	 /* before the function's first line, after the last sampled */
#define SOURCE_MAX_LINES 120	 /* an extract longer than this is cut (truncated) */
#define SOURCE_MAX_LINE_BYTES 4096 /* a longer line is cut */
#define SOURCE_FETCH_TIMEOUT_MS 30000

enum source_status {
	SOURCE_EMBEDDED,     /* the text, verified by its MD5 */
	SOURCE_NOT_VERIFIED, /* the text, without a checksum to verify it */
	SOURCE_STALE,	     /* changed since the build: no text */
	SOURCE_MISSING,	     /* not found or not readable: no text */
	SOURCE_AMBIGUOUS,    /* several files could be it: no text */
	SOURCE_DISABLED,     /* --no-source: no text */
};

/* "embedded", "not-verified", "stale", "missing", "ambiguous", "disabled" */
const char *source_status_name(enum source_status s);

struct source_options {
	const char *const *map_old, *const *map_new; /* n_map prefix pairs */
	size_t n_map;
	const char *root; /* the project root; NULL: no basename search */
	int has_skip;	  /* the runs directory, never searched */
	dev_t skip_dev;
	ino_t skip_ino;
};

struct source_request {
	const char *dwarf_path;	   /* as the debug information names it */
	int has_md5;
	unsigned char md5[MD5_DIGEST_BYTES];
	const char *no_md5_reason; /* why there is no checksum (has_md5 0) */
	uint32_t first_line, last_line; /* the lines wanted (1-based, inclusive) */
};

struct source_answer {
	enum source_status status;
	char *resolved; /* the file read; NULL when none was found */
	char reason[768]; /* "" when embedded */
	uint32_t first_line, last_line; /* of lines[]; 0, 0 without text */
	int truncated;
	char **lines; /* n_lines = last_line - first_line + 1 texts, or none */
	size_t n_lines;
};

void source_answer_release(struct source_answer *a);

/* Finds dwarf_path (see above) in out: 0; -ENOENT (missing) or
 * -ENOTUNIQ (ambiguous) with the reason in reason; -ENAMETOOLONG. */
int source_resolve(const struct source_options *o, const char *dwarf_path, char *out,
		   size_t outlen, char *reason, size_t reasonlen);

/* Resolves and reads one request into a (status, text, reason), in this
 * process, with its identity: 0 or -ENOMEM (a is then empty). */
int source_fetch_one(const struct source_options *o, const struct source_request *rq,
		     struct source_answer *a);

/* source_fetch_one() of rq[0..n) into out[0..n), in a child process
 * that takes uid, gid and uid's groups first when uid is not this
 * process' euid (a failure to is every answer's reason), bounded by
 * SOURCE_FETCH_TIMEOUT_MS (answers not given by then: missing, "timed
 * out"). 0 (every out[i] filled; release each) or -ENOMEM, -errno from
 * fork/pipe (out untouched). */
int source_fetch(const struct source_options *o, const struct source_request *rq, size_t n,
		 uid_t uid, gid_t gid, struct source_answer *out);

#endif
