/* config_service — the [service] table of config.h: its keys, their
 * checks and how a file's values replace the defaults. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/config/config_internal.h"

enum service_check {
	CHECK_ENDPOINTS, /* array of "tcp://HOST:PORT" */
	CHECK_LISTEN,	 /* "tcp://ADDR:PORT", ADDR may be '*' */
	CHECK_PATH,	 /* absolute */
	CHECK_NODE,
	CHECK_BYTES,
	CHECK_BOOL,
};

static const struct {
	const char *path;
	enum toml_type type;
	enum service_check check;
} service_keys[SERVICE_KEY_COUNT] = {
    [SERVICE_AGGREGATORS] = {"service.aggregators", TOML_ARRAY, CHECK_ENDPOINTS},
    [SERVICE_LISTEN] = {"service.listen", TOML_STRING, CHECK_LISTEN},
    [SERVICE_AGENT_SOCKET] = {"service.agent_socket", TOML_STRING, CHECK_PATH},
    [SERVICE_NODE] = {"service.node", TOML_STRING, CHECK_NODE},
    [SERVICE_SECRET_KEY] = {"service.secret_key", TOML_STRING, CHECK_PATH},
    [SERVICE_AGGREGATOR_PUBLIC_KEY] = {"service.aggregator_public_key", TOML_STRING,
				       CHECK_PATH},
    [SERVICE_ALLOWED_AGENTS] = {"service.allowed_agents", TOML_STRING, CHECK_PATH},
    [SERVICE_SPOOL_DIR] = {"service.spool_dir", TOML_STRING, CHECK_PATH},
    [SERVICE_STATE_DIR] = {"service.state_dir", TOML_STRING, CHECK_PATH},
    [SERVICE_RUNS_DIR] = {"service.runs_dir", TOML_STRING, CHECK_PATH},
    [SERVICE_MUNGE_SOCKET] = {"service.munge_socket", TOML_STRING, CHECK_PATH},
    [SERVICE_SLURM_CONF] = {"service.slurm_conf", TOML_STRING, CHECK_PATH},
    [SERVICE_SPOOL_MAX_BYTES] = {"service.spool_max_bytes", TOML_INT, CHECK_BYTES},
    [SERVICE_NETNS_ONLY] = {"service.netns_only", TOML_BOOL, CHECK_BOOL},
};

static char **service_string(struct service_config *svc, enum service_key key)
{
	switch (key) {
	case SERVICE_LISTEN:
		return &svc->listen;
	case SERVICE_AGENT_SOCKET:
		return &svc->agent_socket;
	case SERVICE_NODE:
		return &svc->node;
	case SERVICE_SECRET_KEY:
		return &svc->secret_key;
	case SERVICE_AGGREGATOR_PUBLIC_KEY:
		return &svc->aggregator_public_key;
	case SERVICE_ALLOWED_AGENTS:
		return &svc->allowed_agents;
	case SERVICE_SPOOL_DIR:
		return &svc->spool_dir;
	case SERVICE_STATE_DIR:
		return &svc->state_dir;
	case SERVICE_RUNS_DIR:
		return &svc->runs_dir;
	case SERVICE_MUNGE_SOCKET:
		return &svc->munge_socket;
	case SERVICE_SLURM_CONF:
		return &svc->slurm_conf;
	default:
		return NULL;
	}
}

void service_init(struct service_config *svc)
{
	memset(svc, 0, sizeof(*svc));
	svc->agent_socket = (char *)CONFIG_DEFAULT_AGENT_SOCKET;
	svc->spool_dir = (char *)CONFIG_DEFAULT_SPOOL_DIR;
	svc->spool_max_bytes = CONFIG_DEFAULT_SPOOL_MAX_BYTES;
	svc->state_dir = (char *)CONFIG_DEFAULT_STATE_DIR;
	svc->munge_socket = (char *)CONFIG_DEFAULT_MUNGE_SOCKET;
}

static void free_aggregators(char **list, size_t n)
{
	size_t i;

	for (i = 0; list && i < n; i++)
		free(list[i]);
	free(list);
}

void service_release(struct service_config *svc)
{
	char **field;
	int key;

	for (key = 0; key < SERVICE_KEY_COUNT; key++) {
		field = service_string(svc, key);
		if (field && (svc->owned & (1u << key)))
			free(*field);
	}
	if (svc->owned & (1u << SERVICE_AGGREGATORS))
		free_aggregators(svc->aggregators, svc->n_aggregators);
	service_init(svc);
}

/* ---- checks ---- */

/* "tcp://HOST:PORT": the host not empty (@any_host: '*' too), PORT 1..65535 */
static int endpoint_valid(const char *s, int any_host)
{
	const char *host, *colon;
	char *end;
	long port;

	if (strncmp(s, "tcp://", 6))
		return 0;
	host = s + 6;
	colon = strrchr(host, ':');
	if (!colon || colon == host || strpbrk(host, " \t/"))
		return 0;
	if (!any_host && colon - host == 1 && host[0] == '*')
		return 0;
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	return !errno && *end == '\0' && end != colon + 1 && colon[1] != '+' &&
	       colon[1] != '-' && port >= 1 && port <= 65535;
}

static int node_valid(const char *s)
{
	size_t len = strlen(s);

	return len && len <= CONFIG_MAX_NODE_NAME && s[0] != '.' && s[0] != '-' &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
		   len;
}

/* The aggregators array: 1..CONFIG_MAX_AGGREGATORS distinct endpoints. */
static int check_endpoints(const struct toml_entry *entry, const char *file, char *err,
			   size_t errlen)
{
	size_t i, j, n = toml_array_len(entry->value);
	const char *s, *t;
	unsigned line, col;

	toml_value_position(entry->value, &line, &col);
	if (!n || n > CONFIG_MAX_AGGREGATORS)
		return config_error_at(err, errlen, file, line, col, -EINVAL,
				       "'%s' lists %zu Aggregators: give 1 to %d (leave the key "
				       "out for nunatakd to be its own Aggregator)",
				       entry->path, n, CONFIG_MAX_AGGREGATORS);
	for (i = 0; i < n; i++) {
		const struct toml_value *v = toml_array_at(entry->value, i);

		toml_value_position(v, &line, &col);
		if (toml_value_string(v, &s))
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "wrong type in '%s': expected %s, got %s",
					       entry->path, toml_type_name(TOML_STRING),
					       toml_type_name(toml_value_type(v)));
		if (!endpoint_valid(s, 0))
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "bad Aggregator endpoint '%s' in '%s': write "
					       "\"tcp://HOST:PORT\"",
					       s, entry->path);
		for (j = 0; j < i; j++) {
			toml_value_string(toml_array_at(entry->value, j), &t);
			if (!strcmp(s, t))
				return config_error_at(err, errlen, file, line, col, -EINVAL,
						       "'%s' listed twice in '%s'", s,
						       entry->path);
		}
	}
	return 0;
}

static int check_value(const struct toml_entry *entry, enum service_check check,
		       const char *file, char *err, size_t errlen)
{
	unsigned line, col;
	const char *s = NULL;
	long long ll;

	toml_value_position(entry->value, &line, &col);
	if (entry->type == TOML_STRING) {
		toml_value_string(entry->value, &s);
		if (!*s)
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "empty value for '%s'", entry->path);
	}
	switch (check) {
	case CHECK_ENDPOINTS:
		return check_endpoints(entry, file, err, errlen);
	case CHECK_LISTEN:
		if (!endpoint_valid(s, 1))
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "bad endpoint '%s' for '%s': write \"tcp://ADDR:PORT\" "
					       "(ADDR an address, a host name or *)",
					       s, entry->path);
		return 0;
	case CHECK_PATH:
		if (s[0] != '/' || strlen(s) >= PATH_MAX)
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "'%s' must be an absolute path, not '%s': the daemons "
					       "run from /",
					       entry->path, s);
		return 0;
	case CHECK_NODE:
		if (!node_valid(s))
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "bad node name '%s': use letters, digits, '.', '_', "
					       "'-' (at most %d, not starting with '.' or '-')",
					       s, CONFIG_MAX_NODE_NAME);
		return 0;
	case CHECK_BYTES:
		toml_value_int(entry->value, &ll);
		if (ll < 0 || (unsigned long long)ll > CONFIG_MAX_SPOOL_MAX_BYTES)
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "value out of range for '%s': %lld not in 0..%llu",
					       entry->path, ll, CONFIG_MAX_SPOOL_MAX_BYTES);
		return 0;
	case CHECK_BOOL:
		return 0;
	}
	return 0;
}

int service_check_entry(const struct toml_entry *entry, const char *file, int allowed,
			struct service_file *sf, char *err, size_t errlen)
{
	unsigned line, col;
	int key;

	if (strcmp(entry->path, "service") && strncmp(entry->path, "service.", 8))
		return 1;
	if (!allowed)
		return config_error_at(err, errlen, file, entry->key_line, entry->key_col, -EINVAL,
				       "'%s' in a project file: the [service] table belongs in "
				       "the site configuration (%s) or the daemons' --config file",
				       entry->path, CONFIG_SITE_PATH);
	toml_value_position(entry->value, &line, &col);
	sf->present = 1;
	if (!strcmp(entry->path, "service")) {
		if (entry->type != TOML_TABLE)
			return config_error_at(err, errlen, file, line, col, -EINVAL,
					       "wrong type for 'service': expected a table, got %s",
					       toml_type_name(entry->type));
		return 0;
	}
	for (key = 0; key < SERVICE_KEY_COUNT; key++)
		if (!strcmp(entry->path, service_keys[key].path))
			break;
	if (key == SERVICE_KEY_COUNT)
		return config_error_at(err, errlen, file, entry->key_line, entry->key_col, -EINVAL,
				       "unknown key '%s'", entry->path);
	if (entry->type != service_keys[key].type)
		return config_error_at(err, errlen, file, line, col, -EINVAL,
				       "wrong type for '%s': expected %s, got %s", entry->path,
				       toml_type_name(service_keys[key].type),
				       toml_type_name(entry->type));
	sf->value[key] = entry->value;
	return check_value(entry, service_keys[key].check, file, err, errlen);
}

/* -EINVAL at @key of @sf when @key is set and @needed is not */
static int check_needs(const struct service_file *sf, enum service_key key,
		       enum service_key needed, const char *why, const char *file, char *err,
		       size_t errlen)
{
	unsigned line, col;

	if (!sf->value[key] || sf->value[needed])
		return 0;
	toml_value_position(sf->value[key], &line, &col);
	return config_error_at(err, errlen, file, line, col, -EINVAL, "'%s' needs '%s': %s",
			       service_keys[key].path, service_keys[needed].path, why);
}

int service_check_file(const struct service_file *sf, const char *file, char *err,
		       size_t errlen)
{
	int ret;

	ret = check_needs(sf, SERVICE_ALLOWED_AGENTS, SERVICE_SECRET_KEY,
			  "Agents are authenticated by CURVE, which needs the Aggregator's "
			  "own key pair",
			  file, err, errlen);
	if (!ret)
		ret = check_needs(sf, SERVICE_AGGREGATOR_PUBLIC_KEY, SERVICE_SECRET_KEY,
				  "a CURVE client needs its own key pair too", file, err, errlen);
	if (!ret && sf->value[SERVICE_AGGREGATORS])
		ret = check_needs(sf, SERVICE_SECRET_KEY, SERVICE_AGGREGATOR_PUBLIC_KEY,
				  "with 'aggregators' and a key pair, nunatakd speaks CURVE "
				  "and must know the Aggregators' public key",
				  file, err, errlen);
	return ret;
}

/* ---- applying ---- */

static int set_aggregators(struct service_config *svc, const struct toml_value *array)
{
	size_t i, n = toml_array_len(array);
	char **list = calloc(n, sizeof(*list));
	const char *s;

	if (!list)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		toml_value_string(toml_array_at(array, i), &s);
		list[i] = strdup(s);
		if (!list[i]) {
			free_aggregators(list, n);
			return -ENOMEM;
		}
	}
	if (svc->owned & (1u << SERVICE_AGGREGATORS))
		free_aggregators(svc->aggregators, svc->n_aggregators);
	svc->aggregators = list;
	svc->n_aggregators = n;
	svc->owned |= 1u << SERVICE_AGGREGATORS;
	return 0;
}

int service_apply(struct service_config *svc, const struct service_file *sf)
{
	const struct toml_value *v;
	char **field, *copy;
	const char *s;
	long long ll;
	bool b;
	int key;

	if (!sf->present)
		return 0;
	svc->present = 1;
	for (key = 0; key < SERVICE_KEY_COUNT; key++) {
		v = sf->value[key];
		if (!v)
			continue;
		if (key == SERVICE_AGGREGATORS) {
			if (set_aggregators(svc, v))
				return -ENOMEM;
		} else if (key == SERVICE_SPOOL_MAX_BYTES) {
			toml_value_int(v, &ll);
			svc->spool_max_bytes = (uint64_t)ll;
		} else if (key == SERVICE_NETNS_ONLY) {
			toml_value_bool(v, &b);
			svc->netns_only = b;
		} else {
			field = service_string(svc, key);
			toml_value_string(v, &s);
			copy = strdup(s);
			if (!copy)
				return -ENOMEM;
			if (svc->owned & (1u << key))
				free(*field);
			*field = copy;
			svc->owned |= 1u << key;
		}
	}
	return 0;
}
