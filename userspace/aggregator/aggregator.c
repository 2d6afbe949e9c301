/* aggregator — see aggregator.h: the serving loop, what it dispatches, and
 * the answers it sends. The Runs are aggregator_run.c's, their finalize
 * aggregator_finalize.c's, the Agents aggregator_agents.c's, resuming
 * aggregator_state.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <zmq.h>

#include "userspace/aggregator/aggregator.h"
#include "userspace/aggregator/aggregator_internal.h"
#include "userspace/aggregator/aggregator_job.h"
#include "userspace/aggregator/aggregator_worker.h"
#include "userspace/log/log.h"
#include "userspace/wire/wire.h"

void agg_eventfd_signal(int fd)
{
	uint64_t one = 1;

	if (write(fd, &one, sizeof(one)) < 0)
		pr_debug("eventfd: %s", strerror(errno));
}

static void eventfd_drain(int fd)
{
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		pr_debug("eventfd: %s", strerror(errno));
}

struct aggregator *aggregator__new_opts(const struct aggregator_opts *o)
{
	struct aggregator *agg = calloc(1, sizeof(*agg));
	int err;

	if (!agg)
		return NULL;
	agg->open_dir_fd = -1;
	agg->root_runs = o->root_runs;
	agg->job_ended_grace_ms =
	    o->job_ended_grace_ms > 0 ? o->job_ended_grace_ms : AGG_JOB_ENDED_GRACE_MS;
	agg->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	agg->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	agg->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	agg->endpoint_shown = strdup(o->endpoint_shown ? o->endpoint_shown : "");
	agg->worker = agg_worker_new(o->munge_socket, o->slurm_conf); /* no thread yet */
	if (agg->stop_fd < 0 || agg->cancel_fd < 0 || agg->done_fd < 0 || !agg->endpoint_shown ||
	    !agg->worker) {
		err = errno ? errno : ENOMEM;
		goto fail;
	}
	if (o->state_dir) {
		err = -agg_state_open(agg, o->state_dir);
		if (err)
			goto fail;
	}
	agg->socket = o->router;
	if (agg->open_dir_fd >= 0)
		agg_state_resume(agg);
	return agg;
fail:
	agg->socket = NULL; /* the caller keeps its socket on failure */
	aggregator__free(agg);
	errno = err;
	return NULL;
}

struct aggregator *aggregator__new(void *router_socket)
{
	struct aggregator_opts o = {.router = router_socket};

	return aggregator__new_opts(&o);
}

void aggregator_stop(struct aggregator *agg)
{
	agg_eventfd_signal(agg->cancel_fd);
	agg_eventfd_signal(agg->stop_fd);
}

void aggregator_interrupt(struct aggregator *agg)
{
	agg_eventfd_signal(agg->cancel_fd);
}

void aggregator_set_refused_counter(struct aggregator *agg, uint64_t (*fn)(void *ctx), void *ctx)
{
	agg->refused_fn = fn;
	agg->refused_ctx = ctx;
}

void aggregator__free(struct aggregator *agg)
{
	if (!agg)
		return;
	agg_finalize_join_all(agg);
	agg_worker_free(agg->worker); /* after the call under way; the rest discarded */
	while (agg->runs)
		agg_run_close(agg->runs);
	agg_agents_free(agg);
	if (agg->socket)
		zmq_close(agg->socket);
	if (agg->open_dir_fd >= 0)
		close(agg->open_dir_fd);
	if (agg->stop_fd >= 0)
		close(agg->stop_fd);
	if (agg->cancel_fd >= 0)
		close(agg->cancel_fd);
	if (agg->done_fd >= 0)
		close(agg->done_fd);
	free(agg->endpoint_shown);
	free(agg);
}

int agg_send(struct aggregator *agg, const struct agg_peer *to, wire_envelope *env)
{
	if (zmq_send(agg->socket, to->id, to->len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
		return -zmq_errno();
	return wire_send(agg->socket, env);
}

int agg_reply_ack(struct aggregator *agg, const struct agg_peer *to, const char *run_id,
		  const char *node, uint64_t seq, int has_incarnation, uint64_t incarnation,
		  const char *json)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Ack ack = NUNATAK__WIRE__ACK__INIT;

	ack.run_id = (char *)(run_id ? run_id : "");
	ack.node = (char *)(node ? node : "");
	ack.seq = seq;
	ack.has_incarnation = has_incarnation;
	ack.incarnation = incarnation;
	ack.json = (char *)json;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ACK;
	env.ack = &ack;
	return agg_send(agg, to, &env);
}

int agg_reply_error(struct aggregator *agg, const struct agg_peer *to, int code, const char *run_id,
		    const char *message)
{
	pr_warn("%s", message);
	return agg_send_error(agg, to, code, run_id, message);
}

int agg_send_error(struct aggregator *agg, const struct agg_peer *to, int code, const char *run_id,
		   const char *message)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Error error = NUNATAK__WIRE__ERROR__INIT;

	error.message = (char *)message;
	error.has_code = code != 0;
	error.code = code;
	error.run_id = (char *)run_id;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ERROR;
	env.error = &error;
	return agg_send(agg, to, &env);
}

int agg_send_control(struct aggregator *agg, const struct agg_peer *to, int action,
		     const char *run_id, const char *json, const char *node)
{
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Control c = NUNATAK__WIRE__CONTROL__INIT;

	c.action = action;
	c.run_id = (char *)run_id;
	c.json = (char *)json;
	c.node = (char *)node;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_CONTROL;
	env.control = &c;
	return agg_send(agg, to, &env);
}

/* a message that is no request of ours: refused and counted */
static int refuse(struct aggregator *agg, const struct agg_peer *from, int code, const char *why)
{
	agg->refused++;
	return agg_reply_error(agg, from, code, NULL, why);
}

static int handle_control(struct aggregator *agg, const struct agg_peer *from,
			  const Nunatak__Wire__Control *c)
{
	char why[512];

	/* a Control speaks for the node it names (START without one: for
	 * its run.node, agg_run_start) */
	if (c->node && c->node[0] && agg_node_claim(agg, from, c->node, "Control", why, sizeof(why)))
		return refuse(agg, from, EPERM, why);
	switch (c->action) {
	case NUNATAK__WIRE__CONTROL__ACTION__START:
		return agg_run_start(agg, from, c);
	case NUNATAK__WIRE__CONTROL__ACTION__FINALIZE:
		return agg_finalize_request(agg, from, c);
	case NUNATAK__WIRE__CONTROL__ACTION__STATUS:
		return agg_status(agg, from, c);
	case NUNATAK__WIRE__CONTROL__ACTION__ATTACH:
		return agg_job_attach_request(agg, from, c);
	default:
		snprintf(why, sizeof(why),
			 "unexpected Control action %d: an Aggregator serves START, FINALIZE, "
			 "STATUS and ATTACH",
			 (int)c->action);
		return refuse(agg, from, EINVAL, why);
	}
}

static int handle(struct aggregator *agg, const struct agg_peer *from, const wire_envelope *env)
{
	switch (env->body_case) {
	case NUNATAK__WIRE__ENVELOPE__BODY_BATCH:
		return agg_run_store_batch(agg, from, env->batch);
	case NUNATAK__WIRE__ENVELOPE__BODY_CONTROL:
		return handle_control(agg, from, env->control);
	case NUNATAK__WIRE__ENVELOPE__BODY_HELLO:
		agg_hello(agg, from, env->hello);
		return 0;
	case NUNATAK__WIRE__ENVELOPE__BODY_ACK:
		/* an Agent took an OPEN: nothing to answer */
		pr_debug("aggregator: '%s' acknowledged run '%s'", env->ack->node,
			 env->ack->run_id);
		return 0;
	case NUNATAK__WIRE__ENVELOPE__BODY_ERROR:
		/* never answered: two peers would trade Errors forever */
		pr_warn("aggregator: an Agent refused a request: %s", env->error->message);
		return 0;
	default:
		return refuse(agg, from, EINVAL,
			      "unexpected message: only Batch, Control, Hello, Ack and Error are "
			      "served");
	}
}

/* Reads what remains of the current message; 1 when something did. */
static int discard_rest(struct aggregator *agg)
{
	size_t more_size;
	int more, extra = 0;

	for (;;) {
		zmq_msg_t frame;

		more_size = sizeof(more);
		if (zmq_getsockopt(agg->socket, ZMQ_RCVMORE, &more, &more_size) || !more)
			return extra;
		zmq_msg_init(&frame);
		zmq_msg_recv(&frame, agg->socket, 0);
		zmq_msg_close(&frame);
		extra = 1;
	}
}

/* The payload of one message from from: unpacked, or refused (NULL). */
static wire_envelope *receive_envelope(struct aggregator *agg, const struct agg_peer *from,
				       zmq_msg_t *payload)
{
	char why[256];
	wire_envelope *env;
	size_t size = zmq_msg_size(payload);

	/* one message = one frame: the rest of a longer one is read and
	 * refused here, or it would pass for the next peer's message */
	if (discard_rest(agg)) {
		refuse(agg, from, EINVAL, "malformed message: one frame expected");
		return NULL;
	}
	if (size > AGGREGATOR_MAX_MESSAGE_BYTES) {
		snprintf(why, sizeof(why),
			 "oversized message: %zu bytes, more than the %u MiB an Envelope may be",
			 size, AGGREGATOR_MAX_MESSAGE_BYTES >> 20);
		refuse(agg, from, EMSGSIZE, why);
		return NULL;
	}
	env = wire_unpack(zmq_msg_data(payload), size, why, sizeof(why));
	if (!env)
		refuse(agg, from, errno, why);
	return env;
}

/* the peer's authenticated identity, as the ZAP handler named it */
static void peer_key(zmq_msg_t *payload, struct agg_peer *from)
{
	const char *user = zmq_msg_gets(payload, "User-Id");

	snprintf(from->key, sizeof(from->key), "%s", user ? user : "");
}

/* Serves the one message waiting on the socket. 0, or -errno when the
 * socket itself failed (ETERM: the context is being terminated). */
static int serve_one(struct aggregator *agg)
{
	struct agg_peer from = {.len = 0};
	zmq_msg_t identity, payload;
	wire_envelope *env;
	int more = 0, err = 0;
	size_t more_size = sizeof(more);

	zmq_msg_init(&identity);
	zmq_msg_init(&payload);
	if (zmq_msg_recv(&identity, agg->socket, ZMQ_DONTWAIT) < 0) {
		err = -zmq_errno();
		if (err == -EINTR || err == -EAGAIN)
			err = 0;
		goto next;
	}
	from.len =
	    zmq_msg_size(&identity) < sizeof(from.id) ? zmq_msg_size(&identity) : sizeof(from.id);
	memcpy(from.id, zmq_msg_data(&identity), from.len);
	zmq_getsockopt(agg->socket, ZMQ_RCVMORE, &more, &more_size);
	if (!more || zmq_msg_recv(&payload, agg->socket, 0) < 0)
		goto next;
	peer_key(&payload, &from);
	env = receive_envelope(agg, &from, &payload);
	if (!env)
		goto next;
	err = handle(agg, &from, env);
	wire_envelope_free(env);
	if (err)
		pr_warn("aggregator reply failed: %s", zmq_strerror(-err));
	err = 0;
next:
	zmq_msg_close(&identity);
	zmq_msg_close(&payload);
	return err;
}

/* the works the worker did, each done() on this thread */
static void worker_results(struct aggregator *agg)
{
	struct agg_work *w = agg_worker_take(agg->worker), *next;

	for (; w; w = next) {
		next = w->next;
		w->done(agg, w);
	}
}

/* the timers: the job Runs' watches and deadlines (first: a deadline
 * over closes its Run), the wait of closing Runs for their nodes; the ms
 * until the nearest, -1: none (the bound is then the caller's, who ends
 * this wait through stop_fd, aggregator_stop, and joins with a deadline) */
static int tick(struct aggregator *agg)
{
	int jobs = agg_job_tick(agg), closing = agg_finalize_tick(agg);

	if (jobs < 0)
		return closing;
	return closing < 0 || jobs < closing ? jobs : closing;
}

int aggregator_serve(struct aggregator *agg, int once)
{
	int finalized_at_start = agg->finalized, err = 0;

	while (!err && !(once && agg->finalized > finalized_at_start)) {
		zmq_pollitem_t items[5] = {
		    {.socket = agg->socket, .events = ZMQ_POLLIN},
		    {.fd = agg->stop_fd, .events = ZMQ_POLLIN},
		    {.fd = agg->cancel_fd, .events = ZMQ_POLLIN},
		    {.fd = agg->done_fd, .events = ZMQ_POLLIN},
		    {.fd = agg_worker_fd(agg->worker), .events = ZMQ_POLLIN},
		};
		int timeout = tick(agg);

		if (once && agg->finalized > finalized_at_start)
			break;
		if (zmq_poll(items, 5, timeout) < 0) {
			err = -zmq_errno();
			if (err == -EINTR)
				err = 0;
			continue;
		}
		if (items[2].revents & ZMQ_POLLIN) {
			eventfd_drain(agg->cancel_fd);
			agg_finalize_interrupt_all(agg);
		}
		if (items[3].revents & ZMQ_POLLIN)
			eventfd_drain(agg->done_fd); /* answered by the next tick */
		if (items[4].revents & ZMQ_POLLIN)
			worker_results(agg);
		/* a message already there is served before a stop is obeyed */
		if (items[0].revents & ZMQ_POLLIN)
			err = serve_one(agg);
		else if (items[1].revents & ZMQ_POLLIN)
			err = -ECANCELED;
	}
	return err;
}
