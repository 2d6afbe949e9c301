/* doctor_kernel — see doctor_kernel.h. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "userspace/agent/kernel_symbols.h"
#include "userspace/agent/uprobe_multi.h"
#include "userspace/doctor/doctor_kernel.h"
#include "userspace/doctor/doctor_pmu.h"

#define BTF_VMLINUX "/sys/kernel/btf/vmlinux"
#define PARANOID_PATH "/proc/sys/kernel/perf_event_paranoid"

static const char REMEDY_PRIVILEGES[] =
    "run nunatak as root, or grant CAP_BPF and CAP_PERFMON (setcap, or systemd "
    "AmbientCapabilities), or start nunatakd as root so that every user profiles through it";

int doctor_kernel_at_least(const char *release, int major, int minor)
{
	int maj, min;

	if (!release || sscanf(release, "%d.%d", &maj, &min) != 2)
		return -EINVAL;
	return maj > major || (maj == major && min >= minor);
}

static int has_cap(uint64_t caps, int cap)
{
	return (int)((caps >> cap) & 1);
}

enum doctor_status doctor_privileges(uid_t euid, uint64_t cap_effective, char *detail, size_t len)
{
	int bpf = has_cap(cap_effective, DOCTOR_CAP_BPF),
	    perfmon = has_cap(cap_effective, DOCTOR_CAP_PERFMON),
	    admin = has_cap(cap_effective, DOCTOR_CAP_SYS_ADMIN);

	if (euid == 0 && admin) {
		snprintf(detail, len, "root (euid 0, CAP_SYS_ADMIN)");
		return DOCTOR_OK;
	}
	if (admin || (bpf && perfmon)) {
		snprintf(detail, len, "euid %u with %s", (unsigned)euid,
			 admin ? "CAP_SYS_ADMIN" : "CAP_BPF and CAP_PERFMON");
		return DOCTOR_OK;
	}
	snprintf(detail, len, "euid %u%s without CAP_BPF%s, CAP_PERFMON%s, CAP_SYS_ADMIN",
		 (unsigned)euid, euid == 0 ? " (root, but capabilities dropped)" : "",
		 bpf ? " (has it)" : "", perfmon ? " (has it)" : "");
	return DOCTOR_MISSING;
}

enum doctor_status doctor_paranoid(int paranoid, int privileged, char *detail, size_t len)
{
	if (privileged) {
		snprintf(detail, len, "%d: does not apply to root or CAP_PERFMON", paranoid);
		return DOCTOR_OK;
	}
	if (paranoid <= 0) {
		snprintf(detail, len, "%d: per-CPU events are allowed to every user", paranoid);
		return DOCTOR_OK;
	}
	snprintf(detail, len,
		 "%d: %s; the per-CPU events nunatak samples with need -1 or 0, or root, or "
		 "CAP_PERFMON",
		 paranoid,
		 paranoid == 1	 ? "a user may count and sample its own processes, not a CPU"
		 : paranoid == 2 ? "a user may observe its own processes in user mode only"
				 : "a user may open no perf event at all");
	return DOCTOR_WARNING;
}

static uint64_t effective_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return 0;
	return (uint64_t)d[0].effective | ((uint64_t)d[1].effective << 32);
}

static int check_privileges(struct doctor_report *r)
{
	char detail[256];
	enum doctor_status s =
	    doctor_privileges(geteuid(), effective_caps(), detail, sizeof(detail));

	doctor_check(r, "privileges", s, s == DOCTOR_OK ? NULL : REMEDY_PRIVILEGES, "%s", detail);
	return s == DOCTOR_OK;
}

/* BPF: a trivial socket filter loaded with bpf(2), then libbpf's probe of
 * the program type the sampler uses */
static void check_bpf(struct doctor_report *r)
{
	const struct bpf_insn insns[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	char msg[512];
	int fd, e;

	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, NULL, "GPL", insns, 2, NULL);
	e = fd < 0 ? -errno : 0;
	if (fd >= 0)
		close(fd);
	if (e == -EPERM || e == -EACCES) {
		snprintf(msg, sizeof(msg), "loading a BPF program is not permitted: %s",
			 strerror(-e));
		doctor_check(r, "bpf", DOCTOR_MISSING, REMEDY_PRIVILEGES, "%s", msg);
		doctor_degradation(r, "bpf-denied",
				   "no BPF program may be loaded: a Run here has no samples "
				   "unless nunatakd (root) observes it",
				   "run as root, or grant CAP_BPF and CAP_PERFMON");
		return;
	}
	if (!e && libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_PERF_EVENT, NULL) != 1)
		e = -EOPNOTSUPP;
	if (e) {
		snprintf(msg, sizeof(msg), "a BPF program cannot be loaded: %s", strerror(-e));
		doctor_check(r, "bpf", DOCTOR_MISSING,
			     "use a kernel built with CONFIG_BPF_SYSCALL and CONFIG_BPF_EVENTS",
			     "%s", msg);
		doctor_degradation(r, "bpf-unavailable", msg,
				   "use a kernel with BPF and BTF (/sys/kernel/btf/vmlinux)");
		return;
	}
	doctor_check(r, "bpf", DOCTOR_OK, NULL,
		     "a BPF program loads; perf_event programs are supported");
}

static void check_btf(struct doctor_report *r)
{
	FILE *f = fopen(BTF_VMLINUX, "re");
	char head[4];

	if (f && fread(head, 1, sizeof(head), f) == sizeof(head)) {
		fclose(f);
		doctor_check(r, "btf", DOCTOR_OK, NULL, "%s is readable", BTF_VMLINUX);
		return;
	}
	doctor_check(r, "btf", DOCTOR_MISSING,
		     "use a kernel built with CONFIG_DEBUG_INFO_BTF=y (Debian's, since 11)",
		     "%s: %s", BTF_VMLINUX, f ? "empty" : strerror(errno));
	if (f)
		fclose(f);
	doctor_degradation(r, "bpf-unavailable",
			   "the kernel has no BTF: nunatak's BPF programs cannot be loaded",
			   "use a kernel with BPF and BTF (/sys/kernel/btf/vmlinux)");
}

static void check_kernel_version(struct doctor_report *r)
{
	struct utsname u;

	if (uname(&u) || doctor_kernel_at_least(u.release, 5, 15) < 0) {
		doctor_check(r, "kernel", DOCTOR_WARNING, NULL,
			     "the kernel version cannot be read");
		return;
	}
	if (!doctor_kernel_at_least(u.release, 5, 15)) {
		doctor_check(r, "kernel", DOCTOR_MISSING, "use Linux 5.15 or later",
			     "Linux %s is older than 5.15, the oldest nunatak supports", u.release);
		doctor_degradation(r, "bpf-unavailable", "the kernel is older than 5.15",
				   "use Linux 5.15 or later");
	} else if (!doctor_kernel_at_least(u.release, 6, 1)) {
		doctor_check(r, "kernel", DOCTOR_WARNING, "use Linux 6.1 or later",
			     "Linux %s: call paths need 6.1 (the unwinder's BPF program)",
			     u.release);
		doctor_degradation(r, "unwinder-unavailable",
				   "the kernel is older than 6.1: call paths end at the sampled "
				   "function",
				   "run as root on a kernel with BTF (6.1 or later)");
	} else {
		doctor_check(r, "kernel", DOCTOR_OK, NULL, "Linux %s (5.15 or later)", u.release);
	}
}

static void check_uprobe_multi(struct doctor_report *r, int privileged)
{
	char why[256];
	int e = uprobe_multi_supported(why, sizeof(why));

	if (e == 1)
		doctor_check(r, "uprobe_multi", DOCTOR_OK, NULL,
			     "uprobe_multi links: MPI probes attach one link per library");
	else if (e == 0)
		doctor_check(r, "uprobe_multi", DOCTOR_WARNING, "use Linux 6.6 or later",
			     "no uprobe_multi links (%s): MPI probes fall back to one perf-event "
			     "uprobe per function, slower to attach and detach",
			     why);
	else
		doctor_check(r, "uprobe_multi", DOCTOR_MISSING,
			     privileged ? NULL : REMEDY_PRIVILEGES, "cannot be asked: %s", why);
}

/* what the sampler opens: a cpu-clock sampling event on one CPU */
static void check_perf_events(struct doctor_report *r)
{
	struct perf_event_attr attr = {
	    .type = PERF_TYPE_SOFTWARE,
	    .size = sizeof(attr),
	    .config = PERF_COUNT_SW_CPU_CLOCK,
	    .freq = 1,
	    .sample_freq = 99,
	    .disabled = 1,
	};
	char msg[256];
	int fd = (int)syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		doctor_check(r, "perf_events", DOCTOR_OK, NULL,
			     "a per-CPU cpu-clock sampling event opens");
		return;
	}
	snprintf(msg, sizeof(msg), "perf_event_open of a per-CPU cpu-clock event refused: %s",
		 strerror(errno));
	doctor_check(r, "perf_events", DOCTOR_MISSING,
		     "run as root or with CAP_PERFMON, or lower kernel.perf_event_paranoid", "%s",
		     msg);
	doctor_degradation(r, "perf-events-refused", msg,
			   "run as root, or grant CAP_PERFMON (sysctl kernel.perf_event_paranoid "
			   "applies to other users)");
}

static void check_paranoid(struct doctor_report *r, int privileged)
{
	char detail[320];
	enum doctor_status s;
	FILE *f = fopen(PARANOID_PATH, "re");
	int level;

	if (!f || fscanf(f, "%d", &level) != 1) {
		doctor_check(r, "perf_event_paranoid", DOCTOR_WARNING, NULL, "%s cannot be read",
			     PARANOID_PATH);
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	s = doctor_paranoid(level, privileged, detail, sizeof(detail));
	doctor_check(r, "perf_event_paranoid", s,
		     s == DOCTOR_OK ? NULL
				    : "profile through nunatakd (root), or sysctl -w "
				      "kernel.perf_event_paranoid=0 (every user then sees CPU "
				      "events)",
		     "%s", detail);
}

/* kernel frames named, or the Agent's kernel-addresses-hidden (~100 ms:
 * the kernel formats /proc/kallsyms) */
static void check_kernel_symbols(struct doctor_report *r)
{
	struct kernel_symbols *ks = kernel_symbols__new(NULL);
	int e = ks ? 0 : -errno;
	char msg[512];

	if (!e && !kernel_symbols_hidden(ks)) {
		doctor_check(r, "kernel_symbols", DOCTOR_OK, NULL,
			     "%zu kernel functions readable in %s: kernel frames are named",
			     kernel_symbols_count(ks), KERNEL_SYMBOLS_PATH);
	} else {
		kernel_symbols_degradation_message(e, msg, sizeof(msg));
		doctor_check(r, "kernel_symbols", DOCTOR_WARNING,
			     kernel_symbols_degradation_remedy(e), "%s", msg);
		doctor_degradation(r, KERNEL_SYMBOLS_DEGRADATION, msg,
				   kernel_symbols_degradation_remedy(e));
	}
	kernel_symbols__free(ks);
}

void doctor_kernel_checks(struct doctor_report *r, int *privileged_out)
{
	int privileged = check_privileges(r);

	check_bpf(r);
	check_btf(r);
	check_kernel_version(r);
	check_uprobe_multi(r, privileged);
	check_perf_events(r);
	check_paranoid(r, privileged);
	check_kernel_symbols(r);
	doctor_pmu_checks(r);
	if (privileged_out)
		*privileged_out = privileged;
}
