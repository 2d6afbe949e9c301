/* elf_file — see elf_file.h. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/elf/elf_file.h"
#include "userspace/elf/elf_open.h"
#include "userspace/log/log.h"

#define IDENTITY_WINDOW_BYTES (64 * 1024)
#define FNV1A_OFFSET_BASIS 0xcbf29ce484222325ULL
#define FNV1A_PRIME 0x100000001b3ULL
#define BUILD_ID_MAX_BYTES 64

/* Lower rank wins when several symbols cover an address. */
enum sym_rank {
	SYM_RANK_GLOBAL = 0,
	SYM_RANK_WEAK = 1,
	SYM_RANK_LOCAL = 2,
};

struct load_segment {
	uint64_t offset;
	uint64_t filesz;
	uint64_t vaddr;
};

struct func_sym {
	uint64_t start;
	uint64_t size;
	size_t name_off; /* into elf_file.names: an offset survives realloc */
	int rank;
};

/* Function (or data object) symbols of one symbol table, sorted by start. max_end[i] is the
 * highest end among syms[0..i]: it bounds the backward scan of a lookup, so
 * a long symbol that starts early still covers what it covers. */
struct sym_table {
	struct func_sym *syms;
	uint64_t *max_end;
	size_t n;
	size_t cap;
};

struct elf_file {
	char *build_id;		    /* NULL when none */
	char fallback_identity[32]; /* "nobuildid:" + 16 hex, only without build-id */
	int is_dyn;
	int has_symtab;
	int has_debug_info;
	struct load_segment *segs;
	size_t nsegs;
	struct sym_table symtab; /* functions */
	struct sym_table dynsym;
	struct sym_table symtab_objects; /* data objects (STT_OBJECT) */
	struct sym_table dynsym_objects;
	char *names;
	size_t names_len;
	size_t names_cap;
};

static uint64_t fnv1a_update(uint64_t h, const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= FNV1A_PRIME;
	}
	return h;
}

static int pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, off + (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO; /* the file shrank under us */
		done += (size_t)n;
	}
	return 0;
}

/* The stated fallback identity: see elf_file.h. */
static int compute_fallback_identity(int fd, uint64_t size, char *out, size_t outlen)
{
	unsigned char size_le[8];
	unsigned char *buf;
	size_t window = size < IDENTITY_WINDOW_BYTES ? (size_t)size : IDENTITY_WINDOW_BYTES;
	uint64_t h = FNV1A_OFFSET_BASIS;
	int err;

	for (int i = 0; i < 8; i++)
		size_le[i] = (unsigned char)(size >> (8 * i));
	h = fnv1a_update(h, size_le, sizeof(size_le));

	buf = malloc(window ? window : 1);
	if (!buf)
		return -ENOMEM;
	err = pread_full(fd, buf, window, 0);
	if (err)
		goto cleanup;
	h = fnv1a_update(h, buf, window);
	err = pread_full(fd, buf, window, (off_t)(size - window));
	if (err)
		goto cleanup;
	h = fnv1a_update(h, buf, window);
	snprintf(out, outlen, "nobuildid:%016llx", (unsigned long long)h);
cleanup:
	free(buf);
	return err;
}

static int names_add(struct elf_file *f, const char *name, size_t *off)
{
	size_t len = strlen(name) + 1;

	if (f->names_len + len > f->names_cap) {
		size_t cap = f->names_cap ? f->names_cap : 4096;
		char *p;

		while (cap < f->names_len + len)
			cap *= 2;
		p = realloc(f->names, cap);
		if (!p)
			return -ENOMEM;
		f->names = p;
		f->names_cap = cap;
	}
	memcpy(f->names + f->names_len, name, len);
	*off = f->names_len;
	f->names_len += len;
	return 0;
}

static int sym_table_push(struct sym_table *t, const struct func_sym *s)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct func_sym *p = realloc(t->syms, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		t->syms = p;
		t->cap = cap;
	}
	t->syms[t->n++] = *s;
	return 0;
}

static uint64_t sym_end(const struct func_sym *s)
{
	return s->start + s->size < s->start ? UINT64_MAX : s->start + s->size;
}

static int cmp_sym_start(const void *a, const void *b)
{
	const struct func_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	return x->rank - y->rank;
}

static int sym_table_finish(struct sym_table *t)
{
	uint64_t max_end = 0;

	if (!t->n)
		return 0;
	qsort(t->syms, t->n, sizeof(*t->syms), cmp_sym_start);
	t->max_end = malloc(t->n * sizeof(*t->max_end));
	if (!t->max_end)
		return -ENOMEM;
	for (size_t i = 0; i < t->n; i++) {
		uint64_t end = sym_end(&t->syms[i]);

		if (end > max_end)
			max_end = end;
		t->max_end[i] = max_end;
	}
	return 0;
}

static void sym_table_release(struct sym_table *t)
{
	free(t->syms);
	free(t->max_end);
	memset(t, 0, sizeof(*t));
}

/* Sorts the function symbols of one symbol table into funcs, its data
 * objects into objects. */
static int load_symbols(struct elf_file *f, Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr,
			struct sym_table *funcs, struct sym_table *objects)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !shdr->sh_entsize)
		return 0;
	n = shdr->sh_size / shdr->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		struct sym_table *t;
		struct func_sym s;
		GElf_Sym sym;
		const char *name;
		int type, bind, err;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		bind = GELF_ST_BIND(sym.st_info);
		if (type == STT_FUNC || type == STT_GNU_IFUNC)
			t = funcs;
		else if (type == STT_OBJECT) /* not STT_TLS: its value is no vaddr */
			t = objects;
		else
			continue;
		if (!sym.st_size || sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, shdr->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		s.start = sym.st_value;
		s.size = sym.st_size;
		s.rank = bind == STB_GLOBAL ? SYM_RANK_GLOBAL
			 : bind == STB_WEAK ? SYM_RANK_WEAK
					    : SYM_RANK_LOCAL;
		err = names_add(f, name, &s.name_off);
		if (err)
			return err;
		err = sym_table_push(t, &s);
		if (err)
			return err;
	}
	return 0;
}

static int set_build_id(struct elf_file *f, const unsigned char *desc, size_t len)
{
	if (!len || len > BUILD_ID_MAX_BYTES)
		return 0; /* not a build-id we can trust: fall back */
	f->build_id = malloc(2 * len + 1);
	if (!f->build_id)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		sprintf(f->build_id + 2 * i, "%02x", desc[i]);
	return 0;
}

/* Returns 1 when a build-id note was found in data, 0 when not, -errno. */
static int scan_notes(struct elf_file *f, Elf_Data *data)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nhdr;

	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 &&
		    !memcmp((char *)data->d_buf + name_off, "GNU", 4)) {
			int err =
			    set_build_id(f, (unsigned char *)data->d_buf + desc_off, nhdr.n_descsz);

			return err ? err : 1;
		}
		off = next;
	}
	return 0;
}

static int read_sections(struct elf_file *f, Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int err;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0; /* no section headers: phdrs still work */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *name;

		if (!gelf_getshdr(scn, &shdr))
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && !strcmp(name, ".debug_info"))
			f->has_debug_info = 1;
		switch (shdr.sh_type) {
		case SHT_SYMTAB:
			f->has_symtab = 1;
			err = load_symbols(f, elf, scn, &shdr, &f->symtab, &f->symtab_objects);
			if (err)
				return err;
			break;
		case SHT_DYNSYM:
			err = load_symbols(f, elf, scn, &shdr, &f->dynsym, &f->dynsym_objects);
			if (err)
				return err;
			break;
		case SHT_NOTE:
			if (!f->build_id) {
				Elf_Data *data = elf_getdata(scn, NULL);

				err = data ? scan_notes(f, data) : 0;
				if (err < 0)
					return err;
			}
			break;
		default:
			break;
		}
	}
	err = sym_table_finish(&f->symtab);
	if (!err)
		err = sym_table_finish(&f->dynsym);
	if (!err)
		err = sym_table_finish(&f->symtab_objects);
	if (!err)
		err = sym_table_finish(&f->dynsym_objects);
	return err;
}

static int read_segments(struct elf_file *f, Elf *elf)
{
	size_t phnum;

	if (elf_getphdrnum(elf, &phnum))
		return 0;
	f->segs = calloc(phnum ? phnum : 1, sizeof(*f->segs));
	if (!f->segs)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr phdr;

		if (!gelf_getphdr(elf, (int)i, &phdr))
			continue;
		if (phdr.p_type == PT_NOTE && !f->build_id) {
			/* section headers may be gone (sstrip); the note is still mapped */
			Elf_Data *data = elf_getdata_rawchunk(elf, (int64_t)phdr.p_offset,
							      phdr.p_filesz, ELF_T_NHDR);
			int err = data ? scan_notes(f, data) : 0;

			if (err < 0)
				return err;
		}
		if (phdr.p_type != PT_LOAD)
			continue;
		/* an extent past 2^64 maps nothing (a corrupt file): kept, it
		 * would wrap and answer a vaddr that no offset converts back */
		if (phdr.p_offset + phdr.p_filesz < phdr.p_offset ||
		    phdr.p_vaddr + phdr.p_filesz < phdr.p_vaddr)
			continue;
		f->segs[f->nsegs].offset = phdr.p_offset;
		f->segs[f->nsegs].filesz = phdr.p_filesz;
		f->segs[f->nsegs].vaddr = phdr.p_vaddr;
		f->nsegs++;
	}
	return 0;
}

struct elf_file *elf_file__open(const char *path)
{
	return elf_file__open_mapped(path, 0);
}

struct elf_file *elf_file__open_mapped(const char *path, uint64_t inode)
{
	struct elf_file *f = NULL;
	Elf *elf = NULL;
	GElf_Ehdr ehdr;
	struct stat st;
	int fd, err = 0;

	fd = elf_open_regular(path, inode, &st);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		err = -ENOSYS;
		goto cleanup;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		err = -ENOMEM;
		goto cleanup;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr)) {
		pr_debug("not an elf file '%s': %s", path, elf_errmsg(-1));
		err = -ENOEXEC;
		goto cleanup;
	}
	f->is_dyn = ehdr.e_type == ET_DYN;
	err = read_sections(f, elf);
	if (err)
		goto cleanup;
	err = read_segments(f, elf);
	if (err)
		goto cleanup;
	if (!f->build_id)
		err = compute_fallback_identity(fd, (uint64_t)st.st_size, f->fallback_identity,
						sizeof(f->fallback_identity));
	if (err)
		pr_warn("cannot identify '%s': %s", path, strerror(-err));
cleanup:
	if (elf)
		elf_end(elf);
	close(fd);
	if (err) {
		elf_file__free(f);
		errno = -err;
		return NULL;
	}
	return f;
}

void elf_file__free(struct elf_file *f)
{
	if (!f)
		return;
	sym_table_release(&f->dynsym_objects);
	sym_table_release(&f->symtab_objects);
	sym_table_release(&f->dynsym);
	sym_table_release(&f->symtab);
	free(f->segs);
	free(f->names);
	free(f->build_id);
	free(f);
}

const char *elf_file__build_id(const struct elf_file *f)
{
	return f->build_id;
}

const char *elf_file__identity(const struct elf_file *f)
{
	return f->build_id ? f->build_id : f->fallback_identity;
}

int elf_file__is_pie_or_shared(const struct elf_file *f)
{
	return f->is_dyn;
}

int elf_file__has_symtab(const struct elf_file *f)
{
	return f->has_symtab;
}

int elf_file__has_debug_info(const struct elf_file *f)
{
	return f->has_debug_info;
}

int elf_file__offset_to_vaddr(const struct elf_file *f, uint64_t file_offset, uint64_t *vaddr)
{
	for (size_t i = 0; i < f->nsegs; i++) {
		const struct load_segment *s = &f->segs[i];

		if (file_offset >= s->offset && file_offset - s->offset < s->filesz) {
			*vaddr = file_offset - s->offset + s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

int elf_file__mapping_vaddr(const struct elf_file *f, uint64_t pgoff, uint64_t *vaddr)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	for (size_t i = 0; i < f->nsegs; i++) {
		const struct load_segment *s = &f->segs[i];

		/* the kernel maps a segment from the page holding its first
		 * byte; file and memory stay in step from there */
		if ((s->offset & ~(page - 1)) <= pgoff && pgoff < s->offset + s->filesz) {
			*vaddr = s->vaddr + pgoff - s->offset;
			return 0;
		}
	}
	return -ENOENT;
}

/* Is a a better name for an address than b? See elf_file__find_symbol(). */
static int sym_better(const struct elf_file *f, const struct func_sym *a, const struct func_sym *b)
{
	int c;

	if (a->rank != b->rank)
		return a->rank < b->rank;
	if (a->size != b->size)
		return a->size < b->size;
	if (a->start != b->start)
		return a->start > b->start;
	c = strcmp(f->names + a->name_off, f->names + b->name_off);
	return c < 0;
}

static const struct func_sym *sym_table_find(const struct elf_file *f, const struct sym_table *t,
					     uint64_t vaddr)
{
	const struct func_sym *best = NULL;
	size_t lo = 0, hi = t->n;

	/* first symbol starting after vaddr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->syms[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t j = lo; j-- > 0 && t->max_end[j] > vaddr;) {
		const struct func_sym *s = &t->syms[j];

		if (sym_end(s) > vaddr && (!best || sym_better(f, s, best)))
			best = s;
	}
	return best;
}

static void fill_symbol(const struct elf_file *f, const struct func_sym *s, int from_dynsym,
			struct elf_symbol *out)
{
	out->name = f->names + s->name_off;
	out->start = s->start;
	out->size = s->size;
	out->from_dynsym = from_dynsym;
}

/* The covering symbol of symtab, else of dynsym: the rule of
 * elf_file__find_symbol(), for functions and for data objects alike. */
static int find_covering(const struct elf_file *f, const struct sym_table *symtab,
			 const struct sym_table *dynsym, uint64_t vaddr, struct elf_symbol *out)
{
	const struct func_sym *s;
	int from_dynsym = 0;

	s = sym_table_find(f, symtab, vaddr);
	if (!s) {
		s = sym_table_find(f, dynsym, vaddr);
		from_dynsym = 1;
	}
	if (!s)
		return -ENOENT;
	fill_symbol(f, s, from_dynsym, out);
	return 0;
}

int elf_file__find_symbol(const struct elf_file *f, uint64_t vaddr, struct elf_symbol *out)
{
	return find_covering(f, &f->symtab, &f->dynsym, vaddr, out);
}

int elf_file__find_object(const struct elf_file *f, uint64_t vaddr, struct elf_symbol *out)
{
	return find_covering(f, &f->symtab_objects, &f->dynsym_objects, vaddr, out);
}

/* The best symbol named name in t, or best unchanged: global before weak
 * before local, then the lowest start. */
static const struct func_sym *sym_table_lookup_name(const struct elf_file *f,
						    const struct sym_table *t, const char *name,
						    const struct func_sym *best)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct func_sym *s = &t->syms[i];

		if (strcmp(f->names + s->name_off, name))
			continue;
		if (!best || s->rank < best->rank ||
		    (s->rank == best->rank && s->start < best->start))
			best = s;
	}
	return best;
}

int elf_file__lookup_name(const struct elf_file *f, const char *name, struct elf_symbol *out)
{
	const struct func_sym *s;

	s = sym_table_lookup_name(f, &f->symtab, name, NULL);
	s = sym_table_lookup_name(f, &f->symtab_objects, name, s);
	if (s) {
		fill_symbol(f, s, 0, out);
		return 0;
	}
	s = sym_table_lookup_name(f, &f->dynsym, name, NULL);
	s = sym_table_lookup_name(f, &f->dynsym_objects, name, s);
	if (!s)
		return -ENOENT;
	fill_symbol(f, s, 1, out);
	return 0;
}

int elf_file__for_each_function(const struct elf_file *f,
				int (*cb)(const struct elf_symbol *sym, void *ctx), void *ctx)
{
	const struct sym_table *t = f->symtab.n ? &f->symtab : &f->dynsym;
	struct elf_symbol sym;
	int err;

	for (size_t i = 0; i < t->n; i++) {
		fill_symbol(f, &t->syms[i], t == &f->dynsym, &sym);
		err = cb(&sym, ctx);
		if (err)
			return err;
	}
	return 0;
}

int elf_file__vaddr_to_offset(const struct elf_file *f, uint64_t vaddr, uint64_t *offset)
{
	for (size_t i = 0; i < f->nsegs; i++) {
		const struct load_segment *s = &f->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
			*offset = vaddr - s->vaddr + s->offset;
			return 0;
		}
	}
	return -ENOENT;
}

int elf_read_build_id(const char *path, char *hex, size_t hexlen)
{
	struct elf_file *f;
	int err = 0;

	f = elf_file__open(path);
	if (!f)
		return -errno;
	if (!f->build_id)
		err = -ENODATA;
	else if (strlen(f->build_id) >= hexlen)
		err = -ENOSPC;
	else
		strcpy(hex, f->build_id);
	elf_file__free(f);
	return err;
}
