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
 * finalized first with symbolizer, unless that is NULL. 0 without
 * Degradations, 1 with, or -errno (a message was printed). */
int summary_show(const char *run_dir, FILE *text_out, FILE *json_out, void *extra_json,
		 const char *symbolizer);

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
