/* doctor_binary — what a program's binary offers nunatak (`nunatak doctor
 * -- CMD`): how far its Hotspots can be named (resolution level: debug
 * info → line, .symtab → function, .dynsym only → symbol, nothing →
 * unresolved) and how its call paths can be walked (unwind tables
 * .eh_frame/.debug_frame, which nunatak's unwinder reads; frame pointers,
 * which `--unwinder frame-pointers` and other tools need).
 *
 * Frame pointers are told by the prologues of the functions: x86-64
 * `push %rbp` then `mov %rsp,%rbp` (55 ... 48 89 e5 or 48 8b ec: the
 * compiler schedules other instructions between them), arm64 `mov x29,
 * sp` (0x910003fd), within the first DOCTOR_PROLOGUE_BYTES bytes
 * (compilers may test and return before it). A heuristic on bytes, not a
 * disassembly: it is reported as a count of functions, not a verdict per
 * function. Unwind tables are told per function too: the FDE extents
 * (unwind_table.h) that cover its start. Half the functions or more decide
 * "present" in both cases (the C runtime's few functions differ from the
 * program's). The file is opened as every ELF file is
 * (elf_open.h: never a FIFO or a device).
 */
#ifndef NUNATAK_DOCTOR_BINARY_H
#define NUNATAK_DOCTOR_BINARY_H

#include <stddef.h>
#include <stdint.h>

#include "userspace/doctor/doctor_report.h"

#define DOCTOR_PROLOGUE_BYTES 64
#define DOCTOR_MAX_FUNCTIONS 100000 /* functions scanned at most */

struct doctor_binary {
	int has_debug_info; /* .debug_info in the file */
	int has_symtab, has_dynsym;
	int has_eh_frame, has_debug_frame;
	int has_debuglink;    /* .gnu_debuglink: debug info in a separate file */
	uint16_t machine;     /* EM_X86_64, EM_AARCH64... */
	size_t functions;     /* functions whose prologue was scanned */
	size_t frame_pointer; /* ... of which set up a frame pointer */
	size_t with_cfi;      /* ... of which an FDE (.eh_frame, .debug_frame) covers */
};

/* 1 when the code at the start of a function (len bytes) sets up a frame
 * pointer for machine, 0 when not, -EOPNOTSUPP for another machine. */
int doctor_prologue_frame_pointer(const uint8_t *code, size_t len, uint16_t machine);

/* Reads path. 0 with *out, or -errno (elf_open_regular()'s, -ENOEXEC not
 * an ELF file, -ENOMEM). */
int doctor_binary_read(const char *path, struct doctor_binary *out);

/* Adds the checks of the command cmd[0..ncmd): "command" (resolved as
 * `nunatak run` resolves it, behind an MPI launcher: its application),
 * "attribution", "frame_pointers" and "unwind_tables". A command that
 * cannot be resolved or read is said as a check, never an error. */
void doctor_binary_checks(struct doctor_report *r, int ncmd, char **cmd);

#endif
