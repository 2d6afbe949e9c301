/* summary_unresolved — the unresolved share by module, with remedies. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analysis/diagnose.h"
#include "report/summary_format.h"
#include "report/summary_unresolved.h"
#include "userspace/attribution/own_code.h"
#include "userspace/log/json_text.h"

#define REMEDY_MAX (PATH_MAX + 128) /* a path and words */

/* 1 when path is where Debian packages install files */
static int is_system_path(const char *path)
{
	static const char *const prefixes[] = {"/usr/",	   "/lib/", "/lib32/", "/lib64/",
					       "/libx32/", "/bin/", "/sbin/"};
	size_t i;

	if (!strncmp(path, "/usr/local/", 11))
		return 0;
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(path, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

const char *summary_unresolved_remedy(const struct unresolved_module *m, char *buf, size_t len)
{
	if (!strcmp(m->identity, "pseudo:kernel"))
		snprintf(buf, len,
			 "kernel code no symbol of /proc/kallsyms covered when the Agent read "
			 "it (a module or BPF program loaded later, the end of a module), or "
			 "every kernel address when the kernel-addresses-hidden degradation is "
			 "listed (its remedy says what names them)");
	else if (!strcmp(m->identity, OWN_CODE_UPROBES_IDENTITY))
		snprintf(buf, len, "nunatak's uprobe trampoline: its own code, not the application's");
	else if (!strcmp(m->identity, "pseudo:vdso"))
		snprintf(buf, len,
			 "the kernel's vDSO (clock_gettime and friends): no symbol file "
			 "of it is read");
	else if (!strncmp(m->identity, "pseudo:", 7))
		snprintf(buf, len,
			 "code without a file (JIT, anonymous memory, or unmapped before "
			 "it was named): no symbol file can name it");
	else if (is_system_path(m->path))
		snprintf(buf, len,
			 "install the -dbgsym package of the package holding it "
			 "(dpkg -S %s)",
			 m->path);
	else
		snprintf(buf, len,
			 "build it with -g and do not strip it (or keep its debug file "
			 "under /usr/lib/debug/.build-id)");
	return buf;
}

void summary_print_unresolved(FILE *out, const struct diagnosis *d, const char *what)
{
	char share[32], remedy[REMEDY_MAX];
	double rest = 0;
	size_t i, shown;

	if (!d->counter)
		return;
	fprintf(out, "  - unresolved: %s of the %s is in code no symbol names\n",
		summary_fmt_share(share, sizeof(share), d->unresolved_share), what);
	shown = d->n_unresolved_modules < SUMMARY_MAX_UNRESOLVED_MODULES
		    ? d->n_unresolved_modules
		    : SUMMARY_MAX_UNRESOLVED_MODULES;
	for (i = 0; i < shown; i++) {
		const struct unresolved_module *m = &d->unresolved_modules[i];

		fprintf(out, "    %6s in %s", summary_fmt_share(share, sizeof(share), m->share),
			m->module);
		if (strcmp(m->path, m->module) && m->path[0])
			fprintf(out, " (%s)", m->path);
		fprintf(out, ": %s\n", summary_unresolved_remedy(m, remedy, sizeof(remedy)));
	}
	for (i = shown; i < d->n_unresolved_modules; i++)
		rest += d->unresolved_modules[i].share;
	if (shown < d->n_unresolved_modules)
		fprintf(out, "    %6s in %zu other modules\n",
			summary_fmt_share(share, sizeof(share), rest),
			d->n_unresolved_modules - shown);
}

json_t *summary_unresolved_json(const struct diagnosis *d)
{
	char remedy[REMEDY_MAX];
	json_t *a = json_array(), *o;
	size_t i;

	for (i = 0; a && i < d->n_unresolved_modules; i++) {
		const struct unresolved_module *m = &d->unresolved_modules[i];

		o = json_pack("{s:o, s:o, s:o, s:I, s:o, s:o}", "module", json_text(m->module),
			      "path", json_text(m->path), "identity", json_text(m->identity),
			      "samples", (json_int_t)m->samples, "share",
			      summary_json_number(m->share), "remedy",
			      json_text(summary_unresolved_remedy(m, remedy, sizeof(remedy))));
		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}
