/* test_config_source — the configuration of source extracts: [source]
 * embed and the [source_map] table (strict: string values, keys and
 * values not empty, at most 64), a later file's table replacing an
 * earlier one's, --source-map pairs tried first, --no-source, and what
 * the effective configuration records of them.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tests/unit/test_helpers.h"
#include "userspace/config/config.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
	(void)state;
	if (make_tmpdir(dir, sizeof(dir), "config-source"))
		return -1;
	return chmod(dir, 0755);
}

static int teardown(void **state)
{
	(void)state;
	return remove_tree(dir);
}

/* loads text as a file: 0 or -errno, the message in err */
static int load(struct config *cfg, const char *text, char *err, size_t errlen)
{
	const char *path = path_in(dir, "n.toml");

	assert_int_equal(write_file(path, text), 0);
	assert_int_equal(chmod(path, 0644), 0);
	return config_load_file(cfg, path, err, errlen);
}

static void test_source_map_table(void **state)
{
	struct config cfg;
	char err[512];
	json_t *eff, *map;

	(void)state;
	config_init(&cfg);
	assert_int_equal(cfg.source_embed, 1);
	assert_int_equal(load(&cfg,
			      "[source]\nembed = false\n[source_map]\n\"/build/a\" = \"/src/a\"\n"
			      "'/build/b.d' = \"/src/b\"\n",
			      err, sizeof(err)),
			 0);
	assert_int_equal(cfg.source_embed, 0);
	assert_int_equal(cfg.n_source_map, 2);
	assert_string_equal(cfg.source_map_old[0], "/build/a");
	assert_string_equal(cfg.source_map_new[0], "/src/a");
	assert_string_equal(cfg.source_map_old[1], "/build/b.d");
	assert_string_equal(cfg.source_map_new[1], "/src/b");

	eff = config_effective_json(&cfg);
	assert_non_null(eff);
	assert_true(json_is_false(json_object_get(json_object_get(eff, "source.embed"), "value")));
	map = json_object_get(json_object_get(eff, "source_map"), "value");
	assert_int_equal(json_array_size(map), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(map, 1), "old")),
			    "/build/b.d");
	assert_string_equal(json_string_value(json_object_get(
				json_object_get(eff, "source_map"), "source")),
			    path_in(dir, "n.toml"));
	json_decref(eff);

	/* the command line: its pairs first, then the file's */
	{
		const char *pairs[] = {"/x=/y", "/p/q=/r"};

		assert_int_equal(config_add_source_map(&cfg, pairs, 2), 0);
	}
	assert_int_equal(cfg.n_source_map, 4);
	assert_string_equal(cfg.source_map_old[0], "/x");
	assert_string_equal(cfg.source_map_new[1], "/r");
	assert_string_equal(cfg.source_map_old[2], "/build/a");
	assert_string_equal(config_source(&cfg, CONFIG_SOURCE_MAP), CONFIG_SOURCE_COMMAND_LINE);
	{
		const char *bad[] = {"/x"}, *empty[] = {"=/y"}, *none[] = {"/x="};

		assert_int_equal(config_add_source_map(&cfg, bad, 1), -EINVAL);
		assert_int_equal(config_add_source_map(&cfg, empty, 1), -EINVAL);
		assert_int_equal(config_add_source_map(&cfg, none, 1), -EINVAL);
	}
	assert_int_equal(cfg.n_source_map, 4);

	/* a later file's table replaces the whole map */
	assert_int_equal(load(&cfg, "[source_map]\n\"/c\" = \"/d\"\n", err, sizeof(err)), 0);
	assert_int_equal(cfg.n_source_map, 1);
	assert_string_equal(cfg.source_map_old[0], "/c");
	assert_int_equal(config_set_source_embed(&cfg, 1), 0);
	assert_int_equal(cfg.source_embed, 1);
	config_release(&cfg);
	assert_int_equal(cfg.n_source_map, 0);
	assert_int_equal(cfg.source_embed, 1);
}

static void test_source_map_refused(void **state)
{
	static const struct {
		const char *text, *says;
	} cases[] = {
	    {"[source_map]\n\"/a\" = 3\n", "expected a string"},
	    {"[source_map]\n\"/a\" = \"\"\n", "not empty"},
	    {"[source_map]\n\"\" = \"/b\"\n", "not empty"},
	    {"source_map = \"/a\"\n", "expected a table"},
	    {"[source]\nembed = \"no\"\n", "expected a boolean"},
	    {"[source]\nembedded = false\n", "unknown key 'source.embedded'"},
	    {"[source_map.inner]\n\"/a\" = \"/b\"\n", "expected a string"},
	};
	struct config cfg;
	char err[512], text[8192];
	size_t i;
	int k;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		config_init(&cfg);
		err[0] = '\0';
		assert_int_equal(load(&cfg, cases[i].text, err, sizeof(err)), -EINVAL);
		if (!strstr(err, cases[i].says))
			fail_msg("case %zu: '%s' does not say '%s'", i, err, cases[i].says);
		assert_int_equal(cfg.n_source_map, 0);
		config_release(&cfg);
	}
	/* at most 64 */
	snprintf(text, sizeof(text), "[source_map]\n");
	for (k = 0; k < CONFIG_MAX_SOURCE_MAP + 1; k++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "\"/o%d\" = \"/n\"\n", k);
	config_init(&cfg);
	assert_int_equal(load(&cfg, text, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "at most 64"));
	config_release(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_source_map_table),
	    cmocka_unit_test(test_source_map_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
