/* kernel_symbols — see kernel_symbols.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "userspace/agent/bpf_extents.h"
#include "userspace/agent/kernel_symbols.h"
#include "userspace/log/log.h"

#define KALLSYMS_MAX_BYTES (256u << 20) /* far above any kernel's (~6 MB) */

struct kernel_symbols {
	char *path;
	char *text;		       /* the file, its lines cut in place: names point in */
	struct kernel_symbol *symbols; /* sorted by start, disjoint */
	size_t n;
	uint64_t base;
	int hidden;
};

/* one line of the file, before the choice among aliases */
struct raw_symbol {
	uint64_t addr;
	const char *name;  /* "name" or "name [module]" */
	const char *owner; /* "[module]", NULL for the kernel image */
	int text;	   /* t, T, w, W */
	int rank;	   /* among aliases: lower is preferred */
	size_t order;	   /* line number: the last tie-break */
};

static int read_all(const char *path, char **out)
{
	size_t len = 0, cap = 1 << 20;
	char *buf = malloc(cap), *grown;
	ssize_t got;
	int fd, err = 0;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	for (;;) {
		if (cap - len < 65536) {
			if (cap >= KALLSYMS_MAX_BYTES) {
				err = -EFBIG;
				goto cleanup;
			}
			grown = realloc(buf, cap * 2);
			if (!grown) {
				err = -ENOMEM;
				goto cleanup;
			}
			buf = grown;
			cap *= 2;
		}
		got = read(fd, buf + len, cap - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = -errno;
			goto cleanup;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	buf[len] = '\0';
	grown = realloc(buf, len + 1); /* the names stay in it: no slack kept */
	if (grown)
		buf = grown;
cleanup:
	if (fd >= 0)
		close(fd);
	if (err)
		free(buf);
	else
		*out = buf;
	return err;
}

static int leading_underscores(const char *s)
{
	int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* Cuts one line "ADDR TYPE NAME[\t[MODULE]]" in place. 0, or -EINVAL for
 * a line that is not a symbol (skipped). */
static int parse_line(char *line, struct raw_symbol *r)
{
	char *end, *name, *tab;
	static const char types[] = "TWtw";
	const char *t;

	r->addr = strtoull(line, &end, 16);
	if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ' || !end[3])
		return -EINVAL;
	t = strchr(types, end[1]);
	r->text = t != NULL;
	name = end + 3;
	r->owner = NULL;
	tab = strchr(name, '\t');
	if (tab) {
		*tab = ' '; /* "name\t[module]" becomes "name [module]" */
		r->owner = tab + 1;
	}
	r->name = name;
	r->rank = leading_underscores(name) * 8 + (t ? (int)(t - types) : 4);
	if (!r->text)
		r->rank += 1 << 20; /* an alias that is text is always preferred */
	return 0;
}

static int raw_cmp(const void *a, const void *b)
{
	const struct raw_symbol *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return (x->order > y->order) - (x->order < y->order);
}

static int same_owner(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return !strcmp(a, b);
}

/* Every line of text into *raw (sorted), the text base into *base. */
static int parse_all(char *text, struct raw_symbol **raw, size_t *n, uint64_t *base, int *hidden)
{
	struct raw_symbol *r = NULL, *grown;
	size_t len = 0, cap = 0, order = 0;
	int have_text = 0, have_stext = 0;
	uint64_t stext = 0;
	char *line, *next;

	*hidden = 1;
	*base = 0;
	for (line = text; *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		if (len == cap) {
			cap = cap ? 2 * cap : 65536;
			grown = reallocarray(r, cap, sizeof(*r));
			if (!grown) {
				free(r);
				return -ENOMEM;
			}
			r = grown;
		}
		if (parse_line(line, &r[len]))
			continue;
		r[len].order = order++;
		if (r[len].addr)
			*hidden = 0;
		if (!r[len].owner && !strcmp(r[len].name, "_text")) {
			have_text = 1;
			*base = r[len].addr;
		} else if (!r[len].owner && !strcmp(r[len].name, "_stext")) {
			have_stext = 1;
			stext = r[len].addr;
		}
		len++;
	}
	if (!have_text && have_stext)
		*base = stext;
	if (!*hidden && !have_text && !have_stext) {
		free(r);
		return -ENODATA;
	}
	qsort(r, len, sizeof(*r), raw_cmp);
	*raw = r;
	*n = len;
	return 0;
}

/* The text symbols at or above the base, one per address, each bounded by
 * the next address of the same owner; a BPF program's function by its
 * JIT image's length when ext (sorted, n_ext) has its address, and by the
 * next address of any owner. */
static int keep_symbols(const struct raw_symbol *raw, size_t n, uint64_t base,
			const struct bpf_extent *ext, size_t n_ext, struct kernel_symbol **out,
			size_t *n_out)
{
	struct kernel_symbol *s = calloc(n ? n : 1, sizeof(*s));
	const struct bpf_extent *x;
	size_t i, next, k = 0;
	uint64_t size;

	if (!s)
		return -ENOMEM;
	for (i = 0; i < n; i = next) {
		/* raw[i] is the preferred alias of its address */
		for (next = i + 1; next < n && raw[next].addr == raw[i].addr; next++)
			;
		if (!raw[i].text || raw[i].addr < base)
			continue;
		x = raw[i].owner && !strcmp(raw[i].owner, "[bpf]")
			? bpf_extents_find(ext, n_ext, raw[i].addr)
			: NULL;
		if (x) {
			size = x->len;
			if (next < n && raw[next].addr - raw[i].addr < size)
				size = raw[next].addr - raw[i].addr;
		} else if (next == n || !same_owner(raw[i].owner, raw[next].owner)) {
			continue;
		} else {
			size = raw[next].addr - raw[i].addr;
		}
		s[k].name = raw[i].name;
		s[k].start = raw[i].addr - base;
		s[k].size = size;
		k++;
	}
	*out = s;
	*n_out = k;
	return 0;
}

/* Reads path into the fields of a fresh table. */
static int load(struct kernel_symbols *ks, const char *path)
{
	struct raw_symbol *raw = NULL;
	struct bpf_extent *ext = NULL;
	size_t n_raw = 0, n_ext = 0;
	int err;

	err = read_all(path, &ks->text);
	if (err)
		return err;
	err = parse_all(ks->text, &raw, &n_raw, &ks->base, &ks->hidden);
	if (!err && !ks->hidden) {
		/* without the programs' extents (not root): kallsyms' bounds */
		if (bpf_extents_read(&ext, &n_ext))
			n_ext = 0;
		err = keep_symbols(raw, n_raw, ks->base, ext, n_ext, &ks->symbols, &ks->n);
	}
	free(ext);
	free(raw);
	if (err)
		return err;
	pr_debug("kernel symbols: %zu text symbols from '%s'%s", ks->n, path,
		 ks->hidden ? " (addresses hidden)" : "");
	return 0;
}

static void release(struct kernel_symbols *ks)
{
	free(ks->text);
	free(ks->symbols);
	ks->text = NULL;
	ks->symbols = NULL;
	ks->n = 0;
}

struct kernel_symbols *kernel_symbols__new(const char *path)
{
	struct kernel_symbols *ks = calloc(1, sizeof(*ks));
	int err;

	if (!ks)
		return NULL;
	ks->path = strdup(path ? path : KERNEL_SYMBOLS_PATH);
	if (!ks->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = load(ks, ks->path);
	if (err)
		goto cleanup;
	return ks;
cleanup:
	kernel_symbols__free(ks);
	errno = -err;
	return NULL;
}

void kernel_symbols__free(struct kernel_symbols *ks)
{
	if (!ks)
		return;
	release(ks);
	free(ks->path);
	free(ks);
}

int kernel_symbols_reload(struct kernel_symbols *ks)
{
	struct kernel_symbols fresh = {.path = ks->path};
	int err;

	err = load(&fresh, ks->path);
	if (err) {
		release(&fresh);
		return err;
	}
	release(ks);
	*ks = fresh;
	return 0;
}

int kernel_symbols_hidden(const struct kernel_symbols *ks)
{
	return ks->hidden;
}

size_t kernel_symbols_count(const struct kernel_symbols *ks)
{
	return ks->n;
}

int kernel_symbols_resolve(const struct kernel_symbols *ks, uint64_t ip, uint64_t *offset,
			   struct kernel_symbol *sym)
{
	size_t lo = 0, hi = ks->n, mid;
	uint64_t off;

	if (ks->hidden || ip < ks->base) {
		*offset = 0;
		return -ENOENT;
	}
	off = ip - ks->base;
	*offset = off;
	/* the last symbol starting at or before off */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ks->symbols[mid].start <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || off - ks->symbols[lo - 1].start >= ks->symbols[lo - 1].size)
		return -ENOENT;
	if (sym)
		*sym = ks->symbols[lo - 1];
	return 0;
}

/* the integer in a /proc/sys file, -1 when unreadable */
static int read_sysctl(const char *path)
{
	FILE *f = fopen(path, "re");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

const char *kernel_symbols_degradation_message(int err, char *buf, size_t len)
{
	char why[128];

	if (err) {
		snprintf(buf, len,
			 "kernel frames are not named: cannot read %s (%s): kernel time is one "
			 "[kernel] Hotspot",
			 KERNEL_SYMBOLS_PATH, errno_text(err, why, sizeof(why)));
		return buf;
	}
	/* the kernel shows the addresses to CAP_SYSLOG, or to anyone when
	 * kptr_restrict is 0 and perf_event_paranoid at most 1 */
	snprintf(buf, len,
		 "kernel addresses are hidden (kptr_restrict=%d, perf_event_paranoid=%d, effective "
		 "uid %u without CAP_SYSLOG): kernel time is one [kernel] Hotspot, its functions "
		 "are not named",
		 read_sysctl("/proc/sys/kernel/kptr_restrict"),
		 read_sysctl("/proc/sys/kernel/perf_event_paranoid"), (unsigned)geteuid());
	return buf;
}

const char *kernel_symbols_degradation_remedy(int err)
{
	if (err)
		return "use a kernel built with CONFIG_KALLSYMS and a readable /proc/kallsyms";
	return "run the Agent as root (CAP_SYSLOG) with kernel.kptr_restrict at most 1, or set "
	       "kernel.kptr_restrict=0 and kernel.perf_event_paranoid=1 (sysctl -w) while "
	       "profiling";
}
