/* config_source — the [source_map] table: OLD = NEW path prefixes for
 * finding the source files of binaries built elsewhere. Checked strictly
 * (string values, keys and values not empty nor holding a newline, at
 * most CONFIG_MAX_SOURCE_MAP), applied whole (a later file's table
 * replaces an earlier one's, as every key does). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/config/config.h"
#include "userspace/config/config_internal.h"
#include "userspace/log/json_text.h"

#define SOURCE_MAP_PREFIX "source_map."

int source_map_check_entry(const struct toml_entry *entry, const char *file, char *err,
			   size_t errlen)
{
	unsigned line, col;
	const char *s;

	if (strcmp(entry->path, "source_map") &&
	    strncmp(entry->path, SOURCE_MAP_PREFIX, strlen(SOURCE_MAP_PREFIX)))
		return 1;
	toml_value_position(entry->value, &line, &col);
	if (!strcmp(entry->path, "source_map")) {
		if (entry->type != TOML_TABLE)
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "wrong type for 'source_map': expected a table, got "
					       "%s",
					       toml_type_name(entry->type));
		if (toml_table_len(entry->value) > CONFIG_MAX_SOURCE_MAP)
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "'source_map' has %zu entries: give at most %d",
					       toml_table_len(entry->value), CONFIG_MAX_SOURCE_MAP);
		return 0;
	}
	if (toml_value_string(entry->value, &s))
		return config_error_at(err, errlen, file, line, col, -EINVAL,
				       "wrong type for '%s': expected a string (the directory "
				       "that replaces the prefix), got %s",
				       entry->path, toml_type_name(entry->type));
	if (!s[0] || strchr(s, '\n') || !strcmp(entry->path, SOURCE_MAP_PREFIX "\"\""))
		return config_error_at(err, errlen, file, line, col, -EINVAL,
				       "bad entry '%s': the prefix and its replacement are paths, "
				       "not empty",
				       entry->path);
	return 0;
}

void source_map_free(struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->n_source_map; i++) {
		free(cfg->source_map_old[i]);
		free(cfg->source_map_new[i]);
	}
	free(cfg->source_map_old);
	free(cfg->source_map_new);
	cfg->source_map_old = cfg->source_map_new = NULL;
	cfg->n_source_map = 0;
}

/* the source of key becomes source (copied): 0 or -ENOMEM */
static int set_source(struct config *cfg, enum config_key key, const char *source)
{
	char *source_copy = strdup(source);

	if (!source_copy)
		return -ENOMEM;
	free(cfg->source[key]);
	cfg->source[key] = source_copy;
	return 0;
}

int source_embed_set(struct config *cfg, int embed, const char *source)
{
	int ret = set_source(cfg, CONFIG_SOURCE_EMBED, source);

	if (!ret)
		cfg->source_embed = !!embed;
	return ret;
}

int config_set_source_embed(struct config *cfg, int embed)
{
	return source_embed_set(cfg, embed, CONFIG_SOURCE_COMMAND_LINE);
}

int source_map_set(struct config *cfg, const struct toml_value *table, const char *source)
{
	size_t i, n = toml_table_len(table);
	char **old = calloc(n + 1, sizeof(*old)), **new = calloc(n + 1, sizeof(*new));
	const char *key, *s;

	if (set_source(cfg, CONFIG_SOURCE_MAP, source)) {
		free(old);
		free(new);
		return -ENOMEM;
	}
	for (i = 0; old && new && i < n; i++) {
		toml_value_string(toml_table_at(table, i, &key), &s);
		old[i] = strdup(key);
		new[i] = strdup(s);
		if (!old[i] || !new[i])
			break;
	}
	if (!old || !new || i < n) {
		for (i = 0; i < n && old && new; i++) {
			free(old[i]);
			free(new[i]);
		}
		free(old);
		free(new);
		return -ENOMEM;
	}
	source_map_free(cfg);
	cfg->source_map_old = old;
	cfg->source_map_new = new;
	cfg->n_source_map = n;
	return 0;
}

json_t *source_map_json(const struct config *cfg)
{
	json_t *list = json_array();
	size_t i;

	for (i = 0; list && i < cfg->n_source_map; i++) {
		json_t *pair = json_pack("{s:o, s:o}", "old", json_text(cfg->source_map_old[i]),
					 "new", json_text(cfg->source_map_new[i]));

		if (!pair || json_array_append_new(list, pair)) {
			json_decref(list);
			return NULL;
		}
	}
	return list;
}

int config_add_source_map(struct config *cfg, const char *const *pairs, size_t n)
{
	size_t total = n + cfg->n_source_map, i;
	char **old, **new;
	const char *eq;
	char *source;

	for (i = 0; i < n; i++) {
		eq = strchr(pairs[i], '=');
		if (!eq || eq == pairs[i] || !eq[1] || strchr(pairs[i], '\n'))
			return -EINVAL;
	}
	old = calloc(total + 1, sizeof(*old));
	new = calloc(total + 1, sizeof(*new));
	source = strdup(CONFIG_SOURCE_COMMAND_LINE);
	for (i = 0; old && new && source && i < n; i++) {
		eq = strchr(pairs[i], '=');
		old[i] = strndup(pairs[i], (size_t)(eq - pairs[i]));
		new[i] = strdup(eq + 1);
	}
	for (; old && new && source && i < total; i++) {
		old[i] = strdup(cfg->source_map_old[i - n]);
		new[i] = strdup(cfg->source_map_new[i - n]);
	}
	for (i = 0; old && new && i < total && old[i] && new[i]; i++)
		;
	if (!source || !old || !new || i < total) {
		for (i = 0; old && new && i < total; i++) {
			free(old[i]);
			free(new[i]);
		}
		free(old);
		free(new);
		free(source);
		return -ENOMEM;
	}
	source_map_free(cfg);
	cfg->source_map_old = old;
	cfg->source_map_new = new;
	cfg->n_source_map = total;
	free(cfg->source[CONFIG_SOURCE_MAP]);
	cfg->source[CONFIG_SOURCE_MAP] = source;
	return 0;
}
