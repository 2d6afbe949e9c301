/* run_manifest — see run_manifest.h. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "userspace/aggregator/provenance.h"
#include "userspace/aggregator/run_manifest.h"
#include "userspace/log/version.h"
#include "userspace/log/log.h"

void run_iso_time(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* START.run as the manifest keeps it: every fact but the configuration
 * (provenance's), the exit code unknown yet */
static json_t *run_facts(const json_t *run, unsigned owner_uid)
{
	json_t *copy = json_deep_copy(run);

	if (!copy)
		return NULL;
	json_object_del(copy, "effective_configuration");
	if (json_object_set_new(copy, "exit_code", json_null()) ||
	    json_object_set_new(copy, "owner_uid", json_integer(owner_uid))) {
		json_decref(copy);
		return NULL;
	}
	return copy;
}

json_t *run_manifest_seed(const json_t *run, unsigned owner_uid, const json_t *machine,
			  const char *symbolizer)
{
	const char *created, *node;
	json_t *seed;

	if (!json_is_object(run)) {
		errno = EINVAL;
		return NULL;
	}
	created = json_string_value(json_object_get(run, "created"));
	node = json_string_value(json_object_get(run, "node"));
	/* json_pack takes the "o" references, also when it fails */
	seed = json_pack(
	    "{s:{s:s, s:i, s:s}, s:o, s:O, s:{}, s:[s], s:o,"
	    " s:[{s:i, s:n, s:s, s:n, s:[{s:s, s:s}]}], s:[]}",
	    "format", "name", "nunatak-run", "schema", 1, "generated_by",
	    "nunatak " NUNATAK_VERSION, "run", run_facts(run, owner_uid), "machine",
	    machine ? machine : json_null(), "machines", "nodes", node ? node : "", "provenance",
	    provenance_json(symbolizer, json_object_get(run, "effective_configuration")), "passes",
	    "index", 0, "exit_code", "start", created ? created : "", "end", "collectors", "tool",
	    "nunatak-bpf-sampling", "version", NUNATAK_VERSION, "degradations");
	if (!seed) {
		errno = ENOMEM;
		return NULL;
	}
	if (node && machine)
		json_object_set(json_object_get(seed, "machines"), node, (json_t *)machine);
	return seed;
}

void run_manifest_set_machine(json_t *manifest, const char *node, int origin, const json_t *machine)
{
	json_t *machines = json_object_get(manifest, "machines");

	if (!machine || !node)
		return;
	if (!json_is_object(machines)) {
		machines = json_object();
		json_object_set_new(manifest, "machines", machines);
	}
	json_object_set(machines, node, (json_t *)machine);
	if (origin)
		json_object_set(manifest, "machine", (json_t *)machine);
}

void run_manifest_set_end(json_t *manifest, const json_t *finalize)
{
	json_t *run = json_object_get(manifest, "run");
	json_t *passes = json_object_get(manifest, "passes");
	json_t *pass = json_array_get(passes, json_array_size(passes) - 1);
	json_t *exit_code = json_object_get(finalize, "exit_code");

	if (!exit_code)
		exit_code = json_null();
	if (run)
		json_object_set(run, "exit_code", exit_code);
	if (pass) {
		json_object_set(pass, "exit_code", exit_code);
		json_object_set(pass, "end", json_object_get(finalize, "end"));
	}
}
