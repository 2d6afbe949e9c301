/* run_manifest — see run_manifest.h. */
#include <time.h>

#include "userspace/cli/cli.h"
#include "userspace/cli/provenance.h"
#include "userspace/cli/run_manifest.h"
#include "userspace/launch/launcher.h"
#include "userspace/machine/machine.h"

void run_iso_time(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

json_t *run_manifest_seed(const char *name, int ncmd, char *const cmd[],
			  const struct launcher_split *split, const struct config *cfg,
			  const char *start, const char *node)
{
	json_t *command = json_array(), *seed, *run;
	int i;

	for (i = 0; command && i < ncmd; i++)
		json_array_append_new(command, json_string(cmd[i]));
	seed = json_pack("{s:{s:s, s:i, s:s}, s:{s:s, s:s, s:o, s:n}, s:o, s:[s], s:o,"
			 " s:[{s:i, s:n, s:s, s:n, s:[{s:s, s:s}]}], s:[]}",
			 "format", "name", "nunatak-run", "schema", 1, "generated_by",
			 "nunatak " NUNATAK_VERSION, "run", "name", name, "created", start,
			 "command", command, "exit_code", "machine", machine_snapshot(), "nodes",
			 node, "provenance", provenance_json(cfg), "passes", "index", 0,
			 "exit_code", "start", start, "end", "collectors", "tool",
			 "nunatak-bpf-sampling", "version", NUNATAK_VERSION, "degradations");
	run = json_object_get(seed, "run");
	if (!run)
		return seed;
	json_object_set_new(run, "launcher",
			    split->launcher[0] ? json_string(split->launcher) : json_null());
	json_object_set_new(run, "target",
			    split->target_index >= 0 ? json_string(cmd[split->target_index])
						     : json_null());
	json_object_set_new(run, "world_size",
			    split->world_size > 0 ? json_integer(split->world_size) : json_null());
	return seed;
}
