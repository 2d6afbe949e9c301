/* report_html — report.html, the one-file HTML report of a Run.
 *
 * The page is report/app/page.html (embedded at build time:
 * report/report_assets.h) with its markers filled: {{TITLE}} "nunatak —
 * RUN NAME" (the manifest's run.name, else the Run directory's name) and
 * {{SUMMARY_TEXT}} (the terminal summary, the payload's summary_text)
 * HTML-escaped, {{STYLE}} every report/app/ *.css file in name order,
 * {{PAYLOAD}} the payload (report/payload.h) as json_for_script() writes
 * it, {{SCRIPT}} every *.js file of report/app/ in name order joined with "\n;\n".
 * Everything comes from the model: nothing is read from the network or
 * the disk when the page is opened.
 *
 * Written into the Run directory run_dirfd: a temporary name first
 * (openat O_CREAT|O_EXCL|O_NOFOLLOW, 0600, owned by the directory's owner
 * when root writes it), fsync, then renamed over name ("report.html",
 * "report-no-source.html"). A failure leaves no file behind: neither the
 * temporary one nor a half page under name (an older page stays as it was).
 */
#ifndef NUNATAK_REPORT_HTML_H
#define NUNATAK_REPORT_HTML_H

#include <stddef.h>

struct run_model;

#define REPORT_HTML_NAME "report.html"
#define REPORT_HTML_NO_SOURCE_NAME "report-no-source.html"

struct report_html_stats {
	size_t bytes;	      /* of the page written */
	size_t payload_bytes; /* of its payload */
};

/* flags: the payload's (PAYLOAD_NO_SOURCE). st may be NULL. 0, or -EINVAL
 * (bad name: not one plain file name; the model; an asset missing or
 * that would break its element: "</script", "<!--" in a .js, "</style" in
 * a .css: said with pr_warn), -ENOMEM, the file system's -errno (the
 * caller says it), the pivot's error. */
int report_html_write(int run_dirfd, const char *name, const struct run_model *m,
		      unsigned flags, struct report_html_stats *st);

#endif
