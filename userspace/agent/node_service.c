/* node_service — see node_service.h. This file: the service's life, its
 * event loop and its clients; the Runs are in node_service_run.c. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/node_service_internal.h"
#include "userspace/aggregator/aggregator.h"
#include "userspace/config/config.h"
#include "userspace/control/control.h"
#include "userspace/log/clock.h"
#include "userspace/log/log.h"

/* epoll tags besides clients (whose tag is their struct) */
static char tag_listen, tag_stop, tag_signal, tag_agent;

static int start_agent(struct node_service *ns, const struct service_config *sc, char *err,
		       size_t errlen)
{
	struct agent_opts ao = { .node = ns->node, .zmq_ctx = ns->zctx,
				 .endpoints = (const char *const *)ns->endpoints,
				 .n_endpoints = ns->n_endpoints, .frequency = ns->frequency,
				 .unwinder = ns->unwinder, .pmu = ns->pmu,
				 .drain_interval_ms = ns->drain_interval_ms,
				 .mpi_budget = ns->cfg ? ns->cfg->mpi_budget_pct / 100 : 0 };
	char why[1024] = "";

	if (ns->curve) {
		ao.curve_self = &ns->kp;
		ao.curve_server_public = ns->server_public;
	}
	if (sc && sc->spool_dir && sc->spool_max_bytes) {
		ao.spool_dir = sc->spool_dir;
		ao.spool_cap_bytes = sc->spool_max_bytes;
	}
	if (sc)
		ao.netns_only = sc->netns_only;
	ns->agent = agent__new(&ao, why, sizeof(why));
	if (!ns->agent) {
		int e = -errno;

		snprintf(err, errlen, "cannot start the agent: %s", why[0] ? why : strerror(-e));
		return e ? e : -ENOMEM;
	}
	return 0;
}

static int watch(struct node_service *ns, int fd, void *tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = tag };

	return epoll_ctl(ns->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

int ns_watch_wakeup(struct node_service *ns, int fd)
{
	/* the Agent's tag: nothing is done for the event itself, the turn of
	 * the loop it ends runs the ticks */
	return watch(ns, fd, &tag_agent);
}

static int open_descriptors(struct node_service *ns, const struct node_service_opts *o, char *err,
			    size_t errlen)
{
	int e;

	ns->epfd = epoll_create1(EPOLL_CLOEXEC);
	ns->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ns->epfd < 0 || ns->stop_fd < 0) {
		e = -errno;
		snprintf(err, errlen, "cannot start the node service: %s", strerror(-e));
		return e;
	}
	if (o->control_path) {
		e = control_listen(o->control_path, 0666, &ns->listen_fd, err, errlen);
		if (e)
			return e;
		snprintf(ns->control_path, sizeof(ns->control_path), "%s", o->control_path);
	}
	e = watch(ns, ns->stop_fd, &tag_stop);
	if (!e && ns->listen_fd >= 0)
		e = watch(ns, ns->listen_fd, &tag_listen);
	if (!e && ns->signal_fd >= 0)
		e = watch(ns, ns->signal_fd, &tag_signal);
	if (!e)
		e = watch(ns, agent_fd(ns->agent), &tag_agent);
	if (e)
		snprintf(err, errlen, "cannot start the node service: epoll: %s", strerror(-e));
	return e;
}

struct node_service *node_service__new(const struct node_service_opts *o, char *err,
				       size_t errlen)
{
	struct node_service *ns = calloc(1, sizeof(*ns));
	int e;

	if (!ns) {
		snprintf(err, errlen, "cannot start the node service: %s", strerror(ENOMEM));
		errno = ENOMEM;
		return NULL;
	}
	ns->epfd = ns->listen_fd = ns->stop_fd = -1;
	ns->signal_fd = o->signal_fd;
	ns->quiet = o->quiet;
	ns->cfg = o->cfg;
	ns->unwinder = o->unwinder;
	ns->pmu = o->pmu;
	ns->drain_interval_ms = o->drain_interval_ms;
	ns->frequency = o->cfg ? o->cfg->sampling_frequency : CONFIG_DEFAULT_SAMPLING_FREQUENCY;
	if (o->node)
		snprintf(ns->node, sizeof(ns->node), "%s", o->node);
	else if (o->service && o->service->node)
		snprintf(ns->node, sizeof(ns->node), "%s", o->service->node);
	else if (gethostname(ns->node, sizeof(ns->node) - 1))
		strcpy(ns->node, "localhost");
	ns->zctx = o->zmq_ctx;
	if (!ns->zctx) {
		ns->zctx = zmq_ctx_new();
		ns->own_zctx = 1;
	}
	if (!ns->zctx) {
		e = -ENOMEM;
		snprintf(err, errlen, "cannot start the node service: ZeroMQ: %s",
			 zmq_strerror(zmq_errno()));
		goto fail;
	}
	e = ns_choose_endpoints(ns, o->service, err, errlen);
	if (!e)
		e = start_agent(ns, o->service, err, errlen);
	if (!e)
		e = open_descriptors(ns, o, err, errlen);
	if (e)
		goto fail;
	return ns;
fail:
	node_service__free(ns);
	errno = -e;
	return NULL;
}

/* 1 when uid holds its share of the connections already (root: never) */
static int uid_full(const struct node_service *ns, uid_t uid)
{
	const struct ns_client *c;
	int n = 0;

	if (uid == 0)
		return 0;
	for (c = ns->clients; c; c = c->next)
		n += c->peer.uid == uid;
	return n >= NS_MAX_CLIENTS_PER_UID;
}

/* any user can have connections refused at will: said at most once per
 * NS_REFUSED_WARN_MS, with how many were refused */
static void refused_warn(struct node_service *ns, uid_t uid)
{
	long long now = clock_monotonic_ms();

	ns->refused++;
	if (ns->refused_warned_ms && now - ns->refused_warned_ms < NS_REFUSED_WARN_MS)
		return;
	pr_warn("%d control connection%s refused (the last of uid %u): one uid may hold %d at "
		"once (said at most every %d s)", ns->refused, ns->refused == 1 ? "" : "s",
		(unsigned)uid, NS_MAX_CLIENTS_PER_UID, NS_REFUSED_WARN_MS / 1000);
	ns->refused = 0;
	ns->refused_warned_ms = now;
}

int node_service_add_client(struct node_service *ns, int fd)
{
	struct ns_client *c;
	int e;

	if (ns->n_clients >= NS_MAX_CLIENTS) {
		close(fd);
		return -EMFILE;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	c->reading = 1;
	e = control_peer_of(fd, &c->peer);
	if (!e && uid_full(ns, c->peer.uid)) {
		refused_warn(ns, c->peer.uid);
		e = -EUSERS;
	}
	if (!e)
		e = watch(ns, fd, c);
	if (e) {
		close(fd);
		free(c);
		return e;
	}
	control_socket_room(fd);
	c->next = ns->clients;
	ns->clients = c;
	ns->n_clients++;
	return 0;
}

static void drop_client(struct node_service *ns, struct ns_client *c)
{
	struct ns_client **p;

	for (p = &ns->clients; *p && *p != c; p = &(*p)->next)
		;
	if (*p)
		*p = c->next;
	ns->n_clients--;
	ns_runs_orphan(ns, c);
	ns_status_forget(ns, c);
	epoll_ctl(ns->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c);
}

/* EPOLLIN of c on while it may have more requests pending, off beyond */
static void pace(struct node_service *ns, struct ns_client *c)
{
	int want = c->pending < NS_MAX_PENDING;
	struct epoll_event ev = { .events = want ? EPOLLIN : 0, .data.ptr = c };

	if (want == c->reading || c->dead)
		return;
	/* off: its hang-up (EPOLLHUP) is still reported */
	if (epoll_ctl(ns->epfd, EPOLL_CTL_MOD, c->fd, &ev))
		c->dead = 1;
	c->reading = want;
}

static void send_reply(struct node_service *ns, struct ns_client *c, const char *request,
		       json_t *reply, int asked)
{
	int e;

	if (!reply)
		reply = control_error_reply(-ENOMEM, "the node service is out of memory: try again");
	if (!reply || !c || c->dead) {
		json_decref(reply);
		return;
	}
	json_object_set_new(reply, "reply", json_string(request));
	/* the loop never waits for a client: no room is a client that does
	 * not read its replies */
	e = control_send_msg(c->fd, reply, 0);
	if (e) {
		pr_warn("cannot answer the client (pid %d, uid %u): %s: it is dropped",
			(int)c->peer.pid, (unsigned)c->peer.uid,
			e == -ETIMEDOUT ? "it does not read its replies" : strerror(-e));
		c->dead = 1;
	}
	json_decref(reply);
	if (asked && c->pending > 0)
		c->pending--;
	pace(ns, c);
}

void ns_reply(struct node_service *ns, struct ns_client *c, const char *request, json_t *reply)
{
	send_reply(ns, c, request, reply, 1);
}

void ns_notify(struct node_service *ns, struct ns_client *c, const char *request, json_t *reply)
{
	send_reply(ns, c, request, reply, 0);
}

static const struct {
	const char *name;
	int (*fn)(struct node_service *ns, struct ns_client *c, json_t *req);
} requests[] = {
	{ CONTROL_RUN_START, ns_run_start }, { CONTROL_RUN_END, ns_run_end },
	{ CONTROL_RUN_INTERRUPT, ns_run_interrupt }, { CONTROL_STATUS, ns_status },
	{ CONTROL_ATTACH, ns_attach }, { CONTROL_DETACH, ns_detach },
	{ CONTROL_JOB_PROLOG, ns_job_prolog }, { CONTROL_JOB_EPILOG, ns_job_epilog },
};

static void dispatch_request(struct node_service *ns, struct ns_client *c, json_t *req)
{
	const char *name = json_string_value(json_object_get(req, "request"));
	size_t i;

	if (ns->stopping && name && strcmp(name, CONTROL_STATUS)) {
		ns_reply(ns, c, name, control_error_reply(-ESHUTDOWN, "the node service is stopping"));
		return;
	}
	for (i = 0; name && i < sizeof(requests) / sizeof(requests[0]); i++)
		if (!strcmp(name, requests[i].name)) {
			requests[i].fn(ns, c, req);
			return;
		}
	ns_reply(ns, c, name ? name : "", control_error_reply(-EINVAL,
		 "unknown request '%s': this node service knows run-start, run-end, run-interrupt, "
		 "status, attach, detach, job-prolog and job-epilog", name ? name : "(none)"));
}

/* what the client sent; 1 when it is to be dropped */
static int on_client(struct node_service *ns, struct ns_client *c)
{
	char err[256];
	int n, e;

	for (n = 0; n < NS_READS_PER_TURN && !c->dead && c->pending < NS_MAX_PENDING; n++) {
		json_t *req = NULL;

		e = control_recv_msg(c->fd, &req, err, sizeof(err));
		if (e == 0)
			return 0;
		if (e == -ECONNRESET || (e < 0 && e != -EMSGSIZE && e != -EBADMSG))
			return 1;
		c->pending++; /* ns_reply() takes it back */
		if (e < 0) {
			ns_reply(ns, c, "", control_error_reply(e, "refused: %s", err));
			continue;
		}
		dispatch_request(ns, c, req);
		json_decref(req);
	}
	pace(ns, c);
	return c->dead;
}

/* the listening socket out of the loop for NS_LISTEN_PAUSE_MS (no
 * descriptor left to accept with: it would wake the loop at once,
 * forever), or back in once that is over */
static void listen_pause(struct node_service *ns, int pause)
{
	if (ns->listen_fd < 0 || pause == !!ns->listen_paused_until_ms)
		return;
	if (pause) {
		epoll_ctl(ns->epfd, EPOLL_CTL_DEL, ns->listen_fd, NULL);
		ns->listen_paused_until_ms = clock_monotonic_ms() + NS_LISTEN_PAUSE_MS;
		if (ns->listen_paused_until_ms - ns->listen_warned_ms < 10000)
			return;
		ns->listen_warned_ms = ns->listen_paused_until_ms;
		pr_warn("no file descriptor left to accept control connections with (%s): "
			"accepting again in %d ms (said once per 10 s); raise LimitNOFILE / "
			"ulimit -n of nunatakd",
			strerror(errno), NS_LISTEN_PAUSE_MS);
	} else if (!watch(ns, ns->listen_fd, &tag_listen)) {
		ns->listen_paused_until_ms = 0;
	}
}

static void on_listen(struct node_service *ns)
{
	int fd, e;

	while ((fd = accept4(ns->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		e = node_service_add_client(ns, fd);
		if (e && e != -EUSERS)
			pr_warn("a control connection refused: %s", strerror(-e));
	}
	if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
		listen_pause(ns, 1);
}

static void begin_stop(struct node_service *ns, const char *why)
{
	if (ns->stopping)
		return;
	if (!ns->quiet)
		pr_warn("%s: ending every Run (interrupted)", why);
	ns->stopping = 1;
	ns->stop_deadline_ms = clock_monotonic_ms() + NODE_SERVICE_STOP_WAIT_MS;
	if (ns->listen_fd >= 0) {
		epoll_ctl(ns->epfd, EPOLL_CTL_DEL, ns->listen_fd, NULL);
		close(ns->listen_fd);
		ns->listen_fd = -1;
		ns->listen_paused_until_ms = 0;
		unlink(ns->control_path);
	}
	ns_runs_end_all(ns);
}

static void on_signal(struct node_service *ns)
{
	struct signalfd_siginfo si;

	while (read(ns->signal_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM) {
			char why[64];

			snprintf(why, sizeof(why), "%s", strsignal(si.ssi_signo));
			begin_stop(ns, why);
		}
	}
}

static int next_timeout(struct node_service *ns)
{
	/* the Runs first: ending one gives the Agent work (its last Batch,
	 * FINALIZE) that its timeout must count */
	int r = ns_runs_tick(ns), st = ns_status_tick(ns), t = agent_timeout_ms(ns->agent);

	if (r >= 0 && (t < 0 || r < t))
		t = r;
	if (st >= 0 && (t < 0 || st < t))
		t = st;
	if (ns->listen_paused_until_ms) {
		long long left = ns->listen_paused_until_ms - clock_monotonic_ms();

		if (left <= 0)
			listen_pause(ns, 0);
		else if (t < 0 || left < t)
			t = (int)left;
	}
	if (ns->stopping) {
		long long left = ns->stop_deadline_ms - clock_monotonic_ms();

		if (left < 0)
			left = 0;
		if (t < 0 || left < t)
			t = (int)left;
	}
	return t;
}

static void on_event(struct node_service *ns, struct epoll_event *ev)
{
	uint64_t v;

	if (ev->data.ptr == &tag_listen) {
		on_listen(ns);
	} else if (ev->data.ptr == &tag_stop) {
		(void)!read(ns->stop_fd, &v, sizeof(v));
		begin_stop(ns, "told to stop");
	} else if (ev->data.ptr == &tag_signal) {
		on_signal(ns);
	} else if (ev->data.ptr != &tag_agent) {
		struct ns_client *c = ev->data.ptr;

		if (!c->reading && (ev->events & (EPOLLHUP | EPOLLERR)))
			drop_client(ns, c);
		else if (on_client(ns, c))
			drop_client(ns, c);
	}
}

/* clients a reply could not reach */
static void drop_dead(struct node_service *ns)
{
	struct ns_client *c = ns->clients, *next;

	for (; c; c = next) {
		next = c->next;
		if (c->dead)
			drop_client(ns, c);
	}
}

int node_service_run(struct node_service *ns)
{
	struct epoll_event evs[16];
	int e = 0;

	while (!(ns->stopping && (!ns->runs || clock_monotonic_ms() >= ns->stop_deadline_ms))) {
		int n = epoll_wait(ns->epfd, evs, 16, next_timeout(ns)), i;

		if (n < 0 && errno != EINTR) {
			e = -errno;
			pr_warn("the node service's loop failed: %s", strerror(-e));
			break;
		}
		for (i = 0; i < n; i++)
			on_event(ns, &evs[i]);
		e = agent_dispatch(ns->agent);
		if (e) {
			pr_warn("the agent failed: %s: the node service stops", strerror(-e));
			break;
		}
		drop_dead(ns);
	}
	if (ns->runs)
		pr_warn("Runs still open when the node service stopped: they are left unfinished "
			"('nunatak summary DIR' finishes each)");
	return e;
}

void node_service_stop(struct node_service *ns)
{
	uint64_t one = 1;

	(void)!write(ns->stop_fd, &one, sizeof(one));
}

void node_service__free(struct node_service *ns)
{
	size_t i;

	if (!ns)
		return;
	while (ns->clients)
		drop_client(ns, ns->clients);
	ns_status_free(ns);
	while (ns->runs) /* the Agent calls back no one at its free */
		ns_run_free(ns->runs);
	agent__free(ns->agent);
	ns_aggregator_free(ns);
	for (i = 0; i < ns->n_endpoints; i++)
		free(ns->endpoints[i]);
	free(ns->endpoints);
	curve_keypair_wipe(&ns->kp);
	if (ns->listen_fd >= 0) {
		close(ns->listen_fd);
		unlink(ns->control_path);
	}
	if (ns->stop_fd >= 0)
		close(ns->stop_fd);
	if (ns->epfd >= 0)
		close(ns->epfd);
	if (ns->own_zctx)
		zmq_ctx_term(ns->zctx);
	free(ns);
}
