/* run_facts — see run_facts.h. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* where the source files of the Run are searched by name: the top of the
 * git work tree holding the current directory, else the current
 * directory; JSON null when it cannot be named */
static json_t *project_root_json(void)
{
	char cwd[PATH_MAX], dir[PATH_MAX], probe[PATH_MAX + 8];
	struct stat st;
	char *slash;

	if (!getcwd(cwd, sizeof(cwd)))
		return json_null();
	snprintf(dir, sizeof(dir), "%s", cwd);
	for (;;) {
		snprintf(probe, sizeof(probe), "%s/.git", strcmp(dir, "/") ? dir : "");
		if (!lstat(probe, &st))
			return json_text(dir);
		slash = strrchr(dir, '/');
		if (!slash || !strcmp(dir, "/"))
			return json_text(cwd);
		slash[slash == dir ? 1 : 0] = '\0';
	}
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

	if (facts && json_object_set_new(facts, "project_root", project_root_json())) {
		json_decref(facts);
		facts = NULL;
	}

	if (!facts)
		errno = ENOMEM;
	return facts;
}

int run_facts_add_components(json_t *facts, const char *const *patterns, int n, const char *step)
{
	json_t *eff = json_object_get(facts, "effective_configuration");
	json_t *list = command_json(n, (char *const *)patterns); /* words as the command's */

	/* as every other key: its value and where it came from */
	if (!list || !json_is_object(eff) ||
	    json_object_set_new(eff, "components",
				json_pack("{s:o, s:s}", "value", list, "source",
					  n ? "command line" : "default")) ||
	    json_object_set_new(eff, "step",
				json_pack("{s:o, s:s}", "value", step ? json_text(step) : json_null(),
					  "source", step ? "command line" : "default")))
		return -ENOMEM;
	return 0;
}
