/* config_ceilings — the [ceilings] table (config.h, struct ceilings_config):
 * the Ceilings `nunatak fit` fitted, pasted into a configuration file.
 * Checked strictly (known keys, their types, peaks > 0 and finite, a
 * reason, at least one peak), applied whole. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/config/config.h"
#include "userspace/config/config_internal.h"
#include "userspace/machine/machine.h"

#define CEILINGS_PREFIX "ceilings."

void ceilings_init(struct ceilings_config *c)
{
	memset(c, 0, sizeof(*c));
	c->peak_flops = c->peak_memory_bandwidth = NAN;
}

void ceilings_release(struct ceilings_config *c)
{
	free(c->backend);
	free(c->reason);
	free(c->source);
	ceilings_init(c);
}

/* a peak: a float or an integer, > 0 and finite; 0 or -EINVAL */
static int peak_of(const struct toml_value *v, double *out)
{
	long long ll;

	if (!toml_value_float(v, out))
		return *out > 0 && isfinite(*out) ? 0 : -EINVAL;
	if (!toml_value_int(v, &ll)) {
		*out = (double)ll;
		return ll > 0 ? 0 : -EINVAL;
	}
	return -EINVAL;
}

/* a key of the table into its slot of @cf: 0 or -EINVAL */
static int check_key(const struct toml_entry *entry, const char *file, struct ceilings_file *cf,
		     char *err, size_t errlen)
{
	const char *key = entry->path + strlen(CEILINGS_PREFIX), *s;
	unsigned line, col;
	double peak;

	toml_value_position(entry->value, &line, &col);
	if (!strcmp(key, "backend") || !strcmp(key, "reason")) {
		if (toml_value_string(entry->value, &s))
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "wrong type for '%s': expected a string, got %s",
					       entry->path, toml_type_name(entry->type));
		if (!s[0] || strchr(s, '\n'))
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "empty value for '%s'", entry->path);
		*(key[0] == 'b' ? &cf->backend : &cf->reason) = entry->value;
		return 0;
	}
	if (!strcmp(key, "peak_flops") || !strcmp(key, "peak_memory_bandwidth")) {
		if (peak_of(entry->value, &peak))
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "bad value for '%s': give a number > 0 (%s), as "
					       "`nunatak fit` prints it",
					       entry->path, key[5] == 'f' ? "FLOP/s" : "B/s");
		*(key[5] == 'f' ? &cf->peak_flops : &cf->peak_memory_bandwidth) = entry->value;
		return 0;
	}
	return config_error_at(err, errlen, file, entry->key_line, entry->key_col, -EINVAL,
			       "unknown key '%s' (ceilings takes backend, peak_flops, "
			       "peak_memory_bandwidth, reason)",
			       entry->path);
}

int ceilings_check_entry(const struct toml_entry *entry, const char *file,
			 struct ceilings_file *cf, char *err, size_t errlen)
{
	unsigned line, col;

	if (strcmp(entry->path, "ceilings") &&
	    strncmp(entry->path, CEILINGS_PREFIX, strlen(CEILINGS_PREFIX)))
		return 1;
	cf->present = 1;
	if (strcmp(entry->path, "ceilings"))
		return check_key(entry, file, cf, err, errlen);
	toml_value_position(entry->value, &line, &col);
	if (entry->type != TOML_TABLE)
		return config_error_at(err, errlen, file, line, col, -EINVAL,
				       "wrong type for 'ceilings': expected a table, got %s",
				       toml_type_name(entry->type));
	cf->line = line;
	cf->col = col;
	return 0;
}

int ceilings_check_file(const struct ceilings_file *cf, const char *file, char *err,
			size_t errlen)
{
	if (!cf->present)
		return 0;
	if (!cf->reason)
		return config_error_at(err, errlen, file, cf->line, cf->col, -EINVAL,
				       "'ceilings' needs a reason (where the values come from: "
				       "`nunatak fit` writes one)");
	if (!cf->peak_flops && !cf->peak_memory_bandwidth)
		return config_error_at(err, errlen, file, cf->line, cf->col, -EINVAL,
				       "'ceilings' gives no peak: give peak_flops and/or "
				       "peak_memory_bandwidth");
	return 0;
}

int ceilings_apply(struct ceilings_config *c, const struct ceilings_file *cf, const char *file)
{
	struct ceilings_config next;
	const char *s;

	if (!cf->present)
		return 0;
	ceilings_init(&next);
	next.present = 1;
	if (cf->backend && !toml_value_string(cf->backend, &s) && !(next.backend = strdup(s)))
		goto nomem;
	toml_value_string(cf->reason, &s);
	next.reason = strdup(s);
	next.source = strdup(file);
	if (!next.reason || !next.source)
		goto nomem;
	if (cf->peak_flops)
		peak_of(cf->peak_flops, &next.peak_flops);
	if (cf->peak_memory_bandwidth)
		peak_of(cf->peak_memory_bandwidth, &next.peak_memory_bandwidth);
	ceilings_release(c);
	*c = next;
	return 0;
nomem:
	ceilings_release(&next);
	return -ENOMEM;
}

int config_use_ceilings(const struct config *cfg)
{
	const struct ceilings_config *c = &cfg->ceilings;

	return machine_set_fitted_ceilings(c->backend, c->peak_flops, c->peak_memory_bandwidth,
					   c->present ? c->reason : NULL, c->source);
}
