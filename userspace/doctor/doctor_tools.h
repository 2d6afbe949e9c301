/* doctor_tools — the programs nunatak runs or finds: llvm-symbolizer (and
 * its version), llvm-dwarfdump, a C compiler for calibration (one that
 * accepts -march=native), and the MPI stacks found (each distinct
 * mpirun/mpiexec program: path, Open MPI or MPICH, version).
 *
 * Every program is resolved as a trusted tool (tool.h: a file only root
 * or the caller can change) and run with execve, an argument vector and
 * TOOL_TIMEOUT_MS; none runs through a shell. Reading their answers is
 * pure and tested on their real output.
 */
#ifndef NUNATAK_DOCTOR_TOOLS_H
#define NUNATAK_DOCTOR_TOOLS_H

#include <stddef.h>

#include "userspace/doctor/doctor_report.h"

#define DOCTOR_TOOL_TIMEOUT_MS 5000

/* The line of a `--version` text that says the version: the first that
 * contains "version" (any case), else the first that is not empty; spaces
 * trimmed and runs of spaces made one. 0, or -ENOENT for an empty text. */
int doctor_version_line(const char *text, char *line, size_t len);

/* Which MPI a launcher's `--version` text is: "Open MPI" ("(Open MPI)" or
 * "(OpenRTE)" in it), "MPICH" (Hydra's "HYDRA build details"), "Intel MPI",
 * with its version in version ("" when it says none); NULL when it is none
 * of them. */
const char *doctor_mpi_stack(const char *text, char *version, size_t len);

/* Runs path --version (bounded) and puts its version line in line.
 * 0 or -errno (-ETIMEDOUT, a failed start, -ENOENT for no output). */
int doctor_tool_version(const char *path, char *line, size_t len);

/* Adds the checks of a tool found or not (name as configured, path its
 * trusted resolution or "" with why); what it lacks is said by the caller's
 * Degradation (symbolizer) or here. */
void doctor_symbolizer_check(struct doctor_report *r, const char *path, const char *why,
			     const char *degradation, const char *remedy);

/* llvm-dwarfdump, the compiler, the MPI stacks. */
void doctor_tools_checks(struct doctor_report *r);

#endif
