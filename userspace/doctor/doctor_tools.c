/* doctor_tools — see doctor_tools.h. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>

#include "userspace/calibration/kernel_build.h"
#include "userspace/doctor/doctor_tools.h"
#include "userspace/launch/tool.h"

/* the launchers looked for in PATH; links to one program are said once */
static const char *const mpi_launchers[] = {
    "mpirun",	     "mpiexec",	      "mpirun.openmpi", "mpiexec.openmpi", "mpirun.mpich",
    "mpiexec.mpich", "mpiexec.hydra", "orterun",	"prterun",
};

#define MAX_STACKS (sizeof(mpi_launchers) / sizeof(mpi_launchers[0]))

/* line [s, e) trimmed, runs of spaces made one, into out */
static void squeeze(const char *s, const char *e, char *out, size_t len)
{
	size_t n = 0;
	int space = 0;

	while (s < e && isspace((unsigned char)*s))
		s++;
	while (e > s && isspace((unsigned char)e[-1]))
		e--;
	for (; s < e && n + 1 < len; s++) {
		if (isspace((unsigned char)*s)) {
			space = 1;
			continue;
		}
		if (space && n + 2 < len)
			out[n++] = ' ';
		space = 0;
		out[n++] = *s;
	}
	out[n] = '\0';
}

int doctor_version_line(const char *text, char *line, size_t len)
{
	const char *s, *e, *first = NULL, *first_end = NULL;

	for (s = text; *s; s = *e ? e + 1 : e) {
		e = strchrnul(s, '\n');
		squeeze(s, e, line, len);
		if (!line[0])
			continue;
		if (!first) {
			first = s;
			first_end = e;
		}
		if (memmem(s, (size_t)(e - s), "ersion", 6))
			return 0;
	}
	if (!first) {
		if (len)
			line[0] = '\0';
		return -ENOENT;
	}
	squeeze(first, first_end, line, len);
	return 0;
}

/* the last word of the line holding needle, or the word after "Version:" */
static void word_after(const char *text, const char *needle, int last, char *out, size_t len)
{
	const char *p = strstr(text, needle), *e;
	char line[256];
	char *w;

	out[0] = '\0';
	if (!p)
		return;
	e = strchrnul(p, '\n');
	squeeze(p + (last ? 0 : strlen(needle)), e, line, sizeof(line));
	w = last ? strrchr(line, ' ') : NULL;
	snprintf(out, len, "%s", w ? w + 1 : line);
}

const char *doctor_mpi_stack(const char *text, char *version, size_t len)
{
	version[0] = '\0';
	if (strstr(text, "(Open MPI)") || strstr(text, "(OpenRTE)") || strstr(text, "(PRRTE)")) {
		word_after(text,
			   strstr(text, "(Open MPI)")  ? "(Open MPI)"
			   : strstr(text, "(OpenRTE)") ? "(OpenRTE)"
						       : "(PRRTE)",
			   1, version, len);
		return "Open MPI";
	}
	if (strstr(text, "HYDRA build details")) {
		word_after(text, "Version:", 0, version, len);
		return "MPICH";
	}
	if (strstr(text, "Intel(R) MPI")) {
		word_after(text, "Version", 0, version, len);
		return "Intel MPI";
	}
	return NULL;
}

static int run_version(const char *path, char *out, size_t outlen)
{
	char *const argv[] = {(char *)path, "--version", NULL};
	struct tool_result res;
	int e = tool_run(path, argv, DOCTOR_TOOL_TIMEOUT_MS, out, outlen, &res);

	if (e)
		return e;
	return WIFEXITED(res.status) && !WEXITSTATUS(res.status) ? 0 : -EPROTO;
}

int doctor_tool_version(const char *path, char *line, size_t len)
{
	char out[4096];
	int e = run_version(path, out, sizeof(out));

	if (e)
		return e;
	return doctor_version_line(out, line, len);
}

void doctor_symbolizer_check(struct doctor_report *r, const char *path, const char *why,
			     const char *degradation, const char *remedy)
{
	char version[160];
	int e;

	if (!path[0]) {
		doctor_check(r, "llvm-symbolizer", DOCTOR_MISSING, remedy, "%s", why);
		doctor_degradation(r, degradation, why, remedy);
		return;
	}
	e = doctor_tool_version(path, version, sizeof(version));
	if (e)
		doctor_check(r, "llvm-symbolizer", DOCTOR_WARNING,
			     "check that it runs: llvm-symbolizer --version",
			     "%s: `--version` failed (%s)", path, strerror(-e));
	else
		doctor_check(r, "llvm-symbolizer", DOCTOR_OK, NULL, "%s (%s)", path, version);
}

static void check_dwarfdump(struct doctor_report *r)
{
	char path[PATH_MAX], why[PATH_MAX + 256], version[160];
	int e = tool_resolve_trusted("llvm-dwarfdump", path, sizeof(path), why, sizeof(why));

	if (!e)
		e = doctor_tool_version(path, version, sizeof(version));
	if (!e) {
		doctor_check(r, "llvm-dwarfdump", DOCTOR_OK, NULL, "%s (%s)", path, version);
		return;
	}
	doctor_check(r, "llvm-dwarfdump", DOCTOR_WARNING, "apt-get install llvm",
		     "%s: source extracts are embedded without the DWARF 5 checksum check, "
		     "marked not verified",
		     why[0] ? why : strerror(-e));
}

/* the compiler calibration uses (kernel_build.h), and whether it accepts
 * -march=native: the kernels' flags */
static void check_compiler(struct doctor_report *r)
{
	char path[PATH_MAX], why[PATH_MAX + 256], version[160], out[256];
	struct tool_result res;
	int e = kernel_compiler_find(path, sizeof(path), why, sizeof(why));

	if (e) {
		doctor_check(r, "compiler", DOCTOR_MISSING, "apt-get install gcc",
			     "no trusted C compiler (cc, gcc, clang): %s: `nunatak calibrate` "
			     "cannot build its kernels, Ceilings stay theoretical or unavailable",
			     why);
		return;
	}
	if (doctor_tool_version(path, version, sizeof(version)))
		snprintf(version, sizeof(version), "version unknown");
	{
		char *const argv[] = {path, "-march=native", "-E", "-x", "c", "/dev/null", NULL};

		e = tool_run(path, argv, DOCTOR_TOOL_TIMEOUT_MS, out, sizeof(out), &res);
	}
	if (!e && WIFEXITED(res.status) && !WEXITSTATUS(res.status))
		doctor_check(r, "compiler", DOCTOR_OK, NULL,
			     "%s (%s) accepts -march=native: `nunatak calibrate` can build its "
			     "kernels",
			     path, version);
	else
		doctor_check(r, "compiler", DOCTOR_WARNING,
			     "install a compiler that knows this processor (gcc, clang)",
			     "%s (%s) refuses -march=native: calibration would be a scalar build, "
			     "its Ceilings estimated",
			     path, version);
}

struct stack_seen {
	char path[PATH_MAX];
	char names[256];
};

static struct stack_seen *seen_find(struct stack_seen *seen, size_t n, const char *path)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(seen[i].path, path))
			return &seen[i];
	return NULL;
}

static void check_mpi(struct doctor_report *r)
{
	static struct stack_seen seen[MAX_STACKS];
	char why[PATH_MAX + 256], out[4096], version[64];
	const char *stack;
	size_t i, n = 0, found = 0;

	for (i = 0; i < MAX_STACKS; i++) {
		struct stack_seen *s;

		if (tool_resolve_trusted(mpi_launchers[i], seen[n].path, sizeof(seen[n].path), why,
					 sizeof(why)))
			continue;
		s = seen_find(seen, n, seen[n].path);
		if (s) {
			size_t l = strlen(s->names);

			snprintf(s->names + l, sizeof(s->names) - l, ", %s", mpi_launchers[i]);
			continue;
		}
		snprintf(seen[n].names, sizeof(seen[n].names), "%s", mpi_launchers[i]);
		n++;
	}
	for (i = 0; i < n; i++) {
		stack = run_version(seen[i].path, out, sizeof(out))
			    ? NULL
			    : doctor_mpi_stack(out, version, sizeof(version));
		if (!stack)
			continue;
		found++;
		doctor_check(r, "mpi", DOCTOR_OK, NULL, "%s %s: %s (as %s)", stack,
			     version[0] ? version : "(version unknown)", seen[i].path,
			     seen[i].names);
	}
	if (!found)
		doctor_check(r, "mpi", DOCTOR_WARNING,
			     "install Open MPI or MPICH to profile MPI "
			     "applications",
			     "no MPI launcher (mpirun, mpiexec) of Open MPI or MPICH in PATH");
}

void doctor_tools_checks(struct doctor_report *r)
{
	check_dwarfdump(r);
	check_compiler(r);
	check_mpi(r);
}
