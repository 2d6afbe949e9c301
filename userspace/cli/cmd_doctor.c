/* cmd_doctor — `nunatak doctor [--json] [-- CMD]`: what nunatak can do on
 * this Machine, as this user, each capability a check (ok / warning /
 * missing, with detail and remedy) and the Degradations a Run here would
 * have; with a command, what its binary offers for naming Hotspots and
 * walking call paths.
 *
 * Nothing is started but bounded probes (one system call each, tools run
 * with a timeout); the node service is asked for its status as `nunatak
 * status` asks it, never started. doctor always exits 0: what is wrong is
 * what it reports, a bad command included.
 */
#include <argp.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "userspace/cli/cli.h"
#include "userspace/config/config.h"
#include "userspace/control/control_client.h"
#include "userspace/doctor/doctor_binary.h"
#include "userspace/doctor/doctor_kernel.h"
#include "userspace/doctor/doctor_report.h"
#include "userspace/doctor/doctor_service.h"
#include "userspace/doctor/doctor_tools.h"
#include "userspace/launch/launch.h"

static struct {
	int json;
	int ncmd;
	char **cmd;
} env;

static const char doc[] =
    "Check what nunatak can do here, as you: privileges, BPF, BTF, the kernel, "
    "uprobe_multi, perf events, perf_event_paranoid, the PMU and its FLOP/DRAM counter "
    "group, llvm-symbolizer, llvm-dwarfdump, a compiler for calibration, the MPI stacks, "
    "the node service (nunatakd) and its aggregators, and the cached Machine profile. Each "
    "is ok, warning or missing, with the Degradation a Run would have and its remedy. "
    "With a command, what its binary offers: debug info (Hotspots named with lines), "
    ".symtab (functions), .dynsym only (exported symbols), frame pointers and unwind "
    "tables (call paths). Always exits 0, even on bad usage."
    "\v"
    "EXAMPLES:\n"
    "  nunatak doctor\n"
    "  nunatak doctor -- ./solver input.dat\n"
    "  nunatak doctor -- mpirun -n 4 ./solver     checks ./solver\n"
    "  nunatak doctor --json | python3 -m json.tool";

static const struct argp_option options[] = {
    {"json", 'j', NULL, 0,
     "Print {checks: [{name, status, detail, remedy}], degradations: [{name, message, "
     "remedy}]} on stdout",
     0},
    {},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	switch (key) {
	case 'j':
		env.json = 1;
		break;
	case ARGP_KEY_ARG:
		env.cmd = &state->argv[state->next - 1];
		env.ncmd = state->argc - state->next + 1;
		state->next = state->argc;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static void check_symbolizer(struct doctor_report *r, const struct config *cfg)
{
	char path[PATH_MAX], message[PATH_MAX + 600];
	const char *dname = NULL, *remedy = NULL;

	if (cli_resolve_symbolizer(cfg->llvm_symbolizer, path, sizeof(path), &dname, message,
				   sizeof(message), &remedy))
		path[0] = '\0';
	doctor_symbolizer_check(r, path, message, dname, remedy);
}

static void doctor_run_checks(struct doctor_report *r)
{
	struct config cfg;
	int loaded;

	config_init(&cfg);
	loaded = !cli_load_config(&cfg); /* said on stderr when not */
	if (!loaded)
		doctor_check(r, "configuration", DOCTOR_WARNING,
			     "fix the file named above (nunatak.toml)",
			     "the configuration cannot be read: defaults used");
	doctor_kernel_checks(r, NULL);
	check_symbolizer(r, &cfg);
	doctor_tools_checks(r);
	doctor_service_checks(r, control_socket_path(loaded ? cfg.service.agent_socket : NULL));
	doctor_machine_profile_check(r);
	if (env.ncmd > 0)
		doctor_binary_checks(r, env.ncmd, env.cmd);
	config_release(&cfg);
}

static void print_report(const struct doctor_report *r)
{
	json_t *o;
	int e;

	if (!env.json) {
		e = doctor_report_print(r, stdout);
		if (e)
			fprintf(stderr, "nunatak: cannot write the report: %s\n", strerror(-e));
		return;
	}
	o = doctor_report_json(r);
	if (!o || json_dumpf(o, stdout, JSON_INDENT(2)) || fputc('\n', stdout) == EOF ||
	    fflush(stdout))
		fprintf(stderr, "nunatak: cannot write the report to stdout: %s\n",
			strerror(errno ? errno : ENOMEM));
	json_decref(o);
}

int cmd_doctor(int argc, char **argv)
{
	static const struct argp argp = {options, parse_arg, "[-- CMD [ARGS...]]", doc, NULL,
					 NULL,	  NULL};
	struct doctor_report *r;

	memset(&env, 0, sizeof(env));
	argp_err_exit_status = 0; /* even bad usage: doctor always exits 0 */
	if (argp_parse(&argp, argc, argv, 0, NULL, NULL))
		return 0; /* said by argp; doctor always exits 0 */
	r = doctor_report__new();
	if (!r) {
		fprintf(stderr, "nunatak: cannot check: %s\n", strerror(errno));
		return 0;
	}
	doctor_run_checks(r);
	print_report(r);
	doctor_report__free(r);
	return 0;
}
