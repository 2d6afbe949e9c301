/* run_facts — see run_facts.h. */
#include <errno.h>

#include "userspace/cli/run_facts.h"
#include "userspace/config/config.h"
#include "userspace/launch/launcher.h"
#include "userspace/log/json_text.h"

/* each word escaped as json_text does: argv[0] of a program whose file
 * name is not UTF-8 is kept, not dropped */
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

json_t *run_facts_json(const char *name, int ncmd, char *const cmd[],
		       const struct launcher_split *split, const struct config *cfg,
		       const char *created, const char *node)
{
	json_t *facts = json_pack(
	    "{s:o, s:s, s:o, s:n, s:o, s:o, s:o, s:o, s:n, s:o}", "name", json_text(name),
	    "created", created, "command", command_json(ncmd, cmd), "exit_code", "launcher",
	    split->launcher[0] ? json_text(split->launcher) : json_null(), "target",
	    split->target_index >= 0 ? json_text(cmd[split->target_index]) : json_null(),
	    "world_size", split->world_size > 0 ? json_integer(split->world_size) : json_null(),
	    "node", json_text(node), "job_id", "effective_configuration",
	    config_effective_json(cfg));

	if (!facts)
		errno = ENOMEM;
	return facts;
}
