/* run_token — the Run token of `nunatak run`: 32 lowercase hex digits
 * from getrandom, put as NUNATAK_RUN=<token> in the application's
 * environment (and appended to OMPI_MCA_mca_base_env_list so that Open
 * MPI forwards it to remote ranks), so that the Agents of other nodes
 * adopt the Run's processes there (checked against the owner's uid).
 */
#ifndef NUNATAK_CLI_RUN_TOKEN_H
#define NUNATAK_CLI_RUN_TOKEN_H

struct launch;

/* 0 and token filled (33 bytes with the NUL), or -errno */
int run_token_new(char token[33]);

/* launch_prepare(l, exe, argv) with the token in the child's environment
 * only: set in ours while it forks, then put back as it was, so that
 * nothing else nunatak starts (llvm-symbolizer, ...) carries it. Call it
 * while no other thread runs (setenv). 0 or -errno. */
int run_token_launch(const char *token, struct launch *l, const char *exe, char *const argv[]);

#endif
