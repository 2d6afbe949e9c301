/* run_report — see run_report.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "userspace/aggregator/run_dir.h"
#include "userspace/cli/cli.h"
#include "userspace/cli/run_options.h"
#include "userspace/cli/run_report.h"
#include "userspace/launch/launch.h"
#include "userspace/log/clock.h"
#include "userspace/log/json_text.h"

#define RELEASE_WAIT_MS 3000 /* a finalized Run's lock, after its answer */

/* stdout carries the --json document, written in one go from memory so
 * that a failed write says its own errno. A failure (not EPIPE: its
 * reader left on purpose) is said, and fails a Run whose application
 * succeeded. */
static int run_write_json(const char *doc, size_t len, int exit_code)
{
	size_t done = 0;
	int e = 0;

	while (done < len) {
		ssize_t n = write(STDOUT_FILENO, doc + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			e = n < 0 ? errno : EIO;
			break;
		}
		done += n;
	}
	if (!e && (fflush(stdout) || fclose(stdout)))
		e = errno;
	if (!e || e == EPIPE)
		return exit_code;
	fprintf(stderr, "nunatak: cannot write the --json result to stdout: %s\n", strerror(e));
	return exit_code ? exit_code : EXIT_NUNATAK_FAILED;
}

/* A finalized Run's writer lets go of it right after its answer: the
 * summary waits that moment out (bounded) rather than call it "being
 * written". */
static void run_wait_released(const char *run_dir)
{
	long long deadline = clock_monotonic_ms() + RELEASE_WAIT_MS;
	int fd, e;

	while ((e = run_dir_lock(run_dir, &fd)) == -EWOULDBLOCK && clock_monotonic_ms() < deadline)
		usleep(10 * 1000);
	if (!e)
		close(fd);
}

int run_report(const struct run_result *r)
{
	char report[PATH_MAX] = "";
	FILE *json_out = NULL;
	char *doc = NULL;
	size_t len = 0;
	json_t *extra;
	int exit_code = r->exit_code, shown;

	if (!r->finalized && r->interrupted) {
		fprintf(stderr, "Run: %s\n", r->run_dir);
		return exit_code;
	}
	if (r->finalized)
		run_wait_released(r->run_dir);
	if (run_env.json && !(json_out = open_memstream(&doc, &len)))
		fprintf(stderr, "nunatak: no --json result: %s\n", strerror(errno));
	/* names from argv or the file system: not always UTF-8 (json_text) */
	extra = json_pack("{s:o, s:o, s:i}", "run", json_text(r->run_dir), "name",
			  json_text(r->name), "exit_code", r->exit_code);
	if (extra && r->extra)
		json_object_update(extra, r->extra);
	shown = summary_show(r->run_dir, stderr, json_out, extra, NULL, report, sizeof(report));
	if (shown == 1 && run_env.strict)
		exit_code = EXIT_STRICT_DEGRADED;
	json_decref(extra);
	fprintf(stderr, "Run: %s\n", r->run_dir);
	/* no page is a warning (said), never a Degradation nor an exit code */
	if (report[0])
		fprintf(stderr, "Report: %s\n", report);
	if (run_env.json && (shown < 0 || !json_out)) {
		/* no document is a failed --json write, as a failed write is */
		fprintf(stderr,
			"nunatak: no --json result on stdout: the summary of '%s' could not be "
			"made (said above); 'nunatak summary --json %s' retries it\n",
			r->run_dir, r->run_dir);
		if (json_out)
			fclose(json_out);
		free(doc);
		return exit_code ? exit_code : EXIT_NUNATAK_FAILED;
	}
	if (json_out && !fclose(json_out))
		exit_code = run_write_json(doc, len, exit_code);
	free(doc);
	return exit_code;
}
