/* doctor_binary — see doctor_binary.h. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "userspace/doctor/doctor_binary.h"
#include "userspace/elf/elf_file.h"
#include "userspace/elf/elf_open.h"
#include "userspace/launch/launch.h"
#include "userspace/launch/launcher.h"
#include "userspace/unwind/unwind_table.h"

/* x86-64: `mov %rsp,%rbp` (either encoding) after a `push %rbp`: the
 * compiler may schedule other instructions between them */
static int x86_frame_pointer(const uint8_t *code, size_t len)
{
	static const uint8_t mov[2][3] = {{0x48, 0x89, 0xe5}, {0x48, 0x8b, 0xec}};
	const uint8_t *push = memchr(code, 0x55, len), *m;
	size_t i, rest;

	if (!push)
		return 0;
	rest = len - (size_t)(push - code) - 1;
	for (i = 0; i < 2; i++) {
		m = memmem(push + 1, rest, mov[i], sizeof(mov[i]));
		if (m)
			return 1;
	}
	return 0;
}

int doctor_prologue_frame_pointer(const uint8_t *code, size_t len, uint16_t machine)
{
	static const uint8_t arm64[] = {0xfd, 0x03, 0x00, 0x91}; /* mov x29, sp */
	size_t i;

	if (len > DOCTOR_PROLOGUE_BYTES)
		len = DOCTOR_PROLOGUE_BYTES;
	if (machine == EM_X86_64)
		return x86_frame_pointer(code, len);
	if (machine != EM_AARCH64)
		return -EOPNOTSUPP;
	for (i = 0; i + 4 <= len; i += 4) /* aligned instructions only */
		if (!memcmp(code + i, arm64, sizeof(arm64)))
			return 1;
	return 0;
}

/* the FDE extents of the file (unwind_table.h), to tell which functions
 * the unwind tables cover */
struct cfi_cover {
	struct fde_extent *extents;
	size_t n;
};

/* the prologues of the functions of one symbol table, and their CFI */
static void scan_functions(Elf *elf, Elf_Scn *symtab, const GElf_Shdr *sh,
			   const struct cfi_cover *cfi, struct doctor_binary *out)
{
	Elf_Data *syms = elf_getdata(symtab, NULL);
	size_t i, n = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	GElf_Sym sym;

	for (i = 0; syms && i < n && out->functions < DOCTOR_MAX_FUNCTIONS; i++) {
		Elf_Scn *scn;
		GElf_Shdr tsh;
		Elf_Data *code;
		uint64_t off;

		if (!gelf_getsym(syms, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    !sym.st_size || sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
			continue;
		scn = elf_getscn(elf, sym.st_shndx);
		if (!scn || !gelf_getshdr(scn, &tsh) || tsh.sh_type != SHT_PROGBITS ||
		    sym.st_value < tsh.sh_addr || sym.st_value - tsh.sh_addr >= tsh.sh_size)
			continue;
		code = elf_getdata(scn, NULL);
		off = sym.st_value - tsh.sh_addr;
		if (!code || !code->d_buf || off >= code->d_size)
			continue;
		out->functions++;
		if (cfi->n && unwind_fde_extent_find(cfi->extents, cfi->n, sym.st_value) >= 0)
			out->with_cfi++;
		if (doctor_prologue_frame_pointer(
			(const uint8_t *)code->d_buf + off,
			code->d_size - off < sym.st_size ? code->d_size - off : sym.st_size,
			out->machine) == 1)
			out->frame_pointer++;
	}
}

static void read_sections(Elf *elf, const struct cfi_cover *cfi, struct doctor_binary *out)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr sh, symsh, dynsh;
	size_t shstrndx;
	const char *name;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		out->has_debug_info |= !strcmp(name, ".debug_info") && sh.sh_type != SHT_NOBITS;
		out->has_eh_frame |= !strcmp(name, ".eh_frame") && sh.sh_size > 0;
		out->has_debug_frame |= !strcmp(name, ".debug_frame") && sh.sh_type != SHT_NOBITS;
		out->has_debuglink |= !strcmp(name, ".gnu_debuglink");
		if (sh.sh_type == SHT_SYMTAB) {
			symtab = scn;
			symsh = sh;
		} else if (sh.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			dynsh = sh;
		}
	}
	out->has_symtab = symtab != NULL;
	out->has_dynsym = dynsym != NULL;
	if (symtab)
		scan_functions(elf, symtab, &symsh, cfi, out);
	else if (dynsym)
		scan_functions(elf, dynsym, &dynsh, cfi, out);
}

int doctor_binary_read(const char *path, struct doctor_binary *out)
{
	struct cfi_cover cfi = {NULL, 0};
	struct stat st;
	GElf_Ehdr eh;
	Elf *elf;
	int fd, e = 0;

	memset(out, 0, sizeof(*out));
	fd = elf_open_regular(path, 0, &st);
	if (fd < 0)
		return fd;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		e = -ENOEXEC;
		goto cleanup;
	}
	out->machine = eh.e_machine;
	if (unwind_fde_extents(fd, &cfi.extents, &cfi.n))
		cfi.n = 0; /* no CFI (-ENODATA), or unreadable: no function covered */
	read_sections(elf, &cfi, out);
cleanup:
	free(cfi.extents);
	elf_end(elf);
	close(fd);
	return e;
}

/* the separate debug file of a build-id in the system's directory */
static int separate_debug_info(const char *path, char *debug, size_t len)
{
	char hex[128];

	if (elf_read_build_id(path, hex, sizeof(hex)) || strlen(hex) < 3)
		return 0;
	snprintf(debug, len, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	return access(debug, R_OK) == 0;
}

static void check_attribution(struct doctor_report *r, const char *path,
			      const struct doctor_binary *b)
{
	static const char rebuild[] = "rebuild with -g (debug info: names with lines), or install "
				      "its debug package";
	char debug[PATH_MAX];

	if (b->has_debug_info)
		doctor_check(r, "attribution", DOCTOR_OK, NULL,
			     "line: %s has debug info (.debug_info): Hotspots named with source "
			     "lines",
			     path);
	else if (separate_debug_info(path, debug, sizeof(debug)))
		doctor_check(r, "attribution", DOCTOR_OK, NULL,
			     "line: debug info in %s: Hotspots named with source lines", debug);
	else if (b->has_symtab)
		doctor_check(r, "attribution", DOCTOR_WARNING, rebuild,
			     "function: %s has a symbol table (.symtab) but no debug info%s: "
			     "Hotspots named by function, without source lines",
			     path,
			     b->has_debuglink ? " (a .gnu_debuglink names a file not found)" : "");
	else if (b->has_dynsym)
		doctor_check(
		    r, "attribution", DOCTOR_WARNING, rebuild,
		    "symbol: %s is stripped (.dynsym only): only its exported functions are "
		    "named, the others stay module+0xOFFSET",
		    path);
	else
		doctor_check(
		    r, "attribution", DOCTOR_MISSING, rebuild,
		    "unresolved: %s has no symbols at all: its Hotspots stay module+0xOFFSET",
		    path);
}

static const char REMEDY_TABLES[] =
    "rebuild without -fno-asynchronous-unwind-tables, or with "
    "-fno-omit-frame-pointer and run with --unwinder frame-pointers";

static void check_stacks(struct doctor_report *r, const char *path, const struct doctor_binary *b)
{
	int fp = b->functions && 2 * b->frame_pointer >= b->functions;
	int cfi = b->functions && 2 * b->with_cfi >= b->functions;
	char msg[PATH_MAX + 256];

	if (!b->functions)
		doctor_check(r, "frame_pointers", DOCTOR_WARNING, NULL,
			     "no function could be scanned (no symbols)");
	else if (doctor_prologue_frame_pointer((const uint8_t *)"", 0, b->machine) < 0)
		doctor_check(r, "frame_pointers", DOCTOR_WARNING, NULL,
			     "not told on this architecture (ELF machine %u)", b->machine);
	else
		doctor_check(r, "frame_pointers", fp ? DOCTOR_OK : DOCTOR_WARNING,
			     fp ? NULL
				: "nothing to do for nunatak; for `--unwinder frame-pointers` or "
				  "other profilers rebuild with -fno-omit-frame-pointer",
			     "%s: %zu of %zu functions set up a frame pointer%s",
			     fp ? "present" : "absent", b->frame_pointer, b->functions,
			     fp ? "" : ": `--unwinder frame-pointers` would truncate its stacks");
	if (cfi) {
		doctor_check(r, "unwind_tables", DOCTOR_OK, NULL,
			     "%zu of %zu functions described in %s%s%s: nunatak's unwinder walks "
			     "its call paths%s",
			     b->with_cfi, b->functions, b->has_eh_frame ? ".eh_frame" : "",
			     b->has_eh_frame && b->has_debug_frame ? " and " : "",
			     b->has_debug_frame ? ".debug_frame" : "",
			     fp ? "" : " without frame pointers");
		return;
	}
	snprintf(
	    msg, sizeof(msg),
	    "%zu of %zu functions of %s have unwind table entries (.eh_frame, "
	    ".debug_frame)%s",
	    b->with_cfi, b->functions, path,
	    fp ? ": the default unwinder stops there; its frame pointers walk them"
	       : " and they have no frame pointers: its stacks are truncated at its functions");
	doctor_check(r, "unwind_tables", fp ? DOCTOR_WARNING : DOCTOR_MISSING,
		     fp ? "run with --unwinder frame-pointers" : REMEDY_TABLES, "%s", msg);
	if (!fp)
		doctor_degradation(r, "stacks-truncated", msg, REMEDY_TABLES);
}

void doctor_binary_checks(struct doctor_report *r, int ncmd, char **cmd)
{
	char exe[PATH_MAX];
	struct launcher_split split;
	struct doctor_binary b;
	const char *name;
	int e;

	launcher_split(ncmd, cmd, &split);
	name = split.target_index >= 0 ? cmd[split.target_index] : cmd[0];
	e = launch_resolve(name, exe, sizeof(exe));
	if (e) {
		doctor_check(r, "command", DOCTOR_MISSING,
			     "give a command that exists: nunatak "
			     "doctor -- ./app",
			     "'%s': %s", name,
			     e == -EACCES ? "not executable" : "command not found");
		return;
	}
	e = doctor_binary_read(exe, &b);
	if (e) {
		doctor_check(r, "command", DOCTOR_MISSING, NULL, "%s: %s", exe,
			     e == -ENOEXEC ? "not an ELF program (a script?): give the program it "
					     "runs"
					   : strerror(-e));
		return;
	}
	doctor_check(r, "command", DOCTOR_OK, NULL, "%s%s%s", exe,
		     split.launcher_index >= 0 ? ", started by " : "",
		     split.launcher_index >= 0 ? split.launcher : "");
	check_attribution(r, exe, &b);
	check_stacks(r, exe, &b);
}
