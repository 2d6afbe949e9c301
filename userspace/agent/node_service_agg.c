/* node_service_agg — the Aggregators of the node service: those of
 * [service] (with their CURVE keys), else one of its own on inproc://
 * served by a thread (nunatakd without aggregators, `nunatak run`). */
#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "userspace/agent/node_service_internal.h"
#include "userspace/aggregator/aggregator.h"
#include "userspace/config/config.h"
#include "userspace/log/log.h"

#define AGG_JOIN_TIMEOUT_MS 3000

static void *aggregator_thread(void *arg)
{
	/* storing comes after the application on the node it shares: its
	 * Batches wait in memory (acknowledged later) rather than its ranks
	 * lose a core (deep Stacks cost the store 2-4 us a frame) */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10))
		pr_debug("aggregator thread: nice: %s", strerror(errno));
	aggregator_serve(arg, 0);
	return NULL;
}

/* The Aggregator of this node: a ROUTER on inproc://, served by a thread;
 * munged and slurm.conf of [service] (sc may be NULL: the defaults) for
 * the job Runs it checks. */
static int start_aggregator(struct node_service *ns, const struct service_config *sc, char *err,
			    size_t errlen)
{
	static unsigned counter;
	void *router;
	int e;

	snprintf(ns->agg_endpoint, sizeof(ns->agg_endpoint), "inproc://nunatak-aggregator-%d-%u",
		 (int)getpid(), __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
	router = zmq_socket(ns->zctx, ZMQ_ROUTER);
	if (!router || zmq_bind(router, ns->agg_endpoint)) {
		e = -zmq_errno();
		snprintf(err, errlen, "cannot start the aggregator: its socket '%s': %s",
			 ns->agg_endpoint, zmq_strerror(-e));
		if (router)
			zmq_close(router);
		return e;
	}
	{
		struct aggregator_opts ao = { .router = router, .endpoint_shown = ns->agg_endpoint,
					      .munge_socket = sc ? sc->munge_socket : NULL,
					      .slurm_conf = sc ? sc->slurm_conf : NULL };

		ns->agg = aggregator__new_opts(&ao);
	}
	if (!ns->agg) {
		e = -errno;
		snprintf(err, errlen, "cannot start the aggregator: %s", strerror(-e));
		zmq_close(router);
		return e;
	}
	e = -pthread_create(&ns->agg_thread, NULL, aggregator_thread, ns->agg);
	if (e) {
		snprintf(err, errlen, "cannot start the aggregator thread: %s: raise the process "
				      "limit (ulimit -u) or free memory", strerror(-e));
		return e;
	}
	ns->agg_started = 1;
	return 0;
}

/* the configured Aggregators, with the CURVE keys to reach them */
static int configured_endpoints(struct node_service *ns, const struct service_config *sc,
				char *err, size_t errlen)
{
	size_t i;
	int e;

	ns->endpoints = calloc(sc->n_aggregators, sizeof(*ns->endpoints));
	if (!ns->endpoints)
		goto nomem;
	for (i = 0; i < sc->n_aggregators; i++, ns->n_endpoints++)
		if (!(ns->endpoints[i] = strdup(sc->aggregators[i])))
			goto nomem;
	if (!sc->secret_key)
		return 0;
	e = curve_load_keypair(sc->secret_key, &ns->kp, err, errlen);
	if (!e)
		e = curve_load_public(sc->aggregator_public_key, ns->server_public, err, errlen);
	ns->curve = !e;
	return e;
nomem:
	snprintf(err, errlen, "cannot start the node service: %s", strerror(ENOMEM));
	return -ENOMEM;
}

/* The Aggregators the Agent publishes to: those of [service], else its own. */
int ns_choose_endpoints(struct node_service *ns, const struct service_config *sc, char *err,
			    size_t errlen)
{
	int e;

	if (sc && sc->n_aggregators)
		return configured_endpoints(ns, sc, err, errlen);
	e = start_aggregator(ns, sc, err, errlen);
	if (e)
		return e;
	ns->endpoints = calloc(1, sizeof(*ns->endpoints));
	if (!ns->endpoints || !(ns->endpoints[0] = strdup(ns->agg_endpoint))) {
		snprintf(err, errlen, "cannot start the node service: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	ns->n_endpoints = 1;
	return 0;
}

static void stop_aggregator(struct node_service *ns)
{
	struct timespec deadline;

	aggregator_stop(ns->agg);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += AGG_JOIN_TIMEOUT_MS / 1000;
	if (pthread_timedjoin_np(ns->agg_thread, NULL, &deadline)) {
		/* inside SQLite: what it uses is left to the process exit */
		pr_warn("the aggregator did not stop within %d ms: left to the process exit",
			AGG_JOIN_TIMEOUT_MS);
		ns->agg = NULL;
		ns->own_zctx = 0;
	}
	ns->agg_started = 0;
}

void ns_aggregator_free(struct node_service *ns)
{
	if (ns->agg_started)
		stop_aggregator(ns);
	aggregator__free(ns->agg);
	ns->agg = NULL;
}
