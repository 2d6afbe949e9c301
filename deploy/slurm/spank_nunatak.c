/* spank_nunatak — the SPANK plugin that gives sbatch, srun and salloc the
 * option `--nunatak[=FREQ]` ("profile this job with nunatak from its first
 * process") and forwards a submitter's NUNATAK_PROFILE=1.
 *
 * It does no profiling and talks to nothing: in the allocator (sbatch,
 * salloc) and local (srun) contexts it puts SPANK_NUNATAK=<FREQ or "default"> and
 * SPANK_NUNATAK_PROFILE=1 into the job's control environment, which Slurm
 * hands to the Prolog and the Epilog; deploy/slurm/prolog and epilog then
 * run `nunatak job-prolog` / `job-epilog` as root on each node.
 *
 * Never a reason for a job to fail or a node to drain (tested facts of
 * Slurm 22.05, see README.md): every hook and the option callback return 0
 * (a non-zero callback refuses the submission, a failing hook of a required
 * plugin fails the job); a bad FREQ is reported and the job profiled
 * without one; spank_job_control_setenv() is called only in allocator and
 * local context (in job_script context it crashes the prolog process); no
 * slurm_spank_job_prolog/epilog hook is exported, so nothing of this
 * plugin runs in the job_script context at all.
 *
 * Build: against the Slurm that runs it (plugin_version is that release's
 * SLURM_VERSION_NUMBER): `make build/spank_nunatak.so`; -shared -fPIC and
 * no -lslurm (the loading program provides the spank_* symbols).
 */
#include <stdio.h>
#include <stdlib.h>

#include <slurm/spank.h>

#include "deploy/slurm/spank_option.h"

SPANK_PLUGIN(nunatak, 1);

static int option_given; /* --nunatak seen in this process */
static int option_freq; /* 0: none asked */

static int in_submitter(void)
{
	spank_context_t ctx = spank_context();

	return ctx == S_CTX_ALLOCATOR || ctx == S_CTX_LOCAL;
}

static int nunatak_option_cb(int val, const char *optarg, int remote)
{
	char err[160];

	(void)val;
	option_given = 1;
	/* remote (slurmstepd) sees the option too, with NULL then "": quiet there */
	if (spank_option_freq(optarg, &option_freq, err, sizeof(err)) && !remote)
		slurm_error("nunatak: %s", err);
	return 0;
}

static struct spank_option nunatak_option = {
	"nunatak", "FREQ",
	"Profile this job with nunatak from its first process; FREQ (optional, "
	"--nunatak=FREQ) is the sampling frequency asked, in Hz (the nodes' "
	"nunatak service samples at one frequency: a Run says when it differs)",
	2 /* optional argument */, 0, nunatak_option_cb,
};

/* Registered in every context: sbatch only knows options registered here
 * (a spank_options[] table is seen by srun only). */
int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_err_t rc;

	(void)ac;
	(void)av;
	rc = spank_option_register(sp, &nunatak_option);
	if (rc != ESPANK_SUCCESS && in_submitter())
		slurm_error("nunatak: option --nunatak not available: %s", spank_strerror(rc));
	return 0;
}

static void forward(spank_t sp, const char *name, const char *value)
{
	spank_err_t rc = spank_job_control_setenv(sp, name, value, 1);

	if (rc != ESPANK_SUCCESS)
		slurm_error("nunatak: the job will not be profiled: could not pass %s to its "
			    "Prolog: %s",
			    name, spank_strerror(rc));
}

/* After the options: the only place the Prolog's environment can still be
 * set (values set later, e.g. by an srun inside the job, never reach it). */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	char value[16];

	(void)ac;
	(void)av;
	if (!in_submitter())
		return 0;
	if (option_given)
		forward(sp, "NUNATAK", spank_option_value(option_freq, value, sizeof(value)));
	if (spank_option_profile_requested(getenv("NUNATAK_PROFILE")))
		forward(sp, "NUNATAK_PROFILE", "1");
	return 0;
}
