/* Unit tests for userspace/config/config: defaults, the cascade site file ->
 * project file (found walking up) -> flags, refusals with their position,
 * and the provenance JSON. Each test works in its own temporary tree. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* cmocka needs the headers above */
#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/config/config.h"

struct tree {
	char root[256]; /* resolved, so it matches the paths config reports */
	/* scratch for tree_path(), rotating so two calls can be arguments of
	 * one call */
	char path[4][PATH_MAX];
	unsigned next;
};

static const char *tree_path(struct tree *t, const char *rel)
{
	char *path = t->path[t->next++ % 4];

	assert_true(strlen(t->root) + 1 + strlen(rel) < PATH_MAX);
	strcpy(stpcpy(stpcpy(path, t->root), "/"), rel);
	return path;
}

static void tree_mkdirs(struct tree *t, const char *rel)
{
	char buf[PATH_MAX], *slash;

	snprintf(buf, sizeof(buf), "%s", tree_path(t, rel));
	for (slash = buf + strlen(t->root) + 1; (slash = strchr(slash, '/')); slash++) {
		*slash = '\0';
		assert_true(!mkdir(buf, 0755) || errno == EEXIST);
		*slash = '/';
	}
	assert_true(!mkdir(buf, 0755) || errno == EEXIST);
}

static void tree_write(struct tree *t, const char *rel, const char *text)
{
	FILE *f = fopen(tree_path(t, rel), "w");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
	/* whatever the umask: a group-writable file would be refused */
	assert_int_equal(chmod(tree_path(t, rel), 0644), 0);
}

static int setup_tree(void **state)
{
	char tmpl[] = "/tmp/nunatak-test-config-XXXXXX";
	struct tree *t = calloc(1, sizeof(*t));
	char *resolved = NULL;

	if (!t || !mkdtemp(tmpl) || !(resolved = realpath(tmpl, NULL)) ||
	    strlen(resolved) >= sizeof(t->root)) {
		free(resolved);
		free(t);
		return -1;
	}
	strcpy(t->root, resolved);
	free(resolved);
	*state = t;
	return 0;
}

static int teardown_tree(void **state)
{
	struct tree *t = *state;
	int ret = remove_tree(t->root);

	free(t);
	return ret;
}

/* Invariants of any config: every value in range, sources consistent. */
static void assert_sane_config(const struct config *cfg)
{
	int key;

	assert_non_null(cfg->runs_dir);
	assert_true(cfg->runs_dir[0] != '\0');
	assert_non_null(cfg->llvm_symbolizer);
	assert_true(cfg->llvm_symbolizer[0] != '\0');
	assert_true(cfg->sampling_frequency >= CONFIG_MIN_SAMPLING_FREQUENCY);
	assert_true(cfg->sampling_frequency <= CONFIG_MAX_SAMPLING_FREQUENCY);
	assert_true(cfg->name || !cfg->source[CONFIG_NAME]);
	/* debug directories: absolute, a list only when a file set it */
	assert_true(cfg->n_debug_dirs <= CONFIG_MAX_DEBUG_DIRS);
	assert_true(cfg->n_debug_dirs == 0 || cfg->source[CONFIG_DEBUG_DIRS]);
	for (size_t i = 0; i < cfg->n_debug_dirs; i++)
		assert_true(cfg->debug_dirs[i][0] == '/');
	for (key = 0; key < CONFIG_KEY_COUNT; key++) {
		assert_non_null(config_key_name(key));
		assert_non_null(config_source(cfg, key));
	}
}

static void assert_json_entry(json_t *root, const char *key, const char *value, const char *source)
{
	json_t *entry = json_object_get(root, key);

	assert_non_null(entry);
	assert_string_equal(json_string_value(json_object_get(entry, "source")), source);
	if (value)
		assert_string_equal(json_string_value(json_object_get(entry, "value")), value);
	else
		assert_true(json_is_null(json_object_get(entry, "value")));
}

static void test_defaults(void **state)
{
	struct config cfg;
	json_t *json;

	(void)state;
	config_init(&cfg);
	assert_sane_config(&cfg);
	assert_null(cfg.name);
	assert_string_equal(cfg.runs_dir, ".nunatak");
	assert_int_equal(cfg.sampling_frequency, 997);
	assert_string_equal(cfg.llvm_symbolizer, "llvm-symbolizer");

	json = config_effective_json(&cfg);
	assert_non_null(json);
	assert_int_equal(json_object_size(json), CONFIG_KEY_COUNT);
	assert_json_entry(json, "name", NULL, "default");
	assert_json_entry(json, "runs_dir", ".nunatak", "default");
	assert_json_entry(json, "tools.llvm-symbolizer", "llvm-symbolizer", "default");
	assert_int_equal(json_integer_value(
			     json_object_get(json_object_get(json, "sampling.frequency"), "value")),
			 997);
	json_decref(json);
	config_release(&cfg);
	config_release(&cfg);
	assert_sane_config(&cfg);
}

static void test_cascade(void **state)
{
	struct tree *t = *state;
	char site[PATH_MAX], project[PATH_MAX], err[512] = "";
	struct config cfg;
	json_t *json, *freq;

	tree_mkdirs(t, "etc");
	tree_mkdirs(t, "proj/src/deep");
	tree_write(t, "etc/nunatak.toml",
		   "# site defaults\n"
		   "name = \"site-name\"\n"
		   "runs_dir = \"/scratch/runs\"\n"
		   "[sampling]\n"
		   "frequency = 499\n"
		   "[tools]\n"
		   "llvm-symbolizer = \"/opt/llvm/bin/llvm-symbolizer\"\n"
		   "[mpi]\n"
		   "budget = 5\n");
	tree_write(t, "proj/nunatak.toml",
		   "name = \"cavity\"\n"
		   "sampling.frequency = 1999\n");
	snprintf(site, sizeof(site), "%s", tree_path(t, "etc/nunatak.toml"));
	snprintf(project, sizeof(project), "%s", tree_path(t, "proj/nunatak.toml"));

	config_init(&cfg);
	assert_int_equal(config_load(&cfg, site, tree_path(t, "proj/src/deep"), err, sizeof(err)),
			 0);
	assert_sane_config(&cfg);
	assert_string_equal(cfg.name, "cavity");
	assert_string_equal(config_source(&cfg, CONFIG_NAME), project);
	assert_int_equal(cfg.sampling_frequency, 1999);
	assert_string_equal(config_source(&cfg, CONFIG_SAMPLING_FREQUENCY), project);
	assert_string_equal(cfg.runs_dir, "/scratch/runs");
	assert_string_equal(config_source(&cfg, CONFIG_RUNS_DIR), site);
	assert_string_equal(cfg.llvm_symbolizer, "/opt/llvm/bin/llvm-symbolizer");
	assert_string_equal(config_source(&cfg, CONFIG_LLVM_SYMBOLIZER), site);
	/* an integer is a number too */
	assert_true(cfg.mpi_budget_pct == 5);
	assert_string_equal(config_source(&cfg, CONFIG_MPI_BUDGET), site);
	json = config_effective_json(&cfg);
	assert_true(json_number_value(json_object_get(json_object_get(json, "mpi.budget"),
						      "value")) == 5);
	json_decref(json);
	assert_int_equal(config_set_mpi_budget(&cfg, 0.5), 0);
	assert_true(cfg.mpi_budget_pct == 0.5);
	assert_string_equal(config_source(&cfg, CONFIG_MPI_BUDGET), "command line");

	/* flags come last */
	assert_int_equal(config_set_sampling_frequency(&cfg, 4000), 0);
	assert_int_equal(config_set_runs_dir(&cfg, "here"), 0);
	assert_sane_config(&cfg);
	assert_int_equal(cfg.sampling_frequency, 4000);
	assert_string_equal(config_source(&cfg, CONFIG_SAMPLING_FREQUENCY), "command line");

	json = config_effective_json(&cfg);
	assert_non_null(json);
	assert_json_entry(json, "name", "cavity", project);
	assert_json_entry(json, "runs_dir", "here", "command line");
	assert_json_entry(json, "tools.llvm-symbolizer", "/opt/llvm/bin/llvm-symbolizer", site);
	freq = json_object_get(json, "sampling.frequency");
	assert_int_equal(json_integer_value(json_object_get(freq, "value")), 4000);
	assert_string_equal(json_string_value(json_object_get(freq, "source")), "command line");
	json_decref(json);

	config_release(&cfg);
	assert_null(cfg.name);
	assert_string_equal(cfg.runs_dir, ".nunatak");
	assert_string_equal(config_source(&cfg, CONFIG_RUNS_DIR), "default");
}

static void test_missing_site_and_nearest_project_wins(void **state)
{
	struct tree *t = *state;
	char err[512] = "", nearest[PATH_MAX];
	struct config cfg;

	tree_mkdirs(t, "proj/sub/deep");
	tree_write(t, "proj/nunatak.toml", "name = \"outer\"\nruns_dir = \"outer-runs\"\n");
	tree_write(t, "proj/sub/nunatak.toml", "name = \"inner\"\n");
	snprintf(nearest, sizeof(nearest), "%s", tree_path(t, "proj/sub/nunatak.toml"));

	config_init(&cfg);
	assert_int_equal(config_load(&cfg, tree_path(t, "no/such/site.toml"),
				     tree_path(t, "proj/sub/deep"), err, sizeof(err)),
			 0);
	/* first found wins: the outer file is not read at all */
	assert_string_equal(cfg.name, "inner");
	assert_string_equal(config_source(&cfg, CONFIG_NAME), nearest);
	assert_string_equal(cfg.runs_dir, ".nunatak");
	assert_string_equal(config_source(&cfg, CONFIG_RUNS_DIR), "default");
	config_release(&cfg);
}

static void test_relative_runs_dir_kept_as_written(void **state)
{
	struct tree *t = *state;
	char err[512] = "";
	struct config cfg;

	tree_mkdirs(t, "proj");
	tree_write(t, "proj/nunatak.toml", "runs_dir = \"out/runs\"\n");
	config_init(&cfg);
	assert_int_equal(
	    config_load(&cfg, tree_path(t, "none.toml"), tree_path(t, "proj"), err, sizeof(err)),
	    0);
	assert_string_equal(cfg.runs_dir, "out/runs");
	config_release(&cfg);
}

static void test_site_file_is_project_file(void **state)
{
	struct tree *t = *state;
	char err[512] = "", site[PATH_MAX];
	struct config cfg;

	tree_mkdirs(t, "proj");
	tree_write(t, "proj/nunatak.toml", "name = \"both\"\n");
	snprintf(site, sizeof(site), "%s", tree_path(t, "proj/nunatak.toml"));
	config_init(&cfg);
	assert_int_equal(config_load(&cfg, site, tree_path(t, "proj"), err, sizeof(err)), 0);
	assert_string_equal(cfg.name, "both");
	assert_string_equal(config_source(&cfg, CONFIG_NAME), site);
	config_release(&cfg);
}

static void test_no_files_at_all(void **state)
{
	struct tree *t = *state;
	char err[512] = "";
	struct config cfg;

	if (!access("/nunatak.toml", F_OK) || !access("/tmp/nunatak.toml", F_OK))
		skip(); /* SKIPPED: a nunatak.toml above the test tree would be found */
	tree_mkdirs(t, "empty/dir");
	config_init(&cfg);
	assert_int_equal(config_load(&cfg, tree_path(t, "none.toml"), tree_path(t, "empty/dir"),
				     err, sizeof(err)),
			 0);
	assert_null(cfg.name);
	assert_int_equal(cfg.sampling_frequency, 997);
	for (int key = 0; key < CONFIG_KEY_COUNT; key++)
		assert_string_equal(config_source(&cfg, key), "default");
	config_release(&cfg);
}

struct refusal {
	const char *text;
	unsigned line, col;
	const char *message;
};

static const struct refusal refusals[] = {
    {"name = \"x\"\n[sampling]\nfrequncy = 10\n", 3, 1, "unknown key 'sampling.frequncy'"},
    {"nmae = \"x\"\n", 1, 1, "unknown key 'nmae'"},
    {"[sampler]\n", 1, 2, "unknown key 'sampler'"},
    {"[tools]\nllvm_symbolizer = \"x\"\n", 2, 1, "unknown key 'tools.llvm_symbolizer'"},
    {"\"sampling.frequency\" = 5\n", 1, 1, "unknown key '\"sampling.frequency\"'"},
    {"[sampling]\nfrequency = 0\n", 2, 13,
     "value out of range for 'sampling.frequency': 0 not in 1..100000"},
    {"[sampling]\nfrequency = 100001\n", 2, 13,
     "value out of range for 'sampling.frequency': 100001 not in 1..100000"},
    {"sampling.frequency = -5\n", 1, 22, "value out of range"},
    {"[sampling]\nfrequency = 99.5\n", 2, 13,
     "wrong type for 'sampling.frequency': expected an integer, got a float"},
    {"[mpi]\nbudget = 0\n", 2, 10,
     "value out of range for 'mpi.budget': 0 is not a percentage more than 0 and less than 100"},
    {"[mpi]\nbudget = 100.0\n", 2, 10, "value out of range for 'mpi.budget'"},
    {"[mpi]\nbudget = \"exact\"\n", 2, 10,
     "wrong type for 'mpi.budget': expected a float, got a string"},
    {"[mpi]\nbuget = 2\n", 2, 1, "unknown key 'mpi.buget'"},
    {"name = 5\n", 1, 8, "wrong type for 'name': expected a string, got an integer"},
    {"runs_dir = [\"a\"]\n", 1, 12, "wrong type for 'runs_dir': expected a string, got an array"},
    {"sampling = 3\n", 1, 12, "wrong type for 'sampling': expected a table, got an integer"},
    {"name = \"\"\n", 1, 8, "empty value for 'name'"},
    {"name = \"x\n", 1, 8, "unterminated string"},
    {"[sampling]\nfrequency = 1\nfrequency = 2\n", 3, 1, "duplicate key 'sampling.frequency'"},
    {"[tools]\ndebug_dirs = \"/opt/dbg\"\n", 2, 14,
     "wrong type for 'tools.debug_dirs': expected an array, got a string"},
    {"[tools]\ndebug_dirs = [\"/opt/dbg\", 3]\n", 2, 27,
     "wrong type in 'tools.debug_dirs': expected a string, got an integer"},
    {"[tools]\ndebug_dirs = [\"debug\"]\n", 2, 15,
     "bad directory 'debug' in 'tools.debug_dirs': write an absolute path"},
    {"[tools]\ndebug_dirs = [\"/a\",\"/b\",\"/c\",\"/d\",\"/e\",\"/f\",\"/g\",\"/h\",\"/i\","
     "\"/j\",\"/k\",\"/l\",\"/m\",\"/n\",\"/o\",\"/p\",\"/q\"]\n",
     2, 14, "'tools.debug_dirs' lists 17 directories: give at most 16"},
};

static void test_refusals_have_positions(void **state)
{
	struct tree *t = *state;
	char err[512], prefix[PATH_MAX + 32], project[PATH_MAX];
	struct config cfg;
	size_t i;
	int ret;

	tree_mkdirs(t, "proj");
	snprintf(project, sizeof(project), "%s", tree_path(t, "proj/nunatak.toml"));
	tree_write(t, "site.toml", "name = \"from-site\"\n");
	for (i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		tree_write(t, "proj/nunatak.toml", refusals[i].text);
		config_init(&cfg);
		err[0] = '\0';
		ret = config_load(&cfg, tree_path(t, "site.toml"), tree_path(t, "proj"), err,
				  sizeof(err));
		snprintf(prefix, sizeof(prefix), "%s:%u:%u: ", project, refusals[i].line,
			 refusals[i].col);
		if (ret != -EINVAL || strncmp(err, prefix, strlen(prefix)) ||
		    !strstr(err, refusals[i].message))
			fail_msg("case %zu: ret %d, got \"%s\", want \"%s%s\"", i, ret, err, prefix,
				 refusals[i].message);
		/* nothing is applied when any file of the cascade is refused */
		assert_null(cfg.name);
		assert_int_equal(cfg.sampling_frequency, 997);
		config_release(&cfg);
	}
}

static void test_site_file_errors(void **state)
{
	struct tree *t = *state;
	char err[512] = "", want[PATH_MAX + 64];
	struct config cfg;

	tree_mkdirs(t, "proj");
	tree_write(t, "site.toml", "[tools]\nllvm-symbolizer = false\n");
	config_init(&cfg);
	assert_int_equal(
	    config_load(&cfg, tree_path(t, "site.toml"), tree_path(t, "proj"), err, sizeof(err)),
	    -EINVAL);
	snprintf(
	    want, sizeof(want),
	    "%s:2:19: wrong type for 'tools.llvm-symbolizer': expected a string, got a boolean",
	    tree_path(t, "site.toml"));
	assert_string_equal(err, want);

	/* a site path that is not a regular file is an error, not "missing" */
	assert_int_equal(
	    config_load(&cfg, tree_path(t, "proj"), tree_path(t, "proj"), err, sizeof(err)),
	    -EISDIR);
	assert_non_null(strstr(err, "not a regular file"));
	assert_null(cfg.name);

	/* a start directory that does not exist */
	assert_int_equal(
	    config_load(&cfg, tree_path(t, "none.toml"), tree_path(t, "nowhere"), err, sizeof(err)),
	    -ENOENT);
	assert_non_null(strstr(err, "cannot resolve"));
	config_release(&cfg);
}

/* A project file another user planted in a parent directory refuses the
 * whole cascade, with its path and owner named; so do a link, a directory
 * and a FIFO bearing the name (the FIFO at once). */
static void test_untrusted_project_file_refused(void **state)
{
	struct tree *t = *state;
	char err[1024] = "", want[PATH_MAX + 32];
	struct timespec t0, t1;
	struct config cfg;

	SKIP_UNLESS(geteuid() == 0, "needs root to chown a file to nobody");
	tree_mkdirs(t, "shared/proj/deep");
	tree_write(t, "site.toml", "name = \"from-site\"\n");
	tree_write(t, "shared/nunatak.toml", "[tools]\nllvm-symbolizer = \"/tmp/evil.sh\"\n");
	assert_int_equal(chown(tree_path(t, "shared/nunatak.toml"), 65534, 65534), 0);
	config_init(&cfg);
	assert_int_equal(config_load(&cfg, tree_path(t, "site.toml"),
				     tree_path(t, "shared/proj/deep"), err, sizeof(err)),
			 -EPERM);
	snprintf(want, sizeof(want), "refusing '%s'", tree_path(t, "shared/nunatak.toml"));
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "nobody (uid 65534)"));
	assert_non_null(strstr(err, "run nunatak from outside"));
	assert_null(cfg.name); /* not even the site file was applied */
	assert_string_equal(cfg.llvm_symbolizer, CONFIG_DEFAULT_LLVM_SYMBOLIZER);

	assert_int_equal(unlink(tree_path(t, "shared/nunatak.toml")), 0);
	assert_int_equal(symlink(tree_path(t, "site.toml"), tree_path(t, "shared/nunatak.toml")),
			 0);
	assert_int_equal(config_load(&cfg, tree_path(t, "site.toml"), tree_path(t, "shared/proj"),
				     err, sizeof(err)),
			 -ELOOP);
	assert_non_null(strstr(err, "symbolic link"));

	assert_int_equal(unlink(tree_path(t, "shared/nunatak.toml")), 0);
	assert_int_equal(mkdir(tree_path(t, "shared/nunatak.toml"), 0755), 0);
	assert_int_equal(config_load(&cfg, tree_path(t, "site.toml"), tree_path(t, "shared/proj"),
				     err, sizeof(err)),
			 -EISDIR);
	assert_non_null(strstr(err, "not a regular file"));

	assert_int_equal(rmdir(tree_path(t, "shared/nunatak.toml")), 0);
	assert_int_equal(mkfifo(tree_path(t, "site.fifo"), 0644), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(config_load(&cfg, tree_path(t, "site.fifo"), tree_path(t, "shared/proj"),
				     err, sizeof(err)),
			 -EINVAL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true(t1.tv_sec - t0.tv_sec < 2);
	assert_non_null(strstr(err, "not a regular file but a FIFO"));
	assert_null(cfg.name);
	config_release(&cfg);
}

static void test_load_file(void **state)
{
	struct tree *t = *state;
	char err[512] = "";
	struct config cfg;

	config_init(&cfg);
	assert_int_equal(config_load_file(&cfg, tree_path(t, "absent.toml"), err, sizeof(err)),
			 -ENOENT);
	tree_write(t, "one.toml", "[sampling]\nfrequency = 100000\n[tools]\n");
	assert_int_equal(config_load_file(&cfg, tree_path(t, "one.toml"), NULL, 0), 0);
	assert_int_equal(cfg.sampling_frequency, 100000);
	tree_write(t, "two.toml", "[sampling]\nfrequency = 1\n");
	assert_int_equal(config_load_file(&cfg, tree_path(t, "two.toml"), err, sizeof(err)), 0);
	assert_int_equal(cfg.sampling_frequency, 1);
	assert_string_equal(config_source(&cfg, CONFIG_SAMPLING_FREQUENCY),
			    tree_path(t, "two.toml"));
	assert_sane_config(&cfg);
	config_release(&cfg);
}

/* [tools] debug_dirs: a list, replaced whole by a later file, in the
 * effective configuration with its source */
static void test_debug_dirs(void **state)
{
	struct tree *t = *state;
	char site[PATH_MAX], project[PATH_MAX], err[512] = "";
	struct config cfg;
	json_t *json, *entry;

	tree_mkdirs(t, "proj");
	tree_write(t, "site.toml", "[tools]\ndebug_dirs = [\"/opt/dbg\", \"/srv/debug\"]\n");
	snprintf(site, sizeof(site), "%s", tree_path(t, "site.toml"));
	config_init(&cfg);
	assert_int_equal(config_load_file(&cfg, site, err, sizeof(err)), 0);
	assert_sane_config(&cfg);
	assert_int_equal(cfg.n_debug_dirs, 2);
	assert_string_equal(cfg.debug_dirs[0], "/opt/dbg");
	assert_string_equal(cfg.debug_dirs[1], "/srv/debug");
	assert_string_equal(config_source(&cfg, CONFIG_DEBUG_DIRS), site);

	tree_write(t, "proj/nunatak.toml", "tools.debug_dirs = [\"/home/me/debug\"]\n");
	snprintf(project, sizeof(project), "%s", tree_path(t, "proj/nunatak.toml"));
	config_release(&cfg);
	assert_int_equal(config_load(&cfg, site, tree_path(t, "proj"), err, sizeof(err)), 0);
	assert_sane_config(&cfg);
	assert_int_equal(cfg.n_debug_dirs, 1);
	assert_string_equal(cfg.debug_dirs[0], "/home/me/debug");
	json = config_effective_json(&cfg);
	assert_non_null(json);
	entry = json_object_get(json, "tools.debug_dirs");
	assert_int_equal(json_array_size(json_object_get(entry, "value")), 1);
	assert_string_equal(json_string_value(json_array_get(json_object_get(entry, "value"), 0)),
			    "/home/me/debug");
	assert_string_equal(json_string_value(json_object_get(entry, "source")), project);
	json_decref(json);
	config_release(&cfg);
	assert_int_equal(cfg.n_debug_dirs, 0);
	assert_null(cfg.debug_dirs);
	/* an empty list is a list: none but /usr/lib/debug */
	tree_write(t, "proj/nunatak.toml", "[tools]\ndebug_dirs = []\n");
	assert_int_equal(config_load(&cfg, site, tree_path(t, "proj"), err, sizeof(err)), 0);
	assert_int_equal(cfg.n_debug_dirs, 0);
	assert_string_equal(config_source(&cfg, CONFIG_DEBUG_DIRS), project);
	config_release(&cfg);
}

static void test_setters(void **state)
{
	struct config cfg;

	(void)state;
	config_init(&cfg);
	assert_int_equal(config_set_name(&cfg, NULL), -EINVAL);
	assert_int_equal(config_set_name(&cfg, ""), -EINVAL);
	assert_int_equal(config_set_runs_dir(&cfg, ""), -EINVAL);
	assert_int_equal(config_set_llvm_symbolizer(&cfg, NULL), -EINVAL);
	assert_int_equal(config_set_mpi_budget(&cfg, 0), -ERANGE);
	assert_int_equal(config_set_mpi_budget(&cfg, 100), -ERANGE);
	assert_true(cfg.mpi_budget_pct == CONFIG_DEFAULT_MPI_BUDGET_PCT);
	assert_int_equal(config_set_sampling_frequency(&cfg, 0), -ERANGE);
	assert_int_equal(config_set_sampling_frequency(&cfg, 100001), -ERANGE);
	assert_int_equal(cfg.sampling_frequency, 997);
	assert_null(cfg.name);
	assert_string_equal(config_source(&cfg, CONFIG_NAME), "default");

	assert_int_equal(config_set_name(&cfg, "first"), 0);
	assert_int_equal(config_set_name(&cfg, "second"), 0);
	assert_int_equal(config_set_llvm_symbolizer(&cfg, "/usr/bin/llvm-symbolizer-14"), 0);
	assert_int_equal(config_set_sampling_frequency(&cfg, 1), 0);
	assert_int_equal(config_set_sampling_frequency(&cfg, 100000), 0);
	assert_string_equal(cfg.name, "second");
	assert_string_equal(config_source(&cfg, CONFIG_NAME), "command line");
	assert_string_equal(config_source(&cfg, CONFIG_LLVM_SYMBOLIZER), "command line");
	assert_int_equal(cfg.sampling_frequency, 100000);
	assert_sane_config(&cfg);
	config_release(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test_setup_teardown(test_cascade, setup_tree, teardown_tree),
	    cmocka_unit_test_setup_teardown(test_missing_site_and_nearest_project_wins, setup_tree,
					    teardown_tree),
	    cmocka_unit_test_setup_teardown(test_relative_runs_dir_kept_as_written, setup_tree,
					    teardown_tree),
	    cmocka_unit_test_setup_teardown(test_site_file_is_project_file, setup_tree,
					    teardown_tree),
	    cmocka_unit_test_setup_teardown(test_no_files_at_all, setup_tree, teardown_tree),
	    cmocka_unit_test_setup_teardown(test_refusals_have_positions, setup_tree,
					    teardown_tree),
	    cmocka_unit_test_setup_teardown(test_site_file_errors, setup_tree, teardown_tree),
	    cmocka_unit_test_setup_teardown(test_untrusted_project_file_refused, setup_tree,
					    teardown_tree),
	    cmocka_unit_test_setup_teardown(test_load_file, setup_tree, teardown_tree),
	    cmocka_unit_test_setup_teardown(test_debug_dirs, setup_tree, teardown_tree),
	    cmocka_unit_test(test_setters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
