/* theory — see theory.h.
 *
 * FLOP per cycle per core = FMA pipes × lanes of the vector × 2 (an FMA is
 * a multiply and an add). The rows count the double-precision lanes; single
 * precision has twice as many. Turbo, AVX frequency licences and thermal
 * limits are ignored: the value is an upper bound on paper.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "userspace/machine/theory.h"

struct theory_row {
	const char *uarch;
	double dp, sp; /* with the SIMD of `needs` */
	unsigned needs; /* CPU_SIMD_* bits the row's pipes need */
	double dp_narrow, sp_narrow; /* when `needs` is missing (masked by a hypervisor) but
				      * the narrower fallback below is there; 0: none */
	unsigned narrow_needs;
	const char *basis;
};

#define X86_AVX2 (CPU_SIMD_AVX2 | CPU_SIMD_FMA)

/* Sources: Intel 64 and IA-32 Architectures Optimization Reference Manual
 * (Haswell/Broadwell: FMA on ports 0 and 1, 256-bit; Skylake-SP and later
 * Xeon Scalable: 512-bit FMA on port 0+1 fused and, on SKUs with two units,
 * on port 5), Intel ARK "# of AVX-512 FMA Units"; AMD Software Optimization
 * Guides for family 17h (Zen: four 128-bit FP pipes, two of them FMA; a
 * 256-bit op is split in two), 17h model 30h+ (Zen 2: 256-bit pipes, two
 * FMA), 19h (Zen 3: same; Zen 4: AVX-512 executed on the 256-bit pipes, so
 * no more FLOP per cycle than AVX2), 1Ah (Zen 5 server: full 512-bit
 * datapath, two FMA pipes); Arm Neoverse N1/N2/V1/V2 Software Optimization
 * Guides (N1: two 128-bit ASIMD FMA pipes; N2: two 128-bit SVE2/ASIMD FMA
 * pipes; V1: two 256-bit SVE FMA pipes = four 128-bit ASIMD; V2: four
 * 128-bit SVE2/ASIMD FMA pipes); Fujitsu A64FX Microarchitecture Manual
 * (two 512-bit SVE FMA pipes); Marvell ThunderX2 (two 128-bit NEON FMA
 * pipes). Intel Xeon Phi Knights Landing: two 512-bit VPUs with FMA. */
static const struct theory_row rows[] = {
	{ "haswell-server", 16, 32, X86_AVX2, 0, 0, 0, "2 x 256-bit FMA units" },
	{ "broadwell-server", 16, 32, X86_AVX2, 0, 0, 0, "2 x 256-bit FMA units" },
	{ "skylake-server", 32, 64, CPU_SIMD_AVX512F, 16, 32, X86_AVX2,
	  "2 x 512-bit FMA units" },
	{ "cascadelake", 32, 64, CPU_SIMD_AVX512F, 16, 32, X86_AVX2, "2 x 512-bit FMA units" },
	{ "cooperlake", 32, 64, CPU_SIMD_AVX512F, 16, 32, X86_AVX2, "2 x 512-bit FMA units" },
	{ "knights-landing", 32, 64, CPU_SIMD_AVX512F, 0, 0, 0, "2 x 512-bit FMA VPUs" },
	{ "icelake-server", 32, 64, CPU_SIMD_AVX512F, 16, 32, X86_AVX2, "2 x 512-bit FMA units" },
	{ "sapphirerapids", 32, 64, CPU_SIMD_AVX512F, 16, 32, X86_AVX2, "2 x 512-bit FMA units" },
	{ "emeraldrapids", 32, 64, CPU_SIMD_AVX512F, 16, 32, X86_AVX2, "2 x 512-bit FMA units" },
	{ "graniterapids", 32, 64, CPU_SIMD_AVX512F, 16, 32, X86_AVX2, "2 x 512-bit FMA units" },
	{ "zen1", 8, 16, X86_AVX2, 0, 0, 0, "2 x 128-bit FMA pipes" },
	{ "zen2", 16, 32, X86_AVX2, 0, 0, 0, "2 x 256-bit FMA pipes" },
	{ "zen3", 16, 32, X86_AVX2, 0, 0, 0, "2 x 256-bit FMA pipes" },
	{ "zen4", 16, 32, X86_AVX2, 0, 0, 0,
	  "2 x 256-bit FMA pipes, AVX-512 double-pumped on them" },
	{ "zen5", 32, 64, CPU_SIMD_AVX512F, 16, 32, X86_AVX2, "2 x 512-bit FMA pipes" },
	{ "neoverse-n1", 8, 16, CPU_SIMD_NEON, 0, 0, 0, "2 x 128-bit ASIMD FMA pipes" },
	{ "neoverse-n2", 8, 16, CPU_SIMD_NEON, 0, 0, 0, "2 x 128-bit SVE2/ASIMD FMA pipes" },
	{ "neoverse-v1", 16, 32, CPU_SIMD_NEON, 0, 0, 0,
	  "2 x 256-bit SVE (4 x 128-bit ASIMD) FMA pipes" },
	{ "neoverse-v2", 16, 32, CPU_SIMD_NEON, 0, 0, 0, "4 x 128-bit SVE2/ASIMD FMA pipes" },
	{ "a64fx", 32, 64, CPU_SIMD_SVE, 8, 16, CPU_SIMD_NEON, "2 x 512-bit SVE FMA pipes" },
	{ "thunderx2", 8, 16, CPU_SIMD_NEON, 0, 0, 0, "2 x 128-bit NEON FMA pipes" },
};

static const struct theory_row *row_of(const char *uarch)
{
	size_t i;

	for (i = 0; uarch && i < sizeof(rows) / sizeof(rows[0]); i++)
		if (!strcmp(rows[i].uarch, uarch))
			return &rows[i];
	return NULL;
}

int theory_flop_per_cycle(const char *microarchitecture, double *dp, double *sp)
{
	const struct theory_row *r = row_of(microarchitecture);

	if (!r || !dp || !sp)
		return -ENOENT;
	*dp = r->dp;
	*sp = r->sp;
	return 0;
}

/* Skylake-SP and Cascade Lake SKUs with ONE 512-bit FMA unit (Intel ARK):
 * Bronze, Silver, Gold 5xxx but 5122/5222, Xeon D. 1: one unit, 0: two,
 * -1: the name says no SKU we know (then two are assumed, and said). */
static int xeon_single_fma_unit(const char *model_name)
{
	const char *gold = strstr(model_name, "Gold ");

	if (strstr(model_name, "Bronze") || strstr(model_name, "Silver") ||
	    strstr(model_name, "Xeon(R) D-") || strstr(model_name, "Xeon D-"))
		return 1;
	if (gold)
		return gold[5] == '5' && strncmp(gold + 5, "5122", 4) && strncmp(gold + 5, "5222", 4);
	if (strstr(model_name, "Platinum") || strstr(model_name, " W-"))
		return 0;
	return -1;
}

int theory_flops(const struct cpu_id *id, double hz, int cores, double *dp, double *sp,
		 char *reason, size_t len)
{
	const struct theory_row *r;
	double fdp, fsp;
	const char *basis, *note = "";

	if (!id || !dp || !sp || !reason || !len || !(hz > 0) || cores < 1)
		return -EINVAL;
	r = row_of(id->microarchitecture);
	if (!r) {
		snprintf(reason, len, "no theoretical peak: microarchitecture of '%s' not in the table",
			 id->model_name[0] ? id->model_name : "this processor");
		return -ENOENT;
	}
	fdp = r->dp, fsp = r->sp, basis = r->basis;
	if ((id->simd & r->needs) != r->needs) {
		if (!r->narrow_needs || (id->simd & r->narrow_needs) != r->narrow_needs) {
			snprintf(reason, len,
				 "no theoretical peak: %s needs SIMD its flags do not show (masked?)",
				 r->uarch);
			return -ENOENT;
		}
		fdp = r->dp_narrow, fsp = r->sp_narrow;
		basis = "the wide SIMD is hidden from this system: narrower FMA only";
	} else if (r->needs == CPU_SIMD_AVX512F && !strcmp(id->vendor, "GenuineIntel") &&
		   (!strcmp(r->uarch, "skylake-server") || !strcmp(r->uarch, "cascadelake"))) {
		int one = xeon_single_fma_unit(id->model_name);

		if (one == 1) {
			fdp /= 2, fsp /= 2;
			basis = "1 x 512-bit FMA unit on this SKU";
		} else if (one < 0) {
			note = ", SKU not recognised: 2 units assumed";
		}
	}
	*dp = fdp * hz * (double)cores;
	*sp = fsp * hz * (double)cores;
	snprintf(reason, len,
		 "theoretical peak, not measured: %s (%s%s) %g dp / %g sp flop/cycle/core x "
		 "%.3g GHz x %d core%s",
		 r->uarch, basis, note, fdp, fsp, hz / 1e9, cores, cores > 1 ? "s" : "");
	return 0;
}

/* cpuinfo_max_freq (kHz) of cpu0 under root, in Hz; NAN when unreadable */
static double cpufreq_max_hz(const char *root)
{
	char path[4096], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/cpu0/cpufreq/cpuinfo_max_freq", root);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NAN;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return NAN;
	buf[n] = '\0';
	return strtod(buf, NULL) > 0 ? strtod(buf, NULL) * 1e3 : NAN;
}

int theory_rated_hz(const struct cpu_id *id, const char *sysfs_cpu_root, double *hz,
		    char *reason, size_t len)
{
	double f = sysfs_cpu_root ? cpufreq_max_hz(sysfs_cpu_root) : NAN;

	if (!id || !hz || !reason || !len)
		return -EINVAL;
	if (f > 0) {
		*hz = f;
		snprintf(reason, len, "cpufreq cpuinfo_max_freq (the highest, turbo included)");
	} else if (id->rated_hz > 0) {
		*hz = id->rated_hz;
		snprintf(reason, len, "the rated frequency in the model name");
	} else if (id->current_hz > 0) {
		*hz = id->current_hz;
		snprintf(reason, len,
			 "'cpu MHz' of /proc/cpuinfo: the current frequency, not the rated one");
	} else {
		snprintf(reason, len, "no frequency: no cpufreq, no rated or current frequency");
		return -ENOENT;
	}
	return 0;
}
