/* run_report — the end of `nunatak run`: the summary of the Run read
 * from disk (cmd_summary's summary_show), the HTML report written into
 * the Run directory from the same model (report.html; a failure is a
 * warning, never a lost Run nor another exit code), `Run: DIR`, then
 * `Report: PATH`, the --json document on stdout, and nunatak's exit code.
 */
#ifndef NUNATAK_CLI_RUN_REPORT_H
#define NUNATAK_CLI_RUN_REPORT_H

struct run_result {
	const char *run_dir, *name;
	int exit_code;	 /* the application's */
	int finalized;	 /* the node service said the Run is finalized */
	int interrupted; /* the finalize was told to stop */
	void *extra;	 /* NULL, or a json_t object merged into the --json document (its
			  * fields win: `nunatak attach`'s job, ended_by, exit_code null) */
};

/* The exit code: the application's, 121 with --strict and a Degradation,
 * 125 when the application succeeded but the --json result could not be
 * written. */
int run_report(const struct run_result *res);

#endif
