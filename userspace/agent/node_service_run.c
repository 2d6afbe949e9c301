/* node_service_run — the Runs of the node service: run-start, run-end
 * (the linger, then the end), run-interrupt, and the Runs whose client
 * went away. See node_service.h for the requests. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/node_service_internal.h"
#include "userspace/control/control.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"

#define LINGER_MAX_MS (24 * 3600 * 1000)
#define BUDGET_MAX_MS (24 * 3600 * 1000)

static void iso_now(char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int is_hex32(const char *s)
{
	size_t i;

	for (i = 0; s && i < 32; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s && s[32] == '\0';
}

static int new_run_id(char id[33])
{
	unsigned char b[16];
	size_t i;

	if (getrandom(b, sizeof(b), 0) != sizeof(b))
		return -errno;
	for (i = 0; i < sizeof(b); i++)
		sprintf(id + 2 * i, "%02x", b[i]);
	return 0;
}

static struct ns_run *find_run(struct node_service *ns, struct ns_client *c, const char *run_id)
{
	struct ns_run *r;

	for (r = ns->runs; run_id && r; r = r->next)
		if (r->client == c && !strcmp(r->run_id, run_id))
			return r;
	return NULL;
}

void ns_run_free(struct ns_run *r)
{
	struct ns_run **p;

	for (p = &r->ns->runs; *p && *p != r; p = &(*p)->next)
		;
	if (*p)
		*p = r->next;
	json_decref(r->exit_code);
	json_decref(r->outlived);
	json_decref(r->info);
	free(r);
}

struct ns_run *ns_run_new(struct node_service *ns, struct ns_client *c)
{
	struct ns_run *r = calloc(1, sizeof(*r));

	if (!r || new_run_id(r->run_id)) {
		free(r);
		return NULL;
	}
	r->ns = ns;
	r->client = c;
	r->exit_code = json_null();
	r->next = ns->runs;
	ns->runs = r;
	return r;
}

static int add_degradation(const char *name, const char *message, const char *remedy, void *ctx)
{
	return json_array_append_new(ctx, json_pack("{s:s, s:s, s:s}", "name", name, "message",
						    message, "remedy", remedy)) ? -ENOMEM : 0;
}


const char *ns_answer_why(int err, const char *json, const char *timeout_why)
{
	if (err == -ETIMEDOUT && timeout_why)
		return timeout_why;
	return json ? json : strerror(-err);
}

void ns_run_take_run_dir(struct ns_run *r, const json_t *ack)
{
	const char *dir = json_string_value(json_object_get(ack, "run_dir"));

	if (dir)
		snprintf(r->run_dir, sizeof(r->run_dir), "%s", dir);
}

int ns_run_started(struct ns_run *r, struct ns_client *c, const char *request, int err,
		   const char *json, const char *timeout_why)
{
	json_t *ack;

	if (err < 0) {
		ns_reply(r->ns, c, request,
			 control_error_reply(err, "%s", ns_answer_why(err, json, timeout_why)));
		ns_run_free(r);
		return err;
	}
	ack = json ? json_loads(json, 0, NULL) : NULL;
	ns_run_take_run_dir(r, ack);
	json_decref(ack);
	r->state = NS_RUN_ACTIVE;
	return 0;
}

/* START's answer: the Run exists (or not) */
static void on_started(void *ctx, int err, const char *json)
{
	struct ns_run *r = ctx;
	struct node_service *ns = r->ns;
	json_t *degradations;

	if (ns_run_started(r, r->client, CONTROL_RUN_START, err, json,
			   "the aggregator did not answer START within 5 s: is it running?"))
		return;
	if (!ns->quiet)
		pr_info("Run %s of uid %u started in '%s'", r->run_id, (unsigned)r->uid, r->run_dir);
	if (!r->client) { /* gone while it started */
		r->interrupted = 1;
		ns_run_finish(r);
		return;
	}
	degradations = json_array();
	agent_for_each_degradation(ns->agent, add_degradation, degradations);
	ns_reply(ns, r->client, CONTROL_RUN_START,
		 control_ok_reply(json_pack("{s:s, s:s, s:b, s:i, s:I, s:o}", "run_id", r->run_id,
					    "run_dir", r->run_dir, "sampling",
					    agent_sampling(ns->agent), "cpus", agent_cpus(ns->agent),
					    "frequency", (json_int_t)ns->frequency, "degradations",
					    degradations)));
}

/* the fields of run-start: 0, or -EINVAL with err */
static int check_start(const json_t *req, char *err, size_t errlen)
{
	const char *runs_dir = json_string_value(json_object_get(req, "runs_dir"));
	const json_t *exe = json_object_get(req, "target_exe");

	if (!json_is_object(json_object_get(req, "run")))
		snprintf(err, errlen, "run-start without its \"run\" object");
	else if (!runs_dir || runs_dir[0] != '/')
		snprintf(err, errlen, "run-start needs \"runs_dir\", an absolute path");
	else if (!is_hex32(json_string_value(json_object_get(req, "token"))))
		snprintf(err, errlen, "run-start needs \"token\", 32 lowercase hex digits");
	else if (!json_is_integer(json_object_get(req, "pid")) ||
		 json_integer_value(json_object_get(req, "pid")) < 1 ||
		 json_integer_value(json_object_get(req, "pid")) > INT_MAX)
		snprintf(err, errlen, "run-start needs \"pid\", the process to observe (1 to %d)",
			 INT_MAX);
	else if (!json_is_string(json_object_get(req, "symbolizer")))
		snprintf(err, errlen, "run-start needs \"symbolizer\", a path or \"\"");
	else if (exe && !json_is_null(exe) && !json_is_string(exe))
		snprintf(err, errlen, "run-start: \"target_exe\" is a path or null");
	else if (json_object_get(req, "mpi_budget") &&
		 (!json_is_number(json_object_get(req, "mpi_budget")) ||
		  !(json_number_value(json_object_get(req, "mpi_budget")) > 0) ||
		  json_number_value(json_object_get(req, "mpi_budget")) >= 1))
		snprintf(err, errlen, "run-start: \"mpi_budget\" is a share, more than 0 and less than 1");
	else if (agent_components_of_json(req, NULL, NULL))
		snprintf(err, errlen, "run-start: \"components\" is an array of at most %d "
				      "non-empty strings, \"step\" a non-empty string",
			 AGENT_MAX_COMPONENTS);
	else
		return 0;
	return -EINVAL;
}

/* START as the Aggregator reads it; what the node service knows is its
 * own word, never the request's: the owner (the peer), the origin node
 * (its Batches carry the service's node name), the frequency */
static char *start_json(const struct ns_run *r, const json_t *req)
{
	json_t *run = json_deep_copy(json_object_get(req, "run"));
	json_t *start;
	char *text;

	if (!run || json_object_set_new(run, "node", json_string(r->ns->node))) {
		json_decref(run);
		return NULL;
	}
	start = json_pack(
	    "{s:o, s:O, s:{s:I, s:I}, s:O, s:O, s:I, s:b}", "run", run,
	    "runs_dir", json_object_get(req, "runs_dir"), "owner", "uid", (json_int_t)r->uid, "gid",
	    (json_int_t)r->gid, "symbolizer", json_object_get(req, "symbolizer"), "token",
	    json_object_get(req, "token"), "frequency", (json_int_t)r->ns->frequency, "mpi_events",
	    json_is_true(json_object_get(req, "mpi_events")));
	text = start ? json_dumps(start, JSON_COMPACT) : NULL;
	json_decref(start);
	return text;
}

/* the follow of the client's process (first: right after it was checked),
 * and the degradations the client knows of (the symbolizer it resolved) */
static void seed_target(struct ns_run *r, const json_t *req)
{
	struct agent *a = r->ns->agent;
	size_t i;
	json_t *d;
	int e;

	e = agent_target_follow(a, r->run_id, r->pid);
	if (e) {
		char message[256];

		snprintf(message, sizeof(message), "the application (pid %d) could not be followed: "
			 "%s: the Run has no samples of it", (int)r->pid, strerror(-e));
		pr_warn("%s", message);
		agent_target_add_degradation(a, r->run_id, "target-not-followed", message,
					     "run nunatak -v to see why; a runs path much shorter "
					     "than PATH_MAX avoids /proc lines too long to read");
	}
	json_array_foreach(json_object_get(req, "degradations"), i, d) {
		const char *name = json_string_value(json_object_get(d, "name"));
		const char *message = json_string_value(json_object_get(d, "message"));
		const char *remedy = json_string_value(json_object_get(d, "remedy"));

		if (name && message)
			agent_target_add_degradation(a, r->run_id, name, message, remedy ?: "");
	}
}

/* a pidfd of pid (the same process at both looks), or -errno */
static int pid_hold(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : fd;
}

/* The second look, after the follow: the process of the first is alive
 * (pidfd: not a reused pid) and still the peer's to observe (it did not
 * exec a setuid program meanwhile). 0, or -errno with err. */
static int still_observable(const struct ns_client *c, pid_t pid, int pidfd, char *err,
			    size_t errlen)
{
	if (syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0)) {
		snprintf(err, errlen, "process %d ended while it was being followed", (int)pid);
		return -ESRCH;
	}
	return control_may_observe(&c->peer, pid, err, errlen);
}

/* The Run of a refused second look: refused to the client now, ended and
 * discarded without it (on_started() does when START is acked) */
static void refuse_run(struct ns_run *r, int e, const char *err)
{
	ns_reply(r->ns, r->client, CONTROL_RUN_START, control_error_reply(e, "%s", err));
	r->client = NULL;
	r->discard = 1;
	r->interrupted = 1;
	if (r->state == NS_RUN_ACTIVE)
		ns_run_finish(r);
}

int ns_run_start(struct node_service *ns, struct ns_client *c, json_t *req)
{
	struct agent_target_opts o = { .mpi_events = json_is_true(json_object_get(req, "mpi_events")),
				       .target_exe = json_string_value(json_object_get(req, "target_exe")),
				       .token = json_string_value(json_object_get(req, "token")),
				       .mpi_budget = json_is_true(json_object_get(req, "mpi_exact"))
							 ? NAN
							 : json_number_value(json_object_get(req, "mpi_budget")) };
	const char *patterns[AGENT_MAX_COMPONENTS];
	char err[1024], run_id[33];
	struct ns_run *r;
	char *start;
	int e;

	int pidfd = -1;

	e = check_start(req, err, sizeof(err));
	if (!e) {
		pidfd = pid_hold((pid_t)json_integer_value(json_object_get(req, "pid")));
		e = pidfd < 0 ? pidfd : 0;
		if (e)
			snprintf(err, sizeof(err), "process %d cannot be observed: %s",
				 (int)json_integer_value(json_object_get(req, "pid")),
				 e == -ESRCH ? "it does not exist" : strerror(-e));
	}
	if (!e)
		e = control_may_observe(&c->peer, (pid_t)json_integer_value(json_object_get(req, "pid")),
					err, sizeof(err));
	if (e) {
		if (pidfd >= 0)
			close(pidfd);
		ns_reply(ns, c, CONTROL_RUN_START, control_error_reply(e, "%s", err));
		return e;
	}
	r = ns_run_new(ns, c);
	if (!r) {
		close(pidfd);
		ns_reply(ns, c, CONTROL_RUN_START, control_error_reply(-ENOMEM, "no memory for a Run"));
		return -ENOMEM;
	}
	r->uid = c->peer.uid;
	r->gid = c->peer.gid;
	r->pid = (pid_t)json_integer_value(json_object_get(req, "pid"));
	if (o.target_exe && !control_may_read(&c->peer, o.target_exe)) {
		pr_info("Run of uid %u: target '%s' is not the caller's to read: no MPI probing by "
			"its libraries", (unsigned)c->peer.uid, o.target_exe);
		o.target_exe = NULL;
	}
	agent_components_of_json(req, &o, patterns); /* checked by check_start */
	start = start_json(r, req);
	memcpy(run_id, r->run_id, sizeof(run_id));
	o.run_id = run_id;
	o.uid = r->uid;
	o.gid = r->gid;
	o.start_json = start;
	e = start ? agent_target_start(ns->agent, &o, on_started, r) : -ENOMEM;
	free(start);
	if (e) {
		close(pidfd);
		ns_reply(ns, c, CONTROL_RUN_START,
			 control_error_reply(e, "the agent cannot start the Run: %s", strerror(-e)));
		ns_run_free(r);
		return e;
	}
	/* on_started() may have run already, and freed r on an error */
	if (agent_target_exists(ns->agent, run_id)) {
		seed_target(r, req);
		e = still_observable(c, r->pid, pidfd, err, sizeof(err));
		if (e)
			refuse_run(r, e, err);
	}
	close(pidfd);
	return 0;
}

struct outlived {
	pid_t app;
	json_t *list;
	char text[512];
};

static int name_outlived(pid_t pid, const char *comm, void *ctx)
{
	struct outlived *o = ctx;
	size_t len = strlen(o->text);

	/* a report lost or not read yet: the kernel knows better */
	if (pid == o->app || (kill(pid, 0) && errno == ESRCH))
		return 0;
	json_array_append_new(o->list, json_pack("{s:i, s:s}", "pid", (int)pid, "comm", comm));
	if (len + 32 + strlen(comm) >= sizeof(o->text)) {
		if (!strstr(o->text, ", ..."))
			snprintf(o->text + len, sizeof(o->text) - len, ", ...");
		return 0;
	}
	snprintf(o->text + len, sizeof(o->text) - len, "%s%d%s%s%s", len ? ", " : "", (int)pid,
		 comm[0] ? " (" : "", comm, comm[0] ? ")" : "");
	return 0;
}

/* the Target's processes alive but the application: their count, in o */
static size_t count_outlived(struct ns_run *r, struct outlived *o)
{
	memset(o, 0, sizeof(*o));
	o->app = r->pid;
	json_decref(r->outlived);
	r->outlived = o->list = json_array();
	agent_target_for_each_live_process(r->ns->agent, r->run_id, name_outlived, o);
	return json_array_size(o->list);
}

/* Names what was cut short in a processes-outlived Degradation. */
static void outlived_degradation(struct ns_run *r)
{
	struct outlived o;
	char message[768];
	size_t n = count_outlived(r, &o);

	if (!n)
		return;
	snprintf(message, sizeof(message),
		 "%zu process%s of the Target outlived the application by %.1f s and %s observed "
		 "no further%s: %s",
		 n, n > 1 ? "es" : "", (clock_monotonic_ms() - r->linger_start_ms) / 1e3,
		 n > 1 ? "were" : "was", r->interrupted ? " (nunatak was interrupted)" : "", o.text);
	agent_target_add_degradation(r->ns->agent, r->run_id, "processes-outlived", message,
				     "raise --linger to observe them until they exit, or have the "
				     "application wait for its children");
}

static void on_ended(void *ctx, int err, const char *json)
{
	struct ns_run *r = ctx;
	json_t *ack, *reply;

	if (r->kind != NS_RUN_PLAIN) {
		ns_job_ended(r, err, json);
		return;
	}
	if (err < 0) {
		reply = control_error_reply(err, "the Run was not finalized: %s",
					    ns_answer_why(err, json,
							  "the aggregator did not answer in time"));
	} else {
		ack = json ? json_loads(json, 0, NULL) : NULL;
		ns_run_take_run_dir(r, ack);
		json_decref(ack);
		reply = control_ok_reply(json_pack("{s:s, s:O, s:b}", "run_dir", r->run_dir,
						   "outlived", r->outlived ?: json_array(),
						   "interrupted", r->interrupted));
	}
	if (!r->ns->quiet)
		pr_info("Run %s %s", r->run_id, err < 0 ? "not finalized" : "finalized");
	ns_reply(r->ns, r->client, CONTROL_RUN_END, reply);
	ns_run_free(r);
}

/* the end of the Target, FINALIZE; on_ended() replies. A prolog Run's is
 * this node's Epilog (section 3 of design8: the last node's finalizes) */
void ns_run_finish(struct ns_run *r)
{
	int prolog = r->kind == NS_RUN_PROLOG;
	json_t *fin;
	char *text;
	int e;

	if (r->state == NS_RUN_ENDING)
		return;
	if (!r->discard && !r->job_id) /* a job's processes go on: none outlived */
		outlived_degradation(r);
	if (!r->end[0])
		iso_now(r->end, sizeof(r->end));
	r->state = NS_RUN_ENDING;
	fin = json_pack("{s:O, s:s, s:i, s:b, s:i, s:b}", "exit_code", r->exit_code, "end", r->end,
			"symbolizer_budget_ms", prolog ? NS_EPILOG_BUDGET_MS : r->symbolizer_budget_ms,
			"interrupted", r->interrupted, "nodes_wait_ms",
			prolog ? NS_EPILOG_NODES_WAIT_MS : NS_NODES_WAIT_MS, "discard", r->discard);
	if (fin && prolog)
		json_object_set_new(fin, "job_epilog", json_true());
	text = fin ? json_dumps(fin, JSON_COMPACT) : NULL;
	json_decref(fin);
	e = text ? agent_target_end(r->ns->agent, r->run_id, text, on_ended, r) : -ENOMEM;
	free(text);
	if (e)
		on_ended(r, e, NULL);
}

/* a lingering Run: ended when its processes are gone, at its bound, or
 * when interrupted */
static int linger_check(struct ns_run *r)
{
	struct outlived o;

	if (r->interrupted || r->discard || clock_monotonic_ms() >= r->linger_end_ms ||
	    !count_outlived(r, &o)) {
		ns_run_finish(r); /* may free r */
		return 0;
	}
	return 1;
}

int ns_run_end(struct node_service *ns, struct ns_client *c, json_t *req)
{
	const char *run_id = json_string_value(json_object_get(req, "run_id"));
	const char *end = json_string_value(json_object_get(req, "end"));
	json_t *code = json_object_get(req, "exit_code");
	json_int_t linger = json_integer_value(json_object_get(req, "linger_ms"));
	json_int_t budget = json_integer_value(json_object_get(req, "symbolizer_budget_ms"));
	struct ns_run *r = find_run(ns, c, run_id);

	if (r && r->kind == NS_RUN_ATTACH && r->state == NS_RUN_ENDING && !r->end_asked) {
		r->end_asked = 1; /* ended by a detach or the job's end: answered then */
		return 0;
	}
	if (!r || r->state != NS_RUN_ACTIVE) {
		int e = !r ? -ENOENT : r->state == NS_RUN_STARTING ? -EBUSY : -EALREADY;

		ns_reply(ns, c, CONTROL_RUN_END, control_error_reply(e, "%s '%s'", !r ?
			 "no Run of this connection is" : e == -EBUSY ? "not started yet:" :
			 "already ending:", run_id ? run_id : "(no run_id)"));
		return e;
	}
	json_decref(r->exit_code);
	r->exit_code = json_is_integer(code) ? json_incref(code) : json_null();
	if (end)
		snprintf(r->end, sizeof(r->end), "%s", end);
	r->symbolizer_budget_ms = (int)(budget < 0 ? 0 : budget > BUDGET_MAX_MS ? BUDGET_MAX_MS : budget);
	r->discard = json_is_true(json_object_get(req, "discard"));
	r->state = NS_RUN_LINGER;
	if (r->kind == NS_RUN_ATTACH) {
		r->end_asked = 1;
		r->ended_by = "run-end";
	}
	r->linger_start_ms = clock_monotonic_ms();
	r->linger_end_ms = r->linger_start_ms +
			   (linger < 0 ? 0 : linger > LINGER_MAX_MS ? LINGER_MAX_MS : linger);
	/* looked at by ns_runs_tick(), after the loop's agent_dispatch() has
	 * applied what the kernel reported up to now (the forks of processes
	 * that outlive the application) */
	return 0;
}

int ns_run_interrupt(struct node_service *ns, struct ns_client *c, json_t *req)
{
	const char *run_id = json_string_value(json_object_get(req, "run_id"));
	struct ns_run *r = find_run(ns, c, run_id);

	if (!r) {
		ns_reply(ns, c, CONTROL_RUN_INTERRUPT,
			 control_error_reply(-ENOENT, "no Run of this connection is '%s'",
					     run_id ? run_id : "(no run_id)"));
		return -ENOENT;
	}
	r->interrupted = 1;
	if (r->state == NS_RUN_ENDING)
		agent_target_interrupt(ns->agent, r->run_id);
	ns_reply(ns, c, CONTROL_RUN_INTERRUPT, control_ok_reply(NULL));
	/* a lingering Run ends at the next tick */
	return 0;
}

/* r ends now, interrupted, whatever it was doing */
static void interrupt_run(struct ns_run *r)
{
	r->interrupted = 1;
	switch (r->state) {
	case NS_RUN_STARTING: /* on_started() ends it */
		break;
	case NS_RUN_ACTIVE:
	case NS_RUN_LINGER:
		if (!r->linger_start_ms)
			r->linger_start_ms = clock_monotonic_ms();
		ns_run_finish(r);
		break;
	case NS_RUN_ENDING:
		agent_target_interrupt(r->ns->agent, r->run_id);
		break;
	}
}

void ns_runs_orphan(struct node_service *ns, struct ns_client *c)
{
	struct ns_run *r, *next;

	for (r = ns->runs; r; r = next) {
		next = r->next; /* finish() may free r */
		if (r->waiter == c)
			r->waiter = NULL;
		if (r->client != c)
			continue;
		r->client = NULL;
		if (!ns->quiet && r->state != NS_RUN_ENDING)
			pr_warn("the client of Run %s went away: the Run ends, interrupted", r->run_id);
		interrupt_run(r);
	}
}

void ns_runs_end_all(struct node_service *ns)
{
	struct ns_run *r, *next;

	for (r = ns->runs; r; r = next) {
		next = r->next;
		if (!r->ended_by)
			r->ended_by = "service-stop";
		interrupt_run(r);
	}
}

int ns_runs_tick(struct node_service *ns)
{
	struct ns_run *r, *next;
	int lingering = 0;

	for (r = ns->runs; r; r = next) {
		next = r->next;
		if (r->job_id && r->state == NS_RUN_ACTIVE &&
		    !agent_target_exists(ns->agent, r->run_id)) {
			/* the Agent ended it (a CLOSE of a prolog Run): nothing to end */
			ns_job_ended(r, -ECONNABORTED, "the aggregator ended the Run");
			continue;
		}
		if (r->state != NS_RUN_LINGER)
			continue;
		if (linger_check(r))
			lingering = 1;
	}
	return lingering ? NS_LINGER_POLL_MS : -1;
}
