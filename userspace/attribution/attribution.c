/* attribution — see attribution.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/attribution/attribution.h"
#include "userspace/attribution/own_code.h"
#include "userspace/attribution/symbolizer.h"
#include "userspace/elf/elf_file.h"
#include "userspace/elf/elf_open.h"
#include "userspace/log/log.h"
#include "userspace/unwind/unwind_table.h"

const char *resolution_level_name(enum resolution_level l)
{
	switch (l) {
	case RESOLUTION_LINE:
		return "line";
	case RESOLUTION_FUNCTION:
		return "function";
	case RESOLUTION_SYMBOL:
		return "symbol";
	case RESOLUTION_UNRESOLVED:
		return "unresolved";
	}
	return "invalid";
}

void attributed_address_release(struct attributed_address *a)
{
	size_t i;

	if (!a)
		return;
	for (i = 0; i < a->n_frames && a->frames; i++) {
		free(a->frames[i].function);
		free(a->frames[i].file);
	}
	free(a->frames);
	free(a->function);
	free(a->source_file);
	memset(a, 0, sizeof(*a));
}

static void set_reason(char *reason, size_t reasonlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_reason(char *reason, size_t reasonlen, const char *fmt, ...)
{
	va_list ap;

	if (!reason || !reasonlen)
		return;
	va_start(ap, fmt);
	vsnprintf(reason, reasonlen, fmt, ap);
	va_end(ap);
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* "??" is llvm-symbolizer's way to say it does not know */
static int known_name(const char *s)
{
	return s && s[0] && strcmp(s, "??") != 0;
}

static char *strdup_or_null(const char *s)
{
	return s && s[0] ? strdup(s) : NULL;
}

/* Empties a and makes it the unresolved Hotspot "MODULE+0x1a2b" that
 * starts at start (the address itself, or its FDE extent's start). */
static int attribution_set_unresolved(struct attributed_address *a, uint64_t address,
				      const char *display_name, uint64_t start)
{
	attributed_address_release(a);
	a->address = address;
	a->level = RESOLUTION_UNRESOLVED;
	a->function_start = start;
	if (asprintf(&a->function, "%s+0x%llx", display_name, (unsigned long long)start) < 0) {
		a->function = NULL;
		return -ENOMEM;
	}
	return 0;
}

static int has_dwarf_line(const struct symbolizer_result *r)
{
	return r->n_frames > 0 && r->frames[0].file[0] && r->frames[0].line > 0;
}

/* whether any frame carries DWARF (a file name): symtab-only answers do not
 * make an inline chain */
static int has_dwarf_frames(const struct symbolizer_result *r)
{
	size_t i;

	for (i = 0; i < r->n_frames; i++) {
		if (r->frames[i].file[0])
			return 1;
	}
	return 0;
}

static int copy_inline_chain(struct attributed_address *a, const struct symbolizer_result *r)
{
	const struct symbolizer_frame *outermost = &r->frames[r->n_frames - 1];
	size_t i;

	a->frames = calloc(r->n_frames, sizeof(*a->frames));
	if (!a->frames)
		return -ENOMEM;
	a->n_frames = r->n_frames;
	for (i = 0; i < r->n_frames; i++) {
		const struct symbolizer_frame *sf = &r->frames[i];
		struct attribution_frame *af = &a->frames[i];

		if (known_name(sf->function) && !(af->function = strdup(sf->function)))
			return -ENOMEM;
		if (sf->file[0] && !(af->file = strdup(sf->file)))
			return -ENOMEM;
		af->line = sf->line;
		af->column = sf->column;
	}
	/* where the physical function is declared; the file of its line as a
	 * fallback (older tools and some compilers give no StartFileName) */
	a->source_file =
	    strdup_or_null(outermost->start_file[0] ? outermost->start_file : outermost->file);
	if ((outermost->start_file[0] || outermost->file[0]) && !a->source_file)
		return -ENOMEM;
	a->start_line = outermost->start_file[0] ? outermost->start_line : 0;
	return 0;
}

/* Applies the rules of attribution.h to one address. sym is NULL when no
 * symbol covers the address; r may have no frames (no symbolizer). */
static int attribute_address(struct attributed_address *a, const struct elf_symbol *sym,
			     const struct symbolizer_result *r)
{
	const struct symbolizer_frame *outermost = r->n_frames ? &r->frames[r->n_frames - 1] : NULL;
	int dwarf_line = has_dwarf_line(r);
	const char *name;
	char *dup;

	if (sym) {
		name =
		    outermost && known_name(outermost->function) ? outermost->function : sym->name;
		a->function_start = sym->start;
		if (dwarf_line)
			a->level = RESOLUTION_LINE;
		else
			a->level = sym->from_dynsym ? RESOLUTION_SYMBOL : RESOLUTION_FUNCTION;
	} else if (dwarf_line && known_name(outermost->function)) {
		/* DWARF knows a function that no ELF symbol describes (e.g. a
		 * symbol-less object with debug info): it is not a neighbour */
		name = outermost->function;
		a->function_start =
		    outermost->has_start_address ? outermost->start_address : a->address;
		a->level = RESOLUTION_LINE;
	} else {
		return 0; /* stays unresolved */
	}

	dup = strdup(name);
	if (!dup)
		return -ENOMEM;
	free(a->function);
	a->function = dup;
	if (dwarf_line)
		a->line = r->frames[0].line;
	if (has_dwarf_frames(r))
		return copy_inline_chain(a, r);
	return 0;
}

/* The addresses left unresolved that an FDE extent covers become the
 * unresolved Hotspot of that extent: "MODULE+0xSTART", function_start
 * START, one per function. fd is the module file. No CFI (or an
 * unreadable one) leaves each its own; 0 or -ENOMEM. */
static int name_by_extents(int fd, const char *display_name, struct attributed_address *out,
			   size_t n)
{
	struct fde_extent *extents = NULL;
	size_t n_extents, i;
	int err, k;

	for (i = 0; i < n && out[i].level != RESOLUTION_UNRESOLVED; i++)
		;
	if (i == n)
		return 0;
	err = unwind_fde_extents(fd, &extents, &n_extents);
	if (err)
		return err == -ENOMEM ? err : 0;
	for (; i < n && !err; i++) {
		if (out[i].level != RESOLUTION_UNRESOLVED)
			continue;
		k = unwind_fde_extent_find(extents, n_extents, out[i].address);
		if (k < 0)
			continue;
		err = attribution_set_unresolved(&out[i], out[i].address, display_name,
						 extents[k].start);
	}
	free(extents);
	return err;
}

/* The module at path, as a descriptor (what its extents are read from)
 * and the elf_file of the same inode: what is named is the one file, and
 * the one sampled (expected_identity, NULL: unchecked). 0, or -errno with
 * *reason said (-ESTALE: another identity now); *fd -1 and *elf NULL
 * then, or left for the caller to close and free. */
static int open_module(const char *path, const char *expected_identity, int *fd,
		       struct elf_file **elf, char *reason, size_t reasonlen)
{
	struct stat st;
	int err;

	*fd = elf_open_regular(path, 0, &st);
	*elf = *fd < 0 ? NULL : elf_file__open_mapped(path, (uint64_t)st.st_ino);
	if (!*elf) {
		err = *fd < 0 ? *fd : -errno;
		set_reason(reason, reasonlen, "cannot read module '%s': %s", path, strerror(-err));
		return err;
	}
	if (expected_identity && strcmp(elf_file__identity(*elf), expected_identity) != 0) {
		set_reason(reason, reasonlen,
			   "module '%s' changed after sampling: identity %s at sampling, %s now",
			   path, expected_identity, elf_file__identity(*elf));
		return -ESTALE;
	}
	return 0;
}

/* given: symbolizer results computed by the caller (given_err their
 * error), or NULL to run the symbolizer here */
static int attribute(const char *symbolizer_tool, const char *path, const char *display_name,
		     const char *expected_identity, const uint64_t *addrs, size_t n,
		     struct symbolizer_result *given, int given_err,
		     struct attributed_address *out, int *symbolizer_missing, char *reason,
		     size_t reasonlen)
{
	struct symbolizer_result *results = NULL;
	struct elf_file *elf = NULL;
	size_t i;
	int err = 0, sym_err, fd = -1;

	if (!path || (n && (!addrs || !out)))
		return -EINVAL;
	if (!display_name)
		display_name = basename_of(path);
	if (symbolizer_missing)
		*symbolizer_missing = 0;
	set_reason(reason, reasonlen, "%s", "");

	/* unresolved first: every error path below leaves storable entries */
	for (i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		if (attribution_set_unresolved(&out[i], addrs[i], display_name, addrs[i]))
			err = -ENOMEM;
	}
	if (err)
		goto cleanup;
	if (n == 0)
		goto cleanup;
	if (expected_identity && !strcmp(expected_identity, OWN_CODE_UPROBES_IDENTITY)) {
		for (i = 0; i < n; i++) { /* one function: nunatak's trampoline page */
			out[i].level = RESOLUTION_FUNCTION;
			out[i].function_start = 0;
			free(out[i].function);
			out[i].function = strdup(OWN_CODE_TRAMPOLINE_NAME);
			if (!out[i].function)
				err = -ENOMEM;
		}
		goto cleanup;
	}

	err = open_module(path, expected_identity, &fd, &elf, reason, reasonlen);
	if (err)
		goto cleanup;

	if (given) {
		sym_err = given_err;
	} else {
		results = calloc(n, sizeof(*results));
		if (!results) {
			err = -ENOMEM;
			goto cleanup;
		}
		sym_err = symbolizer_tool ? symbolizer_run(symbolizer_tool, path, addrs, n, results)
					  : -ENOENT;
	}
	if (sym_err == -ENOENT) {
		if (symbolizer_missing)
			*symbolizer_missing = 1;
		set_reason(reason, reasonlen,
			   "symbolizer '%s' not found: '%s' named from its elf symbols only",
			   symbolizer_tool ? symbolizer_tool : "(none)", path);
	} else if (sym_err == -ENOMEM) {
		err = sym_err;
		goto cleanup;
	} else if (sym_err) {
		pr_warn("symbolizer '%s' failed on '%s': %s", symbolizer_tool, path,
			strerror(-sym_err));
		set_reason(reason, reasonlen,
			   "symbolizer '%s' failed on '%s': named from its elf symbols only",
			   symbolizer_tool, path);
	}

	for (i = 0; i < n; i++) {
		struct elf_symbol sym;
		int found = elf_file__find_symbol(elf, addrs[i], &sym) == 0;

		err = attribute_address(&out[i], found ? &sym : NULL,
					given ? &given[i] : &results[i]);
		if (err) {
			/* a half-named entry is worse than an unresolved one */
			attribution_set_unresolved(&out[i], addrs[i], display_name, addrs[i]);
			goto cleanup;
		}
	}
	err = name_by_extents(fd, display_name, out, n);

cleanup:
	if (results) {
		for (i = 0; i < n; i++)
			symbolizer_result_release(&results[i]);
	}
	free(results);
	elf_file__free(elf);
	if (fd >= 0)
		close(fd);
	return err;
}

int attribution_attribute_module(const char *symbolizer_tool, const char *path,
				 const char *display_name, const char *expected_identity,
				 const uint64_t *addrs, size_t n, struct attributed_address *out,
				 int *symbolizer_missing, char *reason, size_t reasonlen)
{
	return attribute(symbolizer_tool, path, display_name, expected_identity, addrs, n, NULL, 0,
			 out, symbolizer_missing, reason, reasonlen);
}

int attribution_attribute_symbolized(const char *symbolizer_tool, const char *path,
				     const char *display_name, const char *expected_identity,
				     const uint64_t *addrs, size_t n,
				     struct symbolizer_result *results, int symbolizer_err,
				     struct attributed_address *out, int *symbolizer_missing,
				     char *reason, size_t reasonlen)
{
	if (n && !results)
		return -EINVAL;
	return attribute(symbolizer_tool, path, display_name, expected_identity, addrs, n, results,
			 symbolizer_err, out, symbolizer_missing, reason, reasonlen);
}
