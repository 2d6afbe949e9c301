/* doctor_service — see doctor_service.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/control/control_client.h"
#include "userspace/doctor/doctor_service.h"
#include "userspace/machine/machine.h"
#include "userspace/machine/machine_cache.h"

static const char REMEDY_NO_DAEMON[] =
    "start nunatakd as root (deploy/README.md) so that every user profiles through it; "
    "without it `nunatak run` profiles in-process (as root, or with CAP_BPF and "
    "CAP_PERFMON)";

static const char *str(const json_t *o, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : dflt;
}

static void aggregators_from(struct doctor_report *r, const json_t *aggs)
{
	const json_t *a;
	size_t i;

	if (!json_array_size(aggs)) {
		doctor_check(r, "aggregator", DOCTOR_OK, NULL,
			     "nunatakd aggregates its Runs itself (no [service] aggregators)");
		return;
	}
	json_array_foreach(aggs, i, a)
	{
		if (json_object_get(a, "error"))
			doctor_check(r, "aggregator", DOCTOR_MISSING,
				     "start nunatak-aggregator there, or fix [service] aggregators "
				     "in nunatak.toml",
				     "%s: %s", str(a, "endpoint", "?"), str(a, "error", "?"));
		else
			doctor_check(r, "aggregator", DOCTOR_OK, NULL,
				     "%s answers (nunatak %s, %zu Agents, %zu Runs in progress)",
				     str(a, "endpoint", "?"), str(a, "version", "?"),
				     json_array_size(json_object_get(a, "agents")),
				     json_array_size(json_object_get(a, "runs")));
	}
}

void doctor_service_from_status(struct doctor_report *r, const char *path, int e, const char *err,
				const json_t *reply)
{
	const json_t *agent = reply ? json_object_get(reply, "agent") : NULL;

	if (e == -ENOENT || e == -ECONNREFUSED) {
		doctor_check(r, "nunatakd", DOCTOR_MISSING, REMEDY_NO_DAEMON,
			     "no node service runs here (%s%s)",
			     e == -ENOENT ? "no socket at " : "", e == -ENOENT ? path : err);
		doctor_check(r, "aggregator", DOCTOR_MISSING, REMEDY_NO_DAEMON,
			     "no node service, so no aggregator it publishes to: `nunatak run` "
			     "aggregates in-process");
		return;
	}
	if (e) {
		doctor_check(r, "nunatakd", e == -EPERM ? DOCTOR_MISSING : DOCTOR_WARNING,
			     e == -EPERM ? "only a socket and directory owned by root are used: "
					   "start nunatakd as root, or unset NUNATAK_AGENT_SOCKET"
					 : "check nunatakd (journalctl -u nunatakd), then "
					   "`nunatak status`",
			     "the node service at %s gave no status: %s", path, err);
		return;
	}
	doctor_check(r, "nunatakd", DOCTOR_OK, NULL,
		     "the node service at %s answers: node %s, %s, %zu active Targets", path,
		     str(agent, "node", "?"),
		     json_is_true(json_object_get(agent, "sampling")) ? "sampling" : "not sampling",
		     json_array_size(json_object_get(agent, "targets")));
	aggregators_from(r, json_object_get(reply, "aggregators"));
}

void doctor_service_checks(struct doctor_report *r, const char *path)
{
	char err[1024] = "";
	json_t *reply = NULL;
	int e = control_ask_status(path, DOCTOR_STATUS_TIMEOUT_MS, &reply, err, sizeof(err));

	doctor_service_from_status(r, path, e, err, reply);
	json_decref(reply);
}

/* the Ceilings of a profile: "flops_dp measured, dram_bandwidth estimated..." */
static void ceilings_text(const json_t *ceilings, char *buf, size_t len)
{
	const json_t *c;
	size_t i, n = 0;

	buf[0] = '\0';
	json_array_foreach(ceilings, i, c)
	{
		int w = snprintf(buf + n, len - n, "%s%s %s", i ? ", " : "", str(c, "name", "?"),
				 str(c, "quality", "?"));

		if (w < 0 || (size_t)w >= len - n)
			break;
		n += (size_t)w;
	}
}

void doctor_machine_profile_check(struct doctor_report *r)
{
	static const char remedy[] = "run `nunatak calibrate` once on this Machine (and "
				     "allocation shape)";
	json_t *machine = machine_describe(), *profile = NULL;
	char *identity = machine ? machine_identity(machine) : NULL;
	char dir[4096] = "?", text[512], msg[700];
	int e = identity ? machine_cache_load(identity, &profile) : -errno;

	machine_cache_dir(dir, sizeof(dir));
	if (!e) {
		ceilings_text(json_object_get(profile, "ceilings"), text, sizeof(text));
		doctor_check(r, "machine_profile", DOCTOR_OK, NULL,
			     "calibrated %s (calibration version %d): %s",
			     str(profile, "calibrated", "?"), CALIBRATION_VERSION, text);
	} else {
		snprintf(msg, sizeof(msg),
			 e == -ENOENT
			     ? "no Machine profile of this Machine in %s (or one of an "
			       "older calibration): Ceilings are theoretical (estimated) or "
			       "unavailable"
			     : "the Machine profile in %s cannot be used: %s",
			 dir, strerror(-e));
		doctor_check(r, "machine_profile", e == -ENOENT ? DOCTOR_MISSING : DOCTOR_WARNING,
			     remedy, "%s", msg);
		/* no Degradation: a Run records no missing capability for it,
		 * its manifest's Ceilings say estimated/unavailable and why */
	}
	json_decref(profile);
	free(identity);
	json_decref(machine);
}
