/* run_manifest — see run_manifest.h. */
#include <errno.h>
#include <time.h>

#include "userspace/cli/cli.h"
#include "userspace/cli/provenance.h"
#include "userspace/cli/run_manifest.h"
#include "userspace/launch/launcher.h"
#include "userspace/log/json_text.h"
#include "userspace/machine/machine.h"

void run_iso_time(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* the command line, each word escaped as json_text does: argv[0] of a
 * program whose file name is not UTF-8 is kept, not dropped */
static json_t *command_json(int ncmd, char *const cmd[])
{
	json_t *command = json_array();
	int i;

	for (i = 0; command && i < ncmd; i++)
		if (json_array_append_new(command, json_text(cmd[i]))) {
			json_decref(command);
			command = NULL;
		}
	return command;
}

/* "run": what nunatak knows of the Run before launch; every text in it
 * comes from the user (name, command line) */
static json_t *run_json(const char *name, int ncmd, char *const cmd[],
			const struct launcher_split *split, const char *start)
{
	return json_pack(
	    "{s:o, s:s, s:o, s:n, s:o, s:o, s:o}", "name", json_text(name), "created", start,
	    "command", command_json(ncmd, cmd), "exit_code", "launcher",
	    split->launcher[0] ? json_text(split->launcher) : json_null(), "target",
	    split->target_index >= 0 ? json_text(cmd[split->target_index]) : json_null(),
	    "world_size", split->world_size > 0 ? json_integer(split->world_size) : json_null());
}

json_t *run_manifest_seed(const char *name, int ncmd, char *const cmd[],
			  const struct launcher_split *split, const struct config *cfg,
			  const char *start, const char *node)
{
	json_t *seed;

	/* json_pack takes the "o" references, also when it fails */
	seed = json_pack("{s:{s:s, s:i, s:s}, s:o, s:o, s:[o], s:o,"
			 " s:[{s:i, s:n, s:s, s:n, s:[{s:s, s:s}]}], s:[]}",
			 "format", "name", "nunatak-run", "schema", 1, "generated_by",
			 "nunatak " NUNATAK_VERSION, "run", run_json(name, ncmd, cmd, split, start),
			 "machine", machine_snapshot(), "nodes", json_text(node), "provenance",
			 provenance_json(cfg), "passes", "index", 0, "exit_code", "start", start,
			 "end", "collectors", "tool", "nunatak-bpf-sampling", "version",
			 NUNATAK_VERSION, "degradations");
	if (!seed)
		errno = ENOMEM;
	return seed;
}
