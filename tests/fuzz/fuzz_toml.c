/* fuzz_toml — the TOML subset parser (userspace/config/toml.h) on arbitrary
 * bytes: a document that parses is walked completely (every key through
 * toml_doc_foreach, every value through its typed getter, every array
 * element, found again by path); one that does not must say where. A
 * document that parses is then applied as a configuration file
 * (config_load_file, from a file on tmpfs): what nunatak.toml goes
 * through, keys and values checked. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tests/fuzz/fuzz_helpers.h"
#include "userspace/config/config.h"
#include "userspace/config/toml.h"

static void walk_value(const struct toml_value *v, int depth)
{
	unsigned line, col;
	const char *s;
	long long i;
	double f;
	bool b;
	size_t k;

	FUZZ_CHECK(v);
	toml_value_position(v, &line, &col);
	FUZZ_CHECK(line >= 1 && col >= 1);
	FUZZ_CHECK(toml_type_name(toml_value_type(v)));
	switch (toml_value_type(v)) {
	case TOML_STRING:
		FUZZ_CHECK(toml_value_string(v, &s) == 0 && s);
		(void)strlen(s);
		FUZZ_CHECK(toml_value_int(v, &i) == -EINVAL);
		break;
	case TOML_INT:
		FUZZ_CHECK(toml_value_int(v, &i) == 0);
		FUZZ_CHECK(toml_value_float(v, &f) == -EINVAL);
		break;
	case TOML_FLOAT:
		FUZZ_CHECK(toml_value_float(v, &f) == 0);
		break;
	case TOML_BOOL:
		FUZZ_CHECK(toml_value_bool(v, &b) == 0);
		break;
	case TOML_ARRAY:
		FUZZ_CHECK(depth < 100000);
		for (k = 0; k < toml_array_len(v); k++)
			walk_value(toml_array_at(v, k), depth + 1);
		FUZZ_CHECK(toml_array_at(v, toml_array_len(v)) == NULL);
		break;
	case TOML_TABLE:
		FUZZ_CHECK(toml_array_len(v) == 0);
		break;
	}
}

static int visit(const struct toml_entry *e, void *ctx)
{
	const struct toml_doc *doc = ctx;
	const struct toml_value *found;

	FUZZ_CHECK(e->path && e->path[0]);
	FUZZ_CHECK(e->key_line >= 1 && e->key_col >= 1);
	FUZZ_CHECK(toml_value_type(e->value) == e->type);
	if (e->type != TOML_TABLE) { /* a value never starts before its key */
		unsigned line, col;

		toml_value_position(e->value, &line, &col);
		FUZZ_CHECK(line > e->key_line || (line == e->key_line && col >= e->key_col));
	}
	walk_value(e->value, 0);
	/* a path of bare keys finds its own value again */
	found = toml_doc_find(doc, e->path);
	if (e->path[strcspn(e->path, "\"'")] == '\0')
		FUZZ_CHECK(found == e->value);
	return 0;
}

/* an error names the file and says where, or what was refused */
static void load_as_config(const uint8_t *data, size_t size)
{
	static char path[128];
	struct config cfg;
	char err[512];
	int rc;

	if (!path[0])
		snprintf(path, sizeof(path), "%s/nunatak.toml", fuzz_scratch_dir());
	fuzz_write_file(path, data, size);
	config_init(&cfg);
	err[0] = '\0';
	rc = config_load_file(&cfg, path, err, sizeof(err));
	FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM);
	if (rc == -EINVAL)
		FUZZ_CHECK(strstr(err, path) != NULL);
	if (!rc)
		FUZZ_CHECK(cfg.runs_dir && cfg.llvm_symbolizer && cfg.sampling_frequency > 0);
	config_release(&cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct toml_doc *doc;
	char err[256];

	err[0] = '\0';
	doc = toml_doc__parse((const char *)data, size, "fuzz.toml", err, sizeof(err));
	if (!doc) {
		FUZZ_CHECK(errno == EINVAL || errno == ENOMEM);
		if (errno == EINVAL)
			FUZZ_CHECK(strncmp(err, "fuzz.toml:", 10) == 0);
		return 0;
	}
	FUZZ_CHECK(toml_doc_foreach(doc, visit, doc) == 0);
	toml_doc__free(doc);
	load_as_config(data, size);
	return 0;
}
