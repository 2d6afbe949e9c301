/* report_assets — the files of report/app/ (page.html, *.css, *.js),
 * embedded in the binary at build time: the Makefile generates the table
 * from the directory's list (adding a file needs no edit) with .incbin,
 * into $(BUILD), never committed. Each is NUL-terminated after its end.
 */
#ifndef NUNATAK_REPORT_ASSETS_H
#define NUNATAK_REPORT_ASSETS_H

#include <stddef.h>

struct report_asset {
	const char *name; /* "page.html", "style.css", ... */
	const unsigned char *data, *end;
};

/* by name (byte order) */
extern const struct report_asset report_assets[];
extern const size_t report_n_assets;

#endif
