/* cli — the subcommands of the `nunatak` program, each taking the argv
 * after its own name and returning the process exit status. */
#ifndef NUNATAK_CLI_H
#define NUNATAK_CLI_H

#include <stdio.h>

#include "userspace/log/version.h"

int cmd_run(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_components(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_keygen(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_detach(int argc, char **argv);
int cmd_job_prolog(int argc, char **argv);
int cmd_job_epilog(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_doctor(int argc, char **argv);

/* Prints the summary of the Run in run_dir: text to text_out (NULL: none),
 * and, when json_out is set, one JSON object to it, with `extra` merged in
 * (may be NULL). A Run nunatak never finalized (it was killed) is
 * finalized first with symbolizer, unless that is NULL. report_path (may
 * be NULL: none) also asks for report.html from the same model
 * (cli_report_write), its path written there ("" when it could not be
 * written: a warning said why; a Run still written gets none). 0 without
 * Degradations, 1 with, or -errno (a message was printed). */
int summary_show(const char *run_dir, FILE *text_out, FILE *json_out, void *extra_json,
		 const char *symbolizer, char *report_path, size_t report_path_len);

/* Writes the HTML report of the open Run r (run_dir as the user named it)
 * from the model m (built with RUN_MODEL_COMPONENTS, and
 * RUN_MODEL_NO_SOURCE for report-no-source.html) into the Run directory
 * (report/report_html.h): its path in path, its sizes in st (may be
 * NULL). 0, or -errno said on stderr. */
struct report_html_stats;
struct run_model;
struct run_read;
int cli_report_write(const struct run_read *r, const char *run_dir, struct run_model *m,
		     char *path, size_t path_len, struct report_html_stats *st);

/* The symbolizer a Run may use: the trusted absolute path of name in
 * path, 0. Else path is "" (none may run: names from ELF symbols), and
 * *dname, message and *remedy describe the Degradation to record
 * (symbolizer-untrusted when another user could change it,
 * symbolizer-missing otherwise); returns the -errno of
 * tool_resolve_trusted(). One rule for `run` and `summary`. */
int cli_resolve_symbolizer(const char *name, char *path, size_t pathlen, const char **dname,
			   char *message, size_t messagelen, const char **remedy);

/* the runs directory and site config as the cascade gives them */
struct config;
int cli_load_config(struct config *cfg);

#endif
