/* cpu_id — which processor the Machine has, from a /proc/cpuinfo text.
 *
 * Two formats are understood: x86 ("vendor_id", "cpu family", "model",
 * "stepping", "model name", "flags", "cpu MHz") and Arm64 ("CPU implementer",
 * "CPU part", "CPU variant", "CPU revision", "Features"). Only the first
 * processor block is read: a Machine is assumed homogeneous.
 *
 * On Arm, family = implementer (0x41 Arm, 0x46 Fujitsu, 0x43 Cavium, 0x48
 * HiSilicon, 0xc0 Ampere...) and model = part; stepping = revision. vendor is
 * "ARM", "Fujitsu", "Cavium"... (the implementer's name, else its hex code).
 *
 * microarchitecture is a static string ("zen3", "skylake-server",
 * "neoverse-n1", "a64fx"...) the theory table and the PMU event table key on,
 * or NULL when this processor is not recognised: an unknown processor is
 * never guessed from a neighbour.
 */
#ifndef NUNATAK_MACHINE_CPU_ID_H
#define NUNATAK_MACHINE_CPU_ID_H

#include <stddef.h>

#define CPU_SIMD_SSE2 (1u << 0)
#define CPU_SIMD_AVX (1u << 1)
#define CPU_SIMD_AVX2 (1u << 2)
#define CPU_SIMD_FMA (1u << 3)
#define CPU_SIMD_AVX512F (1u << 4)
#define CPU_SIMD_NEON (1u << 5) /* "asimd" on arm64 */
#define CPU_SIMD_SVE (1u << 6)
#define CPU_SIMD_SVE2 (1u << 7)

struct cpu_id {
	char vendor[32]; /* "AuthenticAMD", "GenuineIntel", "ARM" (implementer 0x41), ... */
	int family, model, stepping; /* x86; Arm: family = implementer, model = part */
	char model_name[128]; /* x86 "model name"; Arm: "<vendor> <part name>" when known */
	double rated_hz; /* from "@ 2.40GHz" in the model name, else NAN */
	unsigned simd; /* CPU_SIMD_* bits */
	const char *microarchitecture; /* static; NULL unknown */
	double current_hz; /* "cpu MHz" of the first processor (not the rated one), else NAN */
	char architecture[16]; /* "x86_64" or "aarch64" (from the format of the text) */
};

/* Parse a whole /proc/cpuinfo text. 0, or -EINVAL when it has neither
 * format's identifying keys. out is fully written (unknown fields: "",
 * -1, NAN, NULL) on success. */
int cpu_id_parse(const char *cpuinfo, struct cpu_id *out);

/* cpu_id_parse of /proc/cpuinfo: 0, -errno of the read, or -EINVAL */
int cpu_id_read(struct cpu_id *out);

/* The microarchitecture of (vendor, family, model) as cpu_id_parse sets it,
 * or NULL; exposed so the PMU event table and tests key on one function. */
const char *cpu_id_microarchitecture(const char *vendor, int family, int model);

/* The name of one CPU_SIMD_* bit ("sse2", "avx", "avx2", "fma", "avx512f",
 * "neon", "sve", "sve2"), NULL for another value; and back (0: unknown).
 * The machine object lists them by these names. */
const char *cpu_simd_name(unsigned bit);
unsigned cpu_simd_from_name(const char *name);

#endif
