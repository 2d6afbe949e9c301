/* doctor_kernel — what the kernel lets nunatak do here: privileges (root
 * or CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN), loading a BPF program, BTF,
 * the kernel version, uprobe_multi links, a per-CPU cpu-clock perf event
 * (what the sampler opens), perf_event_paranoid, the kernel's symbols
 * (kernel frames named, or kernel-addresses-hidden), the PMU (a cycles
 * counter) and its FLOP/DRAM counter group.
 *
 * Every probe is one system call or one file read: nothing waits. Each
 * adds its check, and the Degradation it implies, to a doctor_report,
 * with the names the Agent records in a Run (agent.c: bpf-denied,
 * bpf-unavailable, perf-events-refused, unwinder-unavailable,
 * kernel-addresses-hidden;
 * hardware-counters-unavailable of the sampling group).
 *
 * The rules (which version, which capability, which paranoid level is
 * enough) are pure functions, tested on their own.
 */
#ifndef NUNATAK_DOCTOR_KERNEL_H
#define NUNATAK_DOCTOR_KERNEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "userspace/doctor/doctor_report.h"

/* capability numbers (linux/capability.h; CAP_BPF and CAP_PERFMON are
 * newer than some headers) */
#define DOCTOR_CAP_SYS_ADMIN 21
#define DOCTOR_CAP_PERFMON 38
#define DOCTOR_CAP_BPF 39

/* 1 when the release text (uname -r: "6.18.44-fc-v1045", "5.15.0-91-generic")
 * is major.minor or later, 0 when earlier, -EINVAL when it does not start
 * with two numbers. */
int doctor_kernel_at_least(const char *release, int major, int minor);

/* What euid and the effective capability set (bit n = capability n) allow:
 * DOCTOR_OK for root or CAP_BPF + CAP_PERFMON (CAP_SYS_ADMIN stands for
 * both), else DOCTOR_MISSING; detail says who and which capabilities. */
enum doctor_status doctor_privileges(uid_t euid, uint64_t cap_effective, char *detail, size_t len);

/* What perf_event_paranoid means for nunatak, for a caller with
 * (privileged = 1) or without CAP_PERFMON/root: privileged callers are
 * not bound by it (DOCTOR_OK); others need <= 0 for the per-CPU events the
 * sampler opens (else DOCTOR_WARNING: only the node service, as root, can
 * sample). detail says the level and what it allows. */
enum doctor_status doctor_paranoid(int paranoid, int privileged, char *detail, size_t len);

/* Adds every kernel check to r. privileged_out (may be NULL): 1 when the
 * privileges check found root or the capabilities. */
void doctor_kernel_checks(struct doctor_report *r, int *privileged_out);

#endif
