/* machine — see machine.h. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "userspace/machine/machine.h"

static json_t *cpu_model(void)
{
	char line[512];
	json_t *model = NULL;
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (!f)
		return json_null();
	while (!model && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 2;
		colon[strcspn(colon, "\n")] = '\0';
		model = json_string(colon);
	}
	fclose(f);
	return model ? model : json_null();
}

/* the first line of a file of our own cgroup (v2), or NULL */
static char *cgroup_read(const char *file, char *buf, size_t len)
{
	char path[4096], cg[2048] = "";
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (!f)
		return NULL;
	while (fgets(cg, sizeof(cg), f))
		if (!strncmp(cg, "0::", 3))
			break;
	fclose(f);
	if (strncmp(cg, "0::", 3))
		return NULL;
	cg[strcspn(cg, "\n")] = '\0';
	snprintf(path, sizeof(path), "/sys/fs/cgroup%s/%s", cg + 3, file);
	f = fopen(path, "r");
	if (!f)
		return NULL;
	if (!fgets(buf, len, f)) {
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

static json_t *cpu_quota(void)
{
	char buf[128];
	long long quota, period;

	if (!cgroup_read("cpu.max", buf, sizeof(buf)) ||
	    sscanf(buf, "%lld %lld", &quota, &period) != 2 || period <= 0)
		return json_null(); /* "max": no quota */
	return json_real((double)quota / (double)period);
}

static json_t *memory_limit(void)
{
	char buf[128];
	char *end;
	long long limit;

	if (!cgroup_read("memory.max", buf, sizeof(buf)))
		return json_null();
	limit = strtoll(buf, &end, 10);
	if (end == buf)
		return json_null(); /* "max" */
	return json_integer(limit);
}

static json_t *ceilings(void)
{
	static const struct {
		const char *name, *unit;
	} known[] = {
		{ "flops_dp", "flop/s" },	 { "flops_sp", "flop/s" },
		{ "dram_bandwidth", "B/s" },	 { "network_bandwidth", "B/s" },
		{ "network_latency", "s" },
	};
	json_t *list = json_array();
	size_t i;

	for (i = 0; list && i < sizeof(known) / sizeof(known[0]); i++)
		json_array_append_new(list, json_pack("{s:s, s:n, s:s, s:s, s:s}", "name",
						      known[i].name, "value", "unit", known[i].unit,
						      "quality", "unavailable", "reason",
						      "not calibrated on this Machine"));
	return list;
}

json_t *machine_snapshot(void)
{
	struct utsname u;
	cpu_set_t set;
	json_t *mask, *m;
	int cpu;

	if (uname(&u))
		memset(&u, 0, sizeof(u));
	mask = json_array();
	CPU_ZERO(&set);
	if (mask && !sched_getaffinity(0, sizeof(set), &set))
		for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
			if (CPU_ISSET(cpu, &set))
				json_array_append_new(mask, json_integer(cpu));
	m = json_pack("{s:s, s:s, s:s, s:o, s:i, s:{s:i, s:o, s:o, s:o}, s:o}", "system", u.sysname,
		      "kernel", u.release, "architecture", u.machine, "cpu_model", cpu_model(),
		      "logical_cores", (int)sysconf(_SC_NPROCESSORS_ONLN), "allocation",
		      "visible_cores", CPU_COUNT(&set), "affinity_mask", mask ? mask : json_null(),
		      "cpu_quota", cpu_quota(), "memory_limit_bytes", memory_limit(), "ceilings",
		      ceilings());
	if (!m)
		errno = ENOMEM;
	return m;
}
