/* config_internal — what config.c and config_service.c share: the keys of
 * the [service] table and the position-stamped error of every refusal.
 * Not for other modules: they use config.h. */
#ifndef NUNATAK_CONFIG_INTERNAL_H
#define NUNATAK_CONFIG_INTERNAL_H

#include <stddef.h>

#include "userspace/config/config.h"
#include "userspace/config/toml.h"

enum service_key {
	SERVICE_AGGREGATORS,
	SERVICE_LISTEN,
	SERVICE_AGENT_SOCKET,
	SERVICE_NODE,
	SERVICE_SECRET_KEY,
	SERVICE_AGGREGATOR_PUBLIC_KEY,
	SERVICE_ALLOWED_AGENTS,
	SERVICE_SPOOL_DIR,
	SERVICE_STATE_DIR,
	SERVICE_RUNS_DIR,
	SERVICE_MUNGE_SOCKET,
	SERVICE_SLURM_CONF,
	SERVICE_SPOOL_MAX_BYTES,
	SERVICE_NETNS_ONLY,
	SERVICE_KEY_COUNT,
};

/* What one file says about [service], checked, waiting to be applied. */
struct service_file {
	int present; /* the file has a [service] table or a service.* key */
	const struct toml_value *value[SERVICE_KEY_COUNT];
};

/* "file:line:column: message" into @err; returns @ret. */
__attribute__((format(printf, 7, 8))) int config_error_at(char *err, size_t errlen,
							 const char *file, unsigned line,
							 unsigned col, int ret, const char *fmt,
							 ...);

/* 1 when @entry is not "service" or under it (not ours); 0 when checked
 * and kept in @sf; -EINVAL with the position in @err (a wrong type, value
 * or unknown key; any service entry when !@allowed: a project file). */
int service_check_entry(const struct toml_entry *entry, const char *file, int allowed,
			struct service_file *sf, char *err, size_t errlen);
/* The checks between keys of one file, after all its entries. 0 or -EINVAL. */
int service_check_file(const struct service_file *sf, const char *file, char *err,
		       size_t errlen);
/* Sets what @sf holds over @svc. 0 or -ENOMEM. */
int service_apply(struct service_config *svc, const struct service_file *sf);

/* [tools] debug_dirs (config_tools.c): the check of one entry (0 or
 * -EINVAL with the position in @err), setting it over @cfg (0 or -ENOMEM;
 * the list it replaces is freed), freeing a list, the list as JSON (NULL
 * on ENOMEM). */
int tools_check_debug_dirs(const struct toml_entry *entry, const char *file, char *err,
			   size_t errlen);
int tools_set_debug_dirs(struct config *cfg, const struct toml_value *array);
void tools_free_debug_dirs(char **dirs, size_t n);
json_t *tools_debug_dirs_json(const struct config *cfg);

/* [source_map] and [source] embed (config_source.c): the check of an
 * entry under [source_map] (1: not ours; 0: fine; -EINVAL with the
 * position in @err), setting the whole table, or embed, over @cfg with
 * where it came from (0 or -ENOMEM), freeing, the list as JSON (NULL on
 * ENOMEM). */
int source_map_check_entry(const struct toml_entry *entry, const char *file, char *err,
			   size_t errlen);
int source_map_set(struct config *cfg, const struct toml_value *table, const char *source);
int source_embed_set(struct config *cfg, int embed, const char *source);
void source_map_free(struct config *cfg);
json_t *source_map_json(const struct config *cfg);

/* [ceilings] (config_ceilings.c): what one file says, checked, waiting to
 * be applied */
struct ceilings_file {
	int present;
	unsigned line, col; /* of the table, for the checks between keys */
	const struct toml_value *backend, *peak_flops, *peak_memory_bandwidth, *reason;
};

/* 1 when @entry is not "ceilings" or under it; 0 when checked and kept in
 * @cf; -EINVAL with the position in @err. */
int ceilings_check_entry(const struct toml_entry *entry, const char *file,
			 struct ceilings_file *cf, char *err, size_t errlen);
/* The checks between keys (reason, a peak): 0 or -EINVAL. */
int ceilings_check_file(const struct ceilings_file *cf, const char *file, char *err,
			size_t errlen);
/* Replaces @c by what @cf holds (nothing when absent): 0 or -ENOMEM. */
int ceilings_apply(struct ceilings_config *c, const struct ceilings_file *cf, const char *file);
void ceilings_init(struct ceilings_config *c);
void ceilings_release(struct ceilings_config *c);

void service_init(struct service_config *svc);
void service_release(struct service_config *svc);

#endif
