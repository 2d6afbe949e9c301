/* fuzz_elf — ELF files as nunatak reads modules: elf_file__open() (build-id
 * notes from sections and from PT_NOTE, the PT_LOAD table, .symtab and
 * .dynsym), its queries, elf_read_build_id() and elf_dynamic_read()
 * (DT_NEEDED, DT_RUNPATH). The input is written to a file on tmpfs and read
 * through the real entry points, which take a path. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_helpers.h"
#include "userspace/elf/elf_dynamic.h"
#include "userspace/elf/elf_file.h"
#include "userspace/log/log.h"

static char path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_QUIET);
	snprintf(path, sizeof(path), "%s/module.elf", fuzz_scratch_dir());
	return 0;
}

/* an address the input chose (its last 8 bytes), so lookups land inside */
static uint64_t input_address(const uint8_t *data, size_t size)
{
	uint64_t v = 0;

	if (size >= 8)
		memcpy(&v, data + size - 8, 8);
	return v;
}

static void check_symbol(const struct elf_file *f, uint64_t vaddr, int object)
{
	struct elf_symbol s, again;
	int err = object ? elf_file__find_object(f, vaddr, &s) : elf_file__find_symbol(f, vaddr, &s);

	FUZZ_CHECK(err == 0 || err == -ENOENT);
	if (err)
		return;
	FUZZ_CHECK(s.name && s.name[0] && s.size > 0);
	FUZZ_CHECK(vaddr >= s.start && (vaddr - s.start < s.size));
	FUZZ_CHECK(elf_file__lookup_name(f, s.name, &again) == 0);
}

static void query(const struct elf_file *f, uint64_t addr)
{
	const char *id = elf_file__identity(f);
	uint64_t v, o;
	char hex[256];
	int err;

	FUZZ_CHECK(id && id[0]);
	if (!elf_file__build_id(f))
		FUZZ_CHECK(strncmp(id, "nobuildid:", 10) == 0 && strlen(id) == 26);
	else
		FUZZ_CHECK(strcmp(id, elf_file__build_id(f)) == 0);
	(void)elf_file__is_pie_or_shared(f);
	(void)elf_file__has_symtab(f);
	(void)elf_file__has_debug_info(f);
	check_symbol(f, addr, 0);
	check_symbol(f, addr, 1);
	if (elf_file__offset_to_vaddr(f, addr, &v) == 0) {
		check_symbol(f, v, 0);
		FUZZ_CHECK(elf_file__vaddr_to_offset(f, v, &o) == 0);
	}
	(void)elf_file__mapping_vaddr(f, addr & ~(uint64_t)4095, &v);
	err = elf_read_build_id(path, hex, sizeof(hex));
	FUZZ_CHECK(err == 0 || err == -ENODATA || err == -ENOSPC);
	FUZZ_CHECK((err == -ENODATA) == !elf_file__build_id(f));
	if (!err)
		FUZZ_CHECK(strcmp(hex, elf_file__build_id(f)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_dynamic dyn;
	struct elf_file *f;
	int err;

	fuzz_write_file(path, data, size);
	f = elf_file__open(path);
	if (f) {
		query(f, input_address(data, size));
		elf_file__free(f);
	} else {
		FUZZ_CHECK(errno == ENOEXEC || errno == ENOMEM);
	}
	err = elf_dynamic_read(path, &dyn);
	FUZZ_CHECK(err == 0 || err == -ENOEXEC || err == -ENODATA || err == -ENOMEM);
	if (!err) {
		for (size_t i = 0; i < dyn.n_needed; i++)
			FUZZ_CHECK(dyn.needed[i]);
		elf_dynamic_release(&dyn);
	}
	return 0;
}
