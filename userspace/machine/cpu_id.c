/* cpu_id — see cpu_id.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "userspace/machine/cpu_id.h"

/* /proc/cpuinfo of a few hundred cores is ~1 MiB; only the first block matters */
#define CPUINFO_READ_MAX (256 * 1024)

/* x86 microarchitectures by (vendor, family, model range). Sources: the
 * Linux kernel's arch/x86/include/asm/intel-family.h (INTEL_HASWELL_X = 63,
 * INTEL_BROADWELL_X = 79, INTEL_BROADWELL_D = 86, INTEL_SKYLAKE_X = 85 —
 * Skylake-SP, Cascade Lake and Cooper Lake share it, told apart by stepping —,
 * INTEL_ICELAKE_X = 106, INTEL_ICELAKE_D = 108, INTEL_SAPPHIRERAPIDS_X = 143,
 * INTEL_EMERALDRAPIDS_X = 207, INTEL_GRANITERAPIDS_X = 173,
 * INTEL_XEON_PHI_KNL = 87) and the Zen generations of the kernel's
 * arch/x86/kernel/cpu/amd.c bsp_init_amd(): family 17h Zen 1 00h-2Fh,
 * 50h-5Fh, Zen 2 30h-4Fh, 60h-7Fh, 90h-91h, A0h-AFh; 19h Zen 3 00h-0Fh,
 * 20h-5Fh, Zen 4 10h-1Fh, 60h-AFh. Family 1Ah (Zen 5): only the EPYC 9005
 * "Turin" server models 00h-1Fh (02h, dense 11h), whose cores have the full
 * 512-bit datapath; the client parts differ in width (mobile 256-bit) and
 * stay unknown rather than guessed. */
static const struct x86_uarch {
	const char *vendor;
	int family, model_lo, model_hi;
	const char *name;
} x86_uarchs[] = {
	{ "GenuineIntel", 6, 63, 63, "haswell-server" },
	{ "GenuineIntel", 6, 79, 79, "broadwell-server" },
	{ "GenuineIntel", 6, 86, 86, "broadwell-server" },
	{ "GenuineIntel", 6, 85, 85, "skylake-server" }, /* stepping 5-7: cascadelake, 10-11: cooperlake */
	{ "GenuineIntel", 6, 87, 87, "knights-landing" },
	{ "GenuineIntel", 6, 106, 106, "icelake-server" },
	{ "GenuineIntel", 6, 108, 108, "icelake-server" },
	{ "GenuineIntel", 6, 143, 143, "sapphirerapids" },
	{ "GenuineIntel", 6, 207, 207, "emeraldrapids" },
	{ "GenuineIntel", 6, 173, 173, "graniterapids" },
	{ "AuthenticAMD", 23, 0x00, 0x2f, "zen1" },
	{ "AuthenticAMD", 23, 0x50, 0x5f, "zen1" },
	{ "AuthenticAMD", 23, 0x30, 0x4f, "zen2" },
	{ "AuthenticAMD", 23, 0x60, 0x7f, "zen2" },
	{ "AuthenticAMD", 23, 0x90, 0x91, "zen2" },
	{ "AuthenticAMD", 23, 0xa0, 0xaf, "zen2" },
	{ "AuthenticAMD", 25, 0x00, 0x0f, "zen3" },
	{ "AuthenticAMD", 25, 0x20, 0x5f, "zen3" },
	{ "AuthenticAMD", 25, 0x10, 0x1f, "zen4" },
	{ "AuthenticAMD", 25, 0x60, 0xaf, "zen4" },
	{ "AuthenticAMD", 26, 0x00, 0x1f, "zen5" },
};

/* Arm server cores by (implementer, part): the kernel's
 * arch/arm64/include/asm/cputype.h (ARM_CPU_PART_NEOVERSE_N1 0xD0C,
 * _NEOVERSE_V1 0xD40, _NEOVERSE_N2 0xD49, _NEOVERSE_V2 0xD4F,
 * FUJITSU_CPU_PART_A64FX 0x001, CAVIUM_CPU_PART_THUNDERX2 0x0AF,
 * BRCM_CPU_PART_VULCAN 0x516 — ThunderX2's origin). */
static const struct arm_part {
	int implementer, part;
	const char *name, *part_name;
} arm_parts[] = {
	{ 0x41, 0xd0c, "neoverse-n1", "Neoverse-N1" },
	{ 0x41, 0xd40, "neoverse-v1", "Neoverse-V1" },
	{ 0x41, 0xd49, "neoverse-n2", "Neoverse-N2" },
	{ 0x41, 0xd4f, "neoverse-v2", "Neoverse-V2" },
	{ 0x46, 0x001, "a64fx", "A64FX" },
	{ 0x43, 0x0af, "thunderx2", "ThunderX2" },
	{ 0x42, 0x516, "thunderx2", "ThunderX2 (Vulcan)" },
};

static const struct {
	int implementer;
	const char *name;
} arm_implementers[] = {
	{ 0x41, "ARM" },    { 0x42, "Broadcom" }, { 0x43, "Cavium" }, { 0x46, "Fujitsu" },
	{ 0x48, "HiSilicon" }, { 0x4e, "NVIDIA" }, { 0x51, "Qualcomm" }, { 0x61, "Apple" },
	{ 0x70, "Phytium" }, { 0xc0, "Ampere" },
};

static const struct {
	unsigned bit;
	const char *name;
} simd_names[] = { { CPU_SIMD_SSE2, "sse2" },	  { CPU_SIMD_AVX, "avx" },
		   { CPU_SIMD_AVX2, "avx2" },	  { CPU_SIMD_FMA, "fma" },
		   { CPU_SIMD_AVX512F, "avx512f" }, { CPU_SIMD_NEON, "neon" },
		   { CPU_SIMD_SVE, "sve" },	  { CPU_SIMD_SVE2, "sve2" } };

const char *cpu_simd_name(unsigned bit)
{
	size_t i;

	for (i = 0; i < sizeof(simd_names) / sizeof(simd_names[0]); i++)
		if (simd_names[i].bit == bit)
			return simd_names[i].name;
	return NULL;
}

unsigned cpu_simd_from_name(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(simd_names) / sizeof(simd_names[0]); i++)
		if (!strcmp(simd_names[i].name, name))
			return simd_names[i].bit;
	return 0;
}

const char *cpu_id_microarchitecture(const char *vendor, int family, int model)
{
	size_t i;

	if (!vendor)
		return NULL;
	for (i = 0; i < sizeof(x86_uarchs) / sizeof(x86_uarchs[0]); i++)
		if (!strcmp(vendor, x86_uarchs[i].vendor) && family == x86_uarchs[i].family &&
		    model >= x86_uarchs[i].model_lo && model <= x86_uarchs[i].model_hi)
			return x86_uarchs[i].name;
	for (i = 0; i < sizeof(arm_parts) / sizeof(arm_parts[0]); i++)
		if (family == arm_parts[i].implementer && model == arm_parts[i].part)
			return arm_parts[i].name;
	return NULL;
}

/* Skylake-SP's model 85 also names Cascade Lake (steppings 5-7) and Cooper
 * Lake (10-11): same cores, same FLOP per cycle, named for the reader. */
static const char *x86_refine(const char *uarch, int stepping)
{
	if (uarch && !strcmp(uarch, "skylake-server")) {
		if (stepping >= 5 && stepping <= 7)
			return "cascadelake";
		if (stepping >= 10 && stepping <= 11)
			return "cooperlake";
	}
	return uarch;
}

/* The value of "key" in the first processor block (the text up to the first
 * blank line after a key was seen), trimmed, into buf; NULL when absent.
 * Keys are compared up to the whitespace before the colon. */
static const char *field(const char *text, const char *key, char *buf, size_t len)
{
	size_t klen = strlen(key);
	const char *line = text;

	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t n = eol ? (size_t)(eol - line) : strlen(line);

		if (n == 0 && line != text)
			break; /* end of the first block */
		if (n > klen && !strncmp(line, key, klen) &&
		    (line[klen] == ' ' || line[klen] == '\t' || line[klen] == ':')) {
			const char *v = line + klen, *end = line + n;

			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			if (v < end && *v == ':') {
				v++;
				while (v < end && isspace((unsigned char)*v))
					v++;
				while (end > v && isspace((unsigned char)end[-1]))
					end--;
				snprintf(buf, len, "%.*s", (int)(end - v), v);
				return buf;
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return NULL;
}

static int field_int(const char *text, const char *key, int base)
{
	char buf[64], *end;
	long v;

	if (!field(text, key, buf, sizeof(buf)))
		return -1;
	errno = 0;
	v = strtol(buf, &end, base);
	return errno || end == buf || v < 0 || v > 0xffffff ? -1 : (int)v;
}

/* 1 if word is one of the space-separated words of list */
static int has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word))) {
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
		p += n;
	}
	return 0;
}

/* "@ 2.40GHz" (or MHz) in a model name, in Hz; NAN when absent */
static double model_name_hz(const char *name)
{
	const char *at = strrchr(name, '@');
	char *end;
	double v;

	if (!at)
		return NAN;
	v = strtod(at + 1, &end);
	if (end == at + 1 || v <= 0)
		return NAN;
	while (*end == ' ')
		end++;
	if (!strncasecmp(end, "GHz", 3))
		return v * 1e9;
	if (!strncasecmp(end, "MHz", 3))
		return v * 1e6;
	return NAN;
}

static void parse_x86(const char *text, struct cpu_id *out)
{
	char flags[8192];

	snprintf(out->architecture, sizeof(out->architecture), "x86_64");
	field(text, "vendor_id", out->vendor, sizeof(out->vendor));
	out->family = field_int(text, "cpu family", 10);
	out->model = field_int(text, "model", 10);
	out->stepping = field_int(text, "stepping", 10);
	if (field(text, "model name", out->model_name, sizeof(out->model_name)))
		out->rated_hz = model_name_hz(out->model_name);
	if (field(text, "flags", flags, sizeof(flags))) {
		static const struct {
			const char *flag;
			unsigned bit;
		} bits[] = { { "sse2", CPU_SIMD_SSE2 }, { "avx", CPU_SIMD_AVX },
			     { "avx2", CPU_SIMD_AVX2 }, { "fma", CPU_SIMD_FMA },
			     { "avx512f", CPU_SIMD_AVX512F } };
		size_t i;

		for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
			if (has_word(flags, bits[i].flag))
				out->simd |= bits[i].bit;
	}
	out->microarchitecture =
		x86_refine(cpu_id_microarchitecture(out->vendor, out->family, out->model),
			   out->stepping);
}

static void parse_arm(const char *text, struct cpu_id *out)
{
	char features[2048];
	const char *part_name = NULL;
	size_t i;

	snprintf(out->architecture, sizeof(out->architecture), "aarch64");
	out->family = field_int(text, "CPU implementer", 16);
	out->model = field_int(text, "CPU part", 16);
	out->stepping = field_int(text, "CPU revision", 10);
	snprintf(out->vendor, sizeof(out->vendor), "0x%02x", out->family);
	for (i = 0; i < sizeof(arm_implementers) / sizeof(arm_implementers[0]); i++)
		if (arm_implementers[i].implementer == out->family)
			snprintf(out->vendor, sizeof(out->vendor), "%s", arm_implementers[i].name);
	for (i = 0; i < sizeof(arm_parts) / sizeof(arm_parts[0]); i++)
		if (arm_parts[i].implementer == out->family && arm_parts[i].part == out->model)
			part_name = arm_parts[i].part_name;
	if (part_name)
		snprintf(out->model_name, sizeof(out->model_name), "%s %s", out->vendor, part_name);
	else
		snprintf(out->model_name, sizeof(out->model_name), "%s part 0x%03x", out->vendor,
			 out->model);
	if (field(text, "Features", features, sizeof(features))) {
		if (has_word(features, "asimd"))
			out->simd |= CPU_SIMD_NEON;
		if (has_word(features, "sve"))
			out->simd |= CPU_SIMD_SVE;
		if (has_word(features, "sve2"))
			out->simd |= CPU_SIMD_SVE2;
	}
	out->microarchitecture = cpu_id_microarchitecture(out->vendor, out->family, out->model);
}

int cpu_id_parse(const char *cpuinfo, struct cpu_id *out)
{
	char buf[64];

	if (!cpuinfo || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->family = out->model = out->stepping = -1;
	out->rated_hz = out->current_hz = NAN;
	if (field(cpuinfo, "vendor_id", buf, sizeof(buf)))
		parse_x86(cpuinfo, out);
	else if (field(cpuinfo, "CPU implementer", buf, sizeof(buf)) &&
		 field(cpuinfo, "CPU part", buf, sizeof(buf)))
		parse_arm(cpuinfo, out);
	else
		return -EINVAL;
	if (field(cpuinfo, "cpu MHz", buf, sizeof(buf))) {
		double mhz = strtod(buf, NULL);

		if (mhz > 0)
			out->current_hz = mhz * 1e6;
	}
	return 0;
}

int cpu_id_read(struct cpu_id *out)
{
	char *text = malloc(CPUINFO_READ_MAX + 1);
	size_t used = 0;
	ssize_t n = 0;
	int fd, err;

	if (!text)
		return -ENOMEM;
	fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto cleanup;
	}
	while (used < CPUINFO_READ_MAX &&
	       (n = read(fd, text + used, CPUINFO_READ_MAX - used)) > 0)
		used += (size_t)n;
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		goto cleanup;
	text[used] = '\0';
	err = cpu_id_parse(text, out);
cleanup:
	free(text);
	return err;
}
