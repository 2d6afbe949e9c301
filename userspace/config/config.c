/* config — see config.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/config/config.h"
#include "userspace/config/config_internal.h"
#include "userspace/config/toml.h"
#include "userspace/config/trust.h"
#include "userspace/log/json_text.h"
#include "userspace/log/log.h"

/* A configuration file is a few lines; anything this big is a mistake. */
#define CONFIG_MAX_FILE_BYTES (1 << 20)

static const struct {
	const char *path;
	enum toml_type type;
} config_keys[CONFIG_KEY_COUNT] = {
    [CONFIG_NAME] = {"name", TOML_STRING},
    [CONFIG_RUNS_DIR] = {"runs_dir", TOML_STRING},
    [CONFIG_SAMPLING_FREQUENCY] = {"sampling.frequency", TOML_INT},
    [CONFIG_LLVM_SYMBOLIZER] = {"tools.llvm-symbolizer", TOML_STRING},
    [CONFIG_DEBUG_DIRS] = {"tools.debug_dirs", TOML_ARRAY},
    [CONFIG_SOURCE_EMBED] = {"source.embed", TOML_BOOL},
    [CONFIG_SOURCE_MAP] = {"source_map", TOML_TABLE},
    [CONFIG_MPI_BUDGET] = {"mpi.budget", TOML_FLOAT}, /* an integer too */
};

static const char *const config_tables[] = {"sampling", "tools", "source", "mpi"};

/* One file, parsed and checked, waiting to be applied: the cascade applies
 * nothing until every file of it is known to be valid. */
struct config_file {
	char *path;
	struct toml_doc *doc;
	const struct toml_value *value[CONFIG_KEY_COUNT];
	int allow_service; /* the site file or a daemon's --config file */
	struct service_file service;
	struct ceilings_file ceilings;
};

static void config_file_release(struct config_file *file)
{
	free(file->path);
	toml_doc__free(file->doc);
	memset(file, 0, sizeof(*file));
}

void config_init(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->runs_dir = (char *)CONFIG_DEFAULT_RUNS_DIR;
	cfg->sampling_frequency = CONFIG_DEFAULT_SAMPLING_FREQUENCY;
	cfg->llvm_symbolizer = (char *)CONFIG_DEFAULT_LLVM_SYMBOLIZER;
	cfg->source_embed = 1;
	cfg->mpi_budget_pct = CONFIG_DEFAULT_MPI_BUDGET_PCT;
	service_init(&cfg->service);
	ceilings_init(&cfg->ceilings);
}

static char **string_field(struct config *cfg, enum config_key key)
{
	switch (key) {
	case CONFIG_NAME:
		return &cfg->name;
	case CONFIG_RUNS_DIR:
		return &cfg->runs_dir;
	case CONFIG_LLVM_SYMBOLIZER:
		return &cfg->llvm_symbolizer;
	default:
		return NULL;
	}
}

static const char *string_value(const struct config *cfg, enum config_key key)
{
	switch (key) {
	case CONFIG_NAME:
		return cfg->name;
	case CONFIG_RUNS_DIR:
		return cfg->runs_dir;
	case CONFIG_LLVM_SYMBOLIZER:
		return cfg->llvm_symbolizer;
	default:
		return NULL;
	}
}

void config_release(struct config *cfg)
{
	char **field;
	int key;

	for (key = 0; key < CONFIG_KEY_COUNT; key++) {
		/* only what the cascade set is owned; defaults are static */
		field = string_field(cfg, key);
		if (field && cfg->source[key])
			free(*field);
		free(cfg->source[key]);
	}
	tools_free_debug_dirs(cfg->debug_dirs, cfg->n_debug_dirs);
	source_map_free(cfg);
	service_release(&cfg->service);
	ceilings_release(&cfg->ceilings);
	config_init(cfg);
}

const char *config_key_name(enum config_key key)
{
	if ((unsigned)key >= CONFIG_KEY_COUNT)
		return NULL;
	return config_keys[key].path;
}

const char *config_source(const struct config *cfg, enum config_key key)
{
	if ((unsigned)key >= CONFIG_KEY_COUNT || !cfg->source[key])
		return CONFIG_SOURCE_DEFAULT;
	return cfg->source[key];
}

/* Takes ownership of nothing: copies @value and @source, then replaces. */
static int set_string(struct config *cfg, enum config_key key, const char *value,
		      const char *source)
{
	char **field = string_field(cfg, key);
	char *value_copy, *source_copy;

	value_copy = strdup(value);
	source_copy = strdup(source);
	if (!value_copy || !source_copy) {
		free(value_copy);
		free(source_copy);
		return -ENOMEM;
	}
	if (cfg->source[key])
		free(*field);
	free(cfg->source[key]);
	*field = value_copy;
	cfg->source[key] = source_copy;
	return 0;
}

static int set_frequency(struct config *cfg, long frequency, const char *source)
{
	char *source_copy = strdup(source);

	if (!source_copy)
		return -ENOMEM;
	free(cfg->source[CONFIG_SAMPLING_FREQUENCY]);
	cfg->sampling_frequency = frequency;
	cfg->source[CONFIG_SAMPLING_FREQUENCY] = source_copy;
	return 0;
}

static int set_mpi_budget(struct config *cfg, double pct, const char *source)
{
	char *source_copy = strdup(source);

	if (!source_copy)
		return -ENOMEM;
	free(cfg->source[CONFIG_MPI_BUDGET]);
	cfg->mpi_budget_pct = pct;
	cfg->source[CONFIG_MPI_BUDGET] = source_copy;
	return 0;
}

/* a number of entry's (an integer or a float): 0 and *out, -EINVAL */
static int number_value(const struct toml_value *v, double *out)
{
	long long ll;

	if (!toml_value_float(v, out))
		return 0;
	if (toml_value_int(v, &ll))
		return -EINVAL;
	*out = (double)ll;
	return 0;
}

static int set_debug_dirs(struct config *cfg, const struct toml_value *array, const char *source)
{
	char *source_copy = strdup(source);

	if (!source_copy || tools_set_debug_dirs(cfg, array)) {
		free(source_copy);
		return -ENOMEM;
	}
	free(cfg->source[CONFIG_DEBUG_DIRS]);
	cfg->source[CONFIG_DEBUG_DIRS] = source_copy;
	return 0;
}

int config_set_name(struct config *cfg, const char *name)
{
	if (!name || !*name)
		return -EINVAL;
	return set_string(cfg, CONFIG_NAME, name, CONFIG_SOURCE_COMMAND_LINE);
}

int config_set_runs_dir(struct config *cfg, const char *runs_dir)
{
	if (!runs_dir || !*runs_dir)
		return -EINVAL;
	return set_string(cfg, CONFIG_RUNS_DIR, runs_dir, CONFIG_SOURCE_COMMAND_LINE);
}

int config_set_llvm_symbolizer(struct config *cfg, const char *path)
{
	if (!path || !*path)
		return -EINVAL;
	return set_string(cfg, CONFIG_LLVM_SYMBOLIZER, path, CONFIG_SOURCE_COMMAND_LINE);
}

int config_set_mpi_budget(struct config *cfg, double pct)
{
	if (!(pct > 0 && pct < 100))
		return -ERANGE;
	return set_mpi_budget(cfg, pct, CONFIG_SOURCE_COMMAND_LINE);
}

int config_set_sampling_frequency(struct config *cfg, long frequency)
{
	if (frequency < CONFIG_MIN_SAMPLING_FREQUENCY || frequency > CONFIG_MAX_SAMPLING_FREQUENCY)
		return -ERANGE;
	return set_frequency(cfg, frequency, CONFIG_SOURCE_COMMAND_LINE);
}

/* ---- files ---- */

static int read_whole_file(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
	char *buf = NULL;
	struct stat st;
	size_t done = 0;
	ssize_t n;
	int fd, ret = 0;

	/* a file that another user can write or replace is not obeyed; a
	 * FIFO or a device is refused before it is opened */
	ret = trust_open(path, &fd, err, errlen);
	if (ret)
		return ret;
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "cannot stat '%s': %s", path, strerror(-ret));
		goto cleanup;
	}
	if (st.st_size > CONFIG_MAX_FILE_BYTES) {
		ret = -EFBIG;
		snprintf(err, errlen, "file too large '%s': more than %d bytes", path,
			 CONFIG_MAX_FILE_BYTES);
		goto cleanup;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		ret = -ENOMEM;
		goto cleanup;
	}
	while (done < (size_t)st.st_size) {
		n = read(fd, buf + done, (size_t)st.st_size - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			snprintf(err, errlen, "cannot read '%s': %s", path, strerror(-ret));
			goto cleanup;
		}
		if (n == 0)
			break; /* shrank under us: parse what is there */
		done += (size_t)n;
	}
	*out = buf;
	*len = done;
	buf = NULL;
cleanup:
	free(buf);
	close(fd);
	return ret;
}

struct check_ctx {
	struct config_file *file;
	char *err;
	size_t errlen;
};

int config_error_at(char *err, size_t errlen, const char *file, unsigned line, unsigned col,
		    int ret, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(err, errlen, "%s:%u:%u: ", file, line, col);
	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - n, fmt, ap);
		va_end(ap);
	}
	return ret;
}

#define check_error(ctx, line, col, ret, ...)                                                     \
	config_error_at((ctx)->err, (ctx)->errlen, (ctx)->file->path, line, col, ret, __VA_ARGS__)

static int check_entry(const struct toml_entry *entry, void *data)
{
	struct check_ctx *ctx = data;
	enum toml_type want;
	unsigned line, col;
	const char *s;
	long long ll;
	size_t i;
	int key, ret;

	ret = service_check_entry(entry, ctx->file->path, ctx->file->allow_service,
				  &ctx->file->service, ctx->err, ctx->errlen);
	if (ret != 1)
		return ret;
	ret = ceilings_check_entry(entry, ctx->file->path, &ctx->file->ceilings, ctx->err,
				   ctx->errlen);
	if (ret != 1)
		return ret;
	ret = source_map_check_entry(entry, ctx->file->path, ctx->err, ctx->errlen);
	if (!ret && entry->type == TOML_TABLE && !strcmp(entry->path, "source_map"))
		ctx->file->value[CONFIG_SOURCE_MAP] = entry->value;
	if (ret != 1)
		return ret;
	toml_value_position(entry->value, &line, &col);
	for (i = 0; i < sizeof(config_tables) / sizeof(config_tables[0]); i++) {
		if (strcmp(entry->path, config_tables[i]))
			continue;
		if (entry->type != TOML_TABLE)
			return check_error(ctx, line, col, -EINVAL,
					   "wrong type for '%s': expected a table, got %s",
					   entry->path, toml_type_name(entry->type));
		return 0;
	}
	for (key = 0; key < CONFIG_KEY_COUNT; key++)
		if (!strcmp(entry->path, config_keys[key].path))
			break;
	if (key == CONFIG_KEY_COUNT)
		return check_error(ctx, entry->key_line, entry->key_col, -EINVAL,
				   "unknown key '%s'", entry->path);

	want = config_keys[key].type;
	if (want == TOML_FLOAT && entry->type == TOML_INT)
		want = TOML_INT; /* a number */
	if (entry->type != want)
		return check_error(ctx, line, col, -EINVAL,
				   "wrong type for '%s': expected %s, got %s", entry->path,
				   toml_type_name(want), toml_type_name(entry->type));
	if (want == TOML_STRING) {
		toml_value_string(entry->value, &s);
		if (!*s)
			return check_error(ctx, line, col, -EINVAL, "empty value for '%s'",
					   entry->path);
	}
	if (key == CONFIG_DEBUG_DIRS) {
		ret = tools_check_debug_dirs(entry, ctx->file->path, ctx->err, ctx->errlen);
		if (ret)
			return ret;
	}
	if (key == CONFIG_MPI_BUDGET) {
		double pct = 0;

		number_value(entry->value, &pct);
		if (!(pct > 0 && pct < 100))
			return check_error(ctx, line, col, -EINVAL,
					   "value out of range for '%s': %g is not a percentage "
					   "more than 0 and less than 100",
					   entry->path, pct);
	}
	if (key == CONFIG_SAMPLING_FREQUENCY) {
		toml_value_int(entry->value, &ll);
		if (ll < CONFIG_MIN_SAMPLING_FREQUENCY || ll > CONFIG_MAX_SAMPLING_FREQUENCY)
			return check_error(ctx, line, col, -EINVAL,
					   "value out of range for '%s': %lld not in %d..%d",
					   entry->path, ll, CONFIG_MIN_SAMPLING_FREQUENCY,
					   CONFIG_MAX_SAMPLING_FREQUENCY);
	}
	ctx->file->value[key] = entry->value;
	return 0;
}

/* Reads, parses and checks @path into @file without touching any config;
 * a [service] table only when @allow_service. */
static int config_file_open(struct config_file *file, const char *path, int allow_service,
			    char *err, size_t errlen)
{
	struct check_ctx ctx = {.file = file, .err = err, .errlen = errlen};
	char *text = NULL;
	size_t len = 0;
	int ret;

	memset(file, 0, sizeof(*file));
	file->path = strdup(path);
	if (!file->path)
		return -ENOMEM;
	file->allow_service = allow_service;
	ret = read_whole_file(path, &text, &len, err, errlen);
	if (ret)
		goto cleanup;
	file->doc = toml_doc__parse(text, len, path, err, errlen);
	if (!file->doc) {
		ret = -errno;
		goto cleanup;
	}
	ret = toml_doc_foreach(file->doc, check_entry, &ctx);
	if (!ret)
		ret = service_check_file(&file->service, path, err, errlen);
	if (!ret)
		ret = ceilings_check_file(&file->ceilings, path, err, errlen);
cleanup:
	free(text);
	if (ret)
		config_file_release(file);
	return ret;
}

static int config_file_apply(struct config *cfg, const struct config_file *file)
{
	long long frequency;
	const char *s;
	int key, ret;

	for (key = 0; key < CONFIG_KEY_COUNT; key++) {
		if (!file->value[key])
			continue;
		if (key == CONFIG_SAMPLING_FREQUENCY) {
			toml_value_int(file->value[key], &frequency);
			ret = set_frequency(cfg, (long)frequency, file->path);
		} else if (key == CONFIG_MPI_BUDGET) {
			double pct = 0;

			number_value(file->value[key], &pct);
			ret = set_mpi_budget(cfg, pct, file->path);
		} else if (key == CONFIG_DEBUG_DIRS) {
			ret = set_debug_dirs(cfg, file->value[key], file->path);
		} else if (key == CONFIG_SOURCE_MAP) {
			ret = source_map_set(cfg, file->value[key], file->path);
		} else if (key == CONFIG_SOURCE_EMBED) {
			bool embed = true;

			toml_value_bool(file->value[key], &embed);
			ret = source_embed_set(cfg, embed, file->path);
		} else {
			toml_value_string(file->value[key], &s);
			ret = set_string(cfg, key, s, file->path);
		}
		if (ret)
			return ret;
	}
	ret = ceilings_apply(&cfg->ceilings, &file->ceilings, file->path);
	return ret ? ret : service_apply(&cfg->service, &file->service);
}

int config_load_file(struct config *cfg, const char *path, char *err, size_t errlen)
{
	struct config_file file;
	char no_err[1];
	int ret;

	if (!err || !errlen) {
		err = no_err;
		errlen = sizeof(no_err);
	}
	ret = config_file_open(&file, path, 1, err, errlen);
	if (ret)
		return ret;
	ret = config_file_apply(cfg, &file);
	config_file_release(&file);
	return ret;
}

int config_load_daemon(struct config *cfg, const char *path, char *err, size_t errlen)
{
	char no_err[1];
	int ret;

	if (!err || !errlen) {
		err = no_err;
		errlen = sizeof(no_err);
	}
	ret = config_load_file(cfg, path ? path : CONFIG_SITE_PATH, err, errlen);
	if (ret == -ENOENT && !path) {
		pr_debug("no site configuration '%s': the defaults", CONFIG_SITE_PATH);
		return 0;
	}
	if (ret == -ENOENT)
		snprintf(err, errlen,
			 "cannot read '%s' (given with --config): no such file; give an existing "
			 "file, or no --config for %s",
			 path, CONFIG_SITE_PATH);
	return ret;
}

/* The first nunatak.toml (of any type) from @start_dir up to "/": 0 and a path in *@out
 * (to free) or NULL if there is none; -errno if @start_dir cannot be
 * resolved. */
static int find_project_file(const char *start_dir, char **out, char *err, size_t errlen)
{
	char *dir, *candidate, *slash;
	struct stat st;
	int ret = 0;

	*out = NULL;
	dir = realpath(start_dir ? start_dir : ".", NULL);
	if (!dir) {
		ret = -errno;
		snprintf(err, errlen, "cannot resolve '%s': %s", start_dir ? start_dir : ".",
			 strerror(-ret));
		return ret;
	}
	for (;;) {
		if (asprintf(&candidate, "%s/%s", strcmp(dir, "/") ? dir : "",
			     CONFIG_PROJECT_FILENAME) < 0) {
			ret = -ENOMEM;
			break;
		}
		/* whatever bears the name stops the search, to be trusted or
		 * refused: a directory or a link there is not skipped silently */
		if (!lstat(candidate, &st)) {
			*out = candidate;
			break;
		}
		free(candidate);
		if (!strcmp(dir, "/"))
			break;
		slash = strrchr(dir, '/');
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	free(dir);
	return ret;
}

static bool same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (lstat(a, &sa) || lstat(b, &sb))
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* A project file nunatak refuses applies to every directory below it:
 * say how to get from under it, which no option does. */
static void project_refusal_remedy(const char *project_path, char *err, size_t errlen)
{
	const char *slash = strrchr(project_path, '/');
	size_t len = strlen(err);
	int dir_len = slash ? (int)(slash - project_path) : 0;

	snprintf(err + len, errlen - len,
		 "; it applies to every directory under '%.*s': run nunatak from outside it",
		 dir_len ? dir_len : 1, dir_len ? project_path : "/");
}

int config_load(struct config *cfg, const char *site_path, const char *start_dir, char *err,
		size_t errlen)
{
	struct config_file site = {0}, project = {0};
	bool have_site = false, have_project = false;
	char *project_path = NULL, no_err[1];
	int ret;

	if (!err || !errlen) {
		err = no_err;
		errlen = sizeof(no_err);
	}
	if (!site_path)
		site_path = CONFIG_SITE_PATH;
	ret = config_file_open(&site, site_path, 1, err, errlen);
	if (ret && ret != -ENOENT)
		goto cleanup;
	have_site = !ret;
	if (!have_site)
		pr_debug("no site configuration '%s'", site_path);

	ret = find_project_file(start_dir, &project_path, err, errlen);
	if (ret)
		goto cleanup;
	if (project_path && !(have_site && same_file(site_path, project_path))) {
		ret = config_file_open(&project, project_path, 0, err, errlen);
		if (ret == -EPERM || ret == -ELOOP || ret == -EISDIR || ret == -EINVAL)
			project_refusal_remedy(project_path, err, errlen);
		if (ret)
			goto cleanup;
		have_project = true;
	}

	if (have_site)
		ret = config_file_apply(cfg, &site);
	if (!ret && have_project)
		ret = config_file_apply(cfg, &project);
cleanup:
	if (ret == -ENOMEM)
		snprintf(err, errlen, "cannot load configuration: %s", strerror(ENOMEM));
	free(project_path);
	config_file_release(&project);
	config_file_release(&site);
	return ret;
}

/* ---- provenance ---- */

json_t *config_effective_json(const struct config *cfg)
{
	json_t *root, *entry;
	int key;

	root = json_object();
	if (!root)
		goto nomem;
	for (key = 0; key < CONFIG_KEY_COUNT; key++) {
		if (key == CONFIG_SAMPLING_FREQUENCY)
			entry = json_pack("{s:I,s:s}", "value", (json_int_t)cfg->sampling_frequency,
					  "source", config_source(cfg, key));
		else if (key == CONFIG_MPI_BUDGET)
			entry = json_pack("{s:f,s:s}", "value", cfg->mpi_budget_pct, "source",
					  config_source(cfg, key));
		else if (key == CONFIG_DEBUG_DIRS)
			entry = json_pack("{s:o,s:s}", "value", tools_debug_dirs_json(cfg), "source",
					  config_source(cfg, key));
		else if (key == CONFIG_SOURCE_MAP)
			entry = json_pack("{s:o,s:s}", "value", source_map_json(cfg), "source",
					  config_source(cfg, key));
		else if (key == CONFIG_SOURCE_EMBED)
			entry = json_pack("{s:b,s:s}", "value", cfg->source_embed, "source",
					  config_source(cfg, key));
		else
			/* a value is text from a file or an option (--name): json_text */
			entry = json_pack("{s:o,s:s}", "value", json_text(string_value(cfg, key)),
					  "source", config_source(cfg, key));
		/* json_object_set_new() releases entry even when it fails */
		if (!entry || json_object_set_new(root, config_keys[key].path, entry))
			goto nomem;
	}
	return root;
nomem:
	json_decref(root);
	errno = ENOMEM;
	return NULL;
}
