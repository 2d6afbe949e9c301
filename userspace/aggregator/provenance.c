/* provenance — see provenance.h. */
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sys/stat.h>
#include <protobuf-c/protobuf-c.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "userspace/aggregator/provenance.h"
#include "userspace/launch/tool.h"
#include "userspace/log/json_text.h"
#include "userspace/log/log.h"
#include "version.h" /* generated: NUNATAK_COMMIT, NUNATAK_DIRTY */

/* A symbolizer that never answers must not hold the start of the Run. */
#define TOOL_VERSION_TIMEOUT_MS 2000

/* The last version asked, by file (the service Aggregator starts many
 * Runs with one symbolizer: ~0.1 s each on its serving thread otherwise),
 * and the file being asked now: a second asker of that file waits for its
 * answer rather than running it again (provenance_prefetch()). */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t asked;
	char path[PATH_MAX];
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	json_t *version;
	char asking[PATH_MAX]; /* "" when none */
} version_cache = {.lock = PTHREAD_MUTEX_INITIALIZER, .asked = PTHREAD_COND_INITIALIZER};

static int cache_matches(const char *path, const struct stat *st)
{
	return version_cache.version && !strcmp(version_cache.path, path) &&
	       version_cache.dev == st->st_dev && version_cache.ino == st->st_ino &&
	       version_cache.mtime.tv_sec == st->st_mtim.tv_sec &&
	       version_cache.mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* The cached version of path, else NULL and path is this thread's to ask
 * (end_asking() once done); waits while another thread asks it, bounded
 * by that thread's own bound. */
static json_t *cached_version(const char *path, const struct stat *st)
{
	json_t *v = NULL;

	pthread_mutex_lock(&version_cache.lock);
	while (!strcmp(version_cache.asking, path))
		pthread_cond_wait(&version_cache.asked, &version_cache.lock);
	if (cache_matches(path, st))
		v = json_deep_copy(version_cache.version);
	else if (!version_cache.asking[0])
		snprintf(version_cache.asking, sizeof(version_cache.asking), "%s", path);
	pthread_mutex_unlock(&version_cache.lock);
	return v;
}

/* path asked (cached or not): its waiters go on */
static void end_asking(const char *path)
{
	pthread_mutex_lock(&version_cache.lock);
	if (!strcmp(version_cache.asking, path)) {
		version_cache.asking[0] = '\0';
		pthread_cond_broadcast(&version_cache.asked);
	}
	pthread_mutex_unlock(&version_cache.lock);
}

static void cache_version(const char *path, const struct stat *st, const json_t *v)
{
	pthread_mutex_lock(&version_cache.lock);
	json_decref(version_cache.version);
	version_cache.version = json_deep_copy(v);
	snprintf(version_cache.path, sizeof(version_cache.path), "%s", path);
	version_cache.dev = st->st_dev;
	version_cache.ino = st->st_ino;
	version_cache.mtime = st->st_mtim;
	pthread_mutex_unlock(&version_cache.lock);
}

/* The first line of `tool --version` that names a version, asked only of
 * a tool that passed tool_resolve_trusted(), with execve and a bound
 * (remembered for that very file); NULL with the reason in @why otherwise. */
static json_t *tool_version(const char *tool, char *why, size_t whylen)
{
	char path[PATH_MAX], out[4096], *line, *save = NULL;
	char *argv[] = {(char *)tool, "--version", NULL};
	struct tool_result res;
	struct stat st;
	json_t *v = NULL;
	int ret, known;

	/* a missing or refused tool is announced as a Degradation by run */
	if (tool_resolve_trusted(tool, path, sizeof(path), why, whylen))
		return NULL;
	known = !stat(path, &st);
	if (known && (v = cached_version(path, &st)))
		return v;
	ret = tool_run(path, argv, TOOL_VERSION_TIMEOUT_MS, out, sizeof(out), &res);
	if (ret) {
		if (ret == -ETIMEDOUT)
			snprintf(why, whylen, "'%s --version' did not answer within %d ms: killed",
				 path, TOOL_VERSION_TIMEOUT_MS);
		else
			snprintf(why, whylen, "cannot run '%s': %s", path, strerror(-ret));
		pr_warn("%s", why);
	} else {
		for (line = strtok_r(out, "\n", &save); line && !v;
		     line = strtok_r(NULL, "\n", &save))
			if (strstr(line, "version"))
				v = json_text(line);
		if (!v)
			snprintf(why, whylen, "'%s --version' named no version", path);
		else if (known)
			cache_version(path, &st, v);
	}
	if (known)
		end_asking(path);
	return v;
}

static void *prefetch_thread(void *arg)
{
	char why[1024];

	json_decref(tool_version(arg, why, sizeof(why)));
	free(arg);
	return NULL;
}

int provenance_prefetch(const char *symbolizer_path)
{
	pthread_attr_t attr;
	pthread_t thread;
	char *path;
	int e;

	if (!symbolizer_path || !symbolizer_path[0])
		return 0;
	path = strdup(symbolizer_path);
	if (!path)
		return -ENOMEM;
	e = pthread_attr_init(&attr);
	e = e ?: pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	e = e ?: pthread_create(&thread, &attr, prefetch_thread, path);
	pthread_attr_destroy(&attr);
	if (e)
		free(path);
	return -e;
}

json_t *provenance_json(const char *symbolizer_path, const json_t *effective_configuration)
{
	char libbpf[32], zmq[32], why[1024] = "";
	int major, minor, patch;
	json_t *symbolizer;

	snprintf(libbpf, sizeof(libbpf), "%u.%u", libbpf_major_version(), libbpf_minor_version());
	zmq_version(&major, &minor, &patch);
	snprintf(zmq, sizeof(zmq), "%d.%d.%d", major, minor, patch);
	if (symbolizer_path && symbolizer_path[0]) {
		symbolizer = tool_version(symbolizer_path, why, sizeof(why));
	} else {
		symbolizer = NULL;
		snprintf(why, sizeof(why), "no llvm-symbolizer may run for this Run (the "
			 "degradations say why)");
	}
	/* "llvm-symbolizer": null comes with "llvm-symbolizer-unavailable":
	 * the reason */
	return json_pack("{s:s, s:b, s:{s:s, s:s, s:s, s:s, s:s, s:o?, s:o*}, s:o}", "commit",
			 NUNATAK_COMMIT, "dirty_tree", NUNATAK_DIRTY, "dependencies", "libbpf",
			 libbpf, "libzmq", zmq, "sqlite", sqlite3_libversion(), "jansson",
			 JANSSON_VERSION, "protobuf-c", protobuf_c_version(), "llvm-symbolizer",
			 symbolizer, "llvm-symbolizer-unavailable", symbolizer ? NULL : json_text(why),
			 "effective_configuration",
			 effective_configuration ? json_deep_copy(effective_configuration)
						 : json_object());
}
