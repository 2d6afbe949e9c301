/* component_symbols — see component_symbols.h. */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/component_symbols.h"
#include "userspace/elf/elf_file.h"

/* libstdc++'s demangler (C++ ABI), declared here for C */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *component_demangle(const char *raw)
{
	char *out = NULL;
	int status = -1;

	if (!strncmp(raw, "_Z", 2))
		out = __cxa_demangle(raw, NULL, NULL, &status);
	if (out && !status)
		return out;
	free(out);
	out = strdup(raw);
	if (!out)
		errno = ENOMEM;
	return out;
}

size_t component_name_base_len(const char *name)
{
	static const char anon[] = "(anonymous namespace)";
	int angle = 0;
	size_t i;

	for (i = 0; name[i]; i++) {
		if (!strncmp(name + i, anon, sizeof(anon) - 1)) {
			i += sizeof(anon) - 2;
			continue;
		}
		if (name[i] == '<')
			angle++;
		else if (name[i] == '>' && angle > 0)
			angle--;
		else if (name[i] == '(' && !angle && i >= 8 &&
			 !strncmp(name + i - 8, "operator", 8))
			i += name[i + 1] == ')'; /* operator() is a name, not a parameter list */
		else if (name[i] == '(' && !angle && i > 0)
			return i;
	}
	return i;
}

int component_pattern_match(const char *pattern, const char *name)
{
	size_t base = component_name_base_len(name);
	char buf[1024];

	if (!strcmp(pattern, name) || !fnmatch(pattern, name, 0))
		return 1;
	if (!name[base] || base >= sizeof(buf))
		return 0;
	memcpy(buf, name, base);
	buf[base] = '\0';
	return !strcmp(pattern, buf) || !fnmatch(pattern, buf, 0);
}

struct select_ctx {
	const struct elf_file *elf;
	const char *const *patterns;
	size_t n;
	int (*cb)(const struct component_symbol *s, void *ctx);
	void *ctx;
	uint64_t last_start; /* aliases follow each other in address order */
	int have_last;
};

static int select_one(const struct elf_symbol *sym, void *arg)
{
	struct select_ctx *sc = arg;
	struct component_symbol cs;
	char *name;
	size_t i;
	int err = 0;

	if (sc->have_last && sym->start == sc->last_start)
		return 0;
	name = component_demangle(sym->name);
	if (!name)
		return -ENOMEM;
	for (i = 0; i < sc->n; i++)
		if (component_pattern_match(sc->patterns[i], name))
			break;
	if (i < sc->n && !elf_file__vaddr_to_offset(sc->elf, sym->start, &cs.offset)) {
		cs.name = name;
		cs.pattern = i;
		sc->last_start = sym->start;
		sc->have_last = 1;
		err = sc->cb(&cs, sc->ctx);
	}
	free(name);
	return err;
}

int component_symbols_select(const struct elf_file *elf, const char *const *patterns, size_t n,
			     int (*cb)(const struct component_symbol *s, void *ctx), void *ctx)
{
	struct select_ctx sc = {elf, patterns, n, cb, ctx, 0, 0};

	return elf_file__for_each_function(elf, select_one, &sc);
}
