/* config_tools — the array key of [tools]: debug_dirs, the directories
 * llvm-symbolizer searches for split debug information (.build-id/xx/
 * rest.debug, as /usr/lib/debug holds them). Checked strictly (an array
 * of absolute paths, each without a newline, at most
 * CONFIG_MAX_DEBUG_DIRS), applied whole (a later file's list replaces an
 * earlier one's, as every key does). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/config/config.h"
#include "userspace/config/config_internal.h"
#include "userspace/log/json_text.h"

int tools_check_debug_dirs(const struct toml_entry *entry, const char *file, char *err,
			   size_t errlen)
{
	size_t i, n = toml_array_len(entry->value);
	unsigned line, col;
	const char *s;

	toml_value_position(entry->value, &line, &col);
	if (n > CONFIG_MAX_DEBUG_DIRS)
		return config_error_at(err, errlen, file, line, col, -EINVAL,
				       "'%s' lists %zu directories: give at most %d", entry->path,
				       n, CONFIG_MAX_DEBUG_DIRS);
	for (i = 0; i < n; i++) {
		const struct toml_value *v = toml_array_at(entry->value, i);

		toml_value_position(v, &line, &col);
		if (toml_value_string(v, &s))
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "wrong type in '%s': expected %s, got %s",
					       entry->path, toml_type_name(TOML_STRING),
					       toml_type_name(toml_value_type(v)));
		if (s[0] != '/' || strchr(s, '\n'))
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "bad directory '%s' in '%s': write an absolute path",
					       s, entry->path);
	}
	return 0;
}

void tools_free_debug_dirs(char **dirs, size_t n)
{
	size_t i;

	for (i = 0; dirs && i < n; i++)
		free(dirs[i]);
	free(dirs);
}

int tools_set_debug_dirs(struct config *cfg, const struct toml_value *array)
{
	size_t i, n = toml_array_len(array);
	char **dirs = calloc(n + 1, sizeof(*dirs));
	const char *s;

	if (!dirs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		toml_value_string(toml_array_at(array, i), &s);
		dirs[i] = strdup(s);
		if (!dirs[i]) {
			tools_free_debug_dirs(dirs, i);
			return -ENOMEM;
		}
	}
	tools_free_debug_dirs(cfg->debug_dirs, cfg->n_debug_dirs);
	cfg->debug_dirs = dirs;
	cfg->n_debug_dirs = n;
	return 0;
}

json_t *tools_debug_dirs_json(const struct config *cfg)
{
	json_t *list = json_array();
	size_t i;

	for (i = 0; list && i < cfg->n_debug_dirs; i++) {
		if (json_array_append_new(list, json_text(cfg->debug_dirs[i]))) {
			json_decref(list);
			return NULL;
		}
	}
	return list;
}
