/* run_read — see run_read.h. */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/aggregator/finalize.h"
#include "userspace/aggregator/manifest.h"
#include "userspace/aggregator/run_dir.h"
#include "userspace/cli/cli.h"
#include "userspace/cli/run_read.h"
#include "userspace/config/config.h"
#include "userspace/launch/launch.h"
#include "userspace/log/log.h"
#include "userspace/pivot/pivot.h"

/* The Aggregator stopped before the end (nunatak was killed): what was
 * stored is kept, attributed and derived now, and the Run says so; written
 * under dirfd, the Run directory, locked. */
static struct pivot *finalize_interrupted(int dirfd, const char *run_dir, const char *path,
					  json_t *manifest, const char *symbolizer)
{
	struct pivot *p = pivot__open_at(dirfd, PIVOT_FILE, 0, path);
	char trusted[PATH_MAX], why[PATH_MAX + 600];
	const char *dname, *remedy;
	int err;

	if (!p)
		return NULL;
	fprintf(stderr,
		"nunatak: '%s' was never finalized (nunatak was killed, or its "
		"finalize was stopped): finalizing it now\n",
		run_dir);
	/* as `nunatak run` does: only a program no other user can change */
	err = 0;
	if (cli_resolve_symbolizer(symbolizer, trusted, sizeof(trusted), &dname, why, sizeof(why),
				   &remedy)) {
		fprintf(stderr, "nunatak: %s\n", why);
		err = pivot_add_degradation(p, dname, why, remedy);
	}
	err =
	    err
		?: pivot_add_degradation(p, "run-interrupted",
					 "nunatak stopped before the Run was finalized (it was "
					 "killed, or its finalize was stopped): the Run holds what "
					 "was published until then, and no exit code",
					 "keep nunatak running until it prints the summary");
	err = err ?: finalize_run(p, dirfd, manifest, trusted);
	pivot__free(p);
	if (!err) /* the killed Aggregator's room for the end: the end is now */
		unlinkat(dirfd, RUN_STORAGE_RESERVE_FILE, 0);
	if (err) {
		errno = -err;
		return NULL;
	}
	return pivot__open_at(dirfd, PIVOT_FILE, 1, path);
}

/* A finalized Run whose pivot was left in WAL mode (a reader held it at
 * the end, or an older nunatak wrote it) is sealed now: plain files. */
static struct pivot *seal_finalized(int dirfd, const char *path, struct pivot *p)
{
	struct pivot *rw;

	if (pivot_is_sealed(p) != 0)
		return p;
	pivot__free(p); /* the one connection: leaving WAL mode needs it */
	rw = pivot__open_at(dirfd, PIVOT_FILE, 0, path);
	if (rw)
		pivot_seal(rw); /* on failure (logged) the Run is read as it is */
	pivot__free(rw);
	return pivot__open_at(dirfd, PIVOT_FILE, 1, path);
}

/* 1 when the Run at dirfd is a private (0700) Run of ours */
static int run_is_private(int dirfd)
{
	struct stat st;

	return !fstat(dirfd, &st) && st.st_uid == geteuid() && (st.st_mode & 07777) == 0700;
}

/* 1 when a reader may write the Run (finalize or seal it): its
 * writer is gone (lock, what run_dir_lock() answered, is 0: dirfd holds
 * the lock) and it is a private
 * Run of ours (root never writes into a directory another user can
 * change). Otherwise 0, saying on stderr why a Run never finalized is read
 * as it is. */
static int run_may_write(const char *run_dir, const json_t *manifest, int lock, int dirfd)
{
	char why[128];

	if (lock == -EWOULDBLOCK) {
		fprintf(stderr,
			"nunatak: '%s' is still being written (its nunatak is running): "
			"this is what it holds so far, not final\n",
			run_dir);
		return 0;
	}
	if (lock) {
		fprintf(stderr,
			"nunatak: cannot lock '%s' to tell whether it is still being "
			"written (%s): read as it is\n",
			run_dir, errno_text(lock, why, sizeof(why)));
		return 0;
	}
	if (!run_is_private(dirfd)) {
		if (!manifest_finalized(manifest))
			fprintf(stderr,
				"nunatak: '%s' was never finalized, but it is not a private "
				"(0700) Run of yours: read as it is, not finalized\n",
				run_dir);
		return 0;
	}
	return 1;
}

/* The Run's pivot opened read-only under *read_fd (a descriptor of the
 * Run directory, for the caller to close: SQLite opens no path longer than
 * 512 characters, a Run's may be up to PATH_MAX); NULL + errno, said. */
static struct pivot *run_open_pivot(const char *run_dir, const char *path, int *read_fd)
{
	char why[128];
	struct pivot *p;
	int e;

	*read_fd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	p = *read_fd < 0 ? NULL : pivot__open_at(*read_fd, PIVOT_FILE, 1, path);
	if (!p) {
		e = errno;
		fprintf(stderr, "nunatak: cannot read '%s': %s\n", path,
			e == EPROTONOSUPPORT ? "written by a newer nunatak: upgrade nunatak"
			: e == EBADMSG	     ? "not a nunatak pivot (corrupt, or not SQLite)"
					     : errno_text(e, why, sizeof(why)));
		errno = e;
	}
	return p;
}

/* A finalized Run left in WAL mode is sealed (symbolizer or not: no
 * reader may leave -wal/-shm in it), a Run never finalized is finalized
 * with symbolizer (none: read as it is), under the lock dirfd holds. The
 * pivot to read (p or its replacement), or NULL + errno, said. */
static struct pivot *run_finish(const char *run_dir, const char *path, json_t *manifest,
				const char *symbolizer, struct pivot *p, int lock, int dirfd)
{
	char why[128];
	int e;

	if (!symbolizer) { /* `nunatak run`'s own summary: says nothing more */
		if (lock || !manifest_finalized(manifest) || !run_is_private(dirfd))
			return p;
	} else if (!run_may_write(run_dir, manifest, lock, dirfd)) {
		return p;
	}
	if (manifest_finalized(manifest)) {
		p = seal_finalized(dirfd, path, p);
	} else {
		pivot__free(p);
		p = finalize_interrupted(dirfd, run_dir, path, manifest, symbolizer);
	}
	if (!p) {
		e = errno;
		fprintf(stderr, "nunatak: cannot finalize '%s': %s\n", run_dir,
			errno_text(e, why, sizeof(why)));
		errno = e;
	}
	return p;
}

int run_read_open(struct run_read *r, const char *run_dir, const char *symbolizer)
{
	char err[1024];
	int lock, e;

	memset(r, 0, sizeof(*r));
	r->dirfd = r->read_fd = -1;
	r->manifest = manifest_read(run_dir, err, sizeof(err));
	if (!r->manifest) {
		e = -errno;
		fprintf(stderr, "nunatak: %s\n", err);
		return e;
	}
	snprintf(r->path, sizeof(r->path), "%s/" PIVOT_FILE, run_dir);
	r->p = run_open_pivot(run_dir, r->path, &r->read_fd);
	/* asked once: may the Run be written here, is it still written */
	lock = r->p ? run_dir_lock(run_dir, &r->dirfd) : -EBADF;
	r->live = lock == -EWOULDBLOCK;
	if (r->p)
		r->p = run_finish(run_dir, r->path, r->manifest, symbolizer, r->p, lock, r->dirfd);
	if (!r->p) {
		e = -errno;
		run_read_close(r);
		return e;
	}
	return 0;
}

void run_read_close(struct run_read *r)
{
	if (!r)
		return;
	pivot__free(r->p);
	r->p = NULL;
	if (r->dirfd >= 0)
		close(r->dirfd); /* the lock */
	if (r->read_fd >= 0)
		close(r->read_fd);
	r->dirfd = r->read_fd = -1;
	json_decref(r->manifest);
	r->manifest = NULL;
}

enum { OPT_RUNS_DIR = 0x200 };

static const struct argp_option where_options[] = {
	{"runs-dir", OPT_RUNS_DIR, "DIR", 0,
	 "Runs directory to look in (default: config `runs_dir`)", 0},
	{},
};

static error_t where_parse(int key, char *arg, struct argp_state *state)
{
	struct run_where *w = state->input;

	switch (key) {
	case OPT_RUNS_DIR:
		w->runs_dir = arg;
		break;
	case ARGP_KEY_ARG:
		if (w->run)
			argp_error(state, "one Run at a time: '%s' and '%s'", w->run, arg);
		w->run = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp run_where_argp = {where_options, where_parse, NULL, NULL, NULL, NULL, NULL};

int run_read_locate(struct config *cfg, const char *runs_dir, const char *run, char *run_dir,
		    size_t len)
{
	char err[1024];

	config_init(cfg);
	if (cli_load_config(cfg)) {
		config_release(cfg);
		return EXIT_NUNATAK_FAILED;
	}
	if (runs_dir)
		config_set_runs_dir(cfg, runs_dir);
	if (run_dir_find(cfg->runs_dir, run, run_dir, len, err, sizeof(err))) {
		config_release(cfg);
		fprintf(stderr, "nunatak: %s\n", err);
		return 1;
	}
	return 0;
}

int run_where_locate(const struct run_where *w, char *run_dir, size_t len)
{
	struct config cfg;
	int ret;

	ret = run_read_locate(&cfg, w->runs_dir, w->run, run_dir, len);
	if (!ret)
		config_release(&cfg);
	return ret;
}
