/* nunatak-aggregator — the cluster's Aggregator as a service: binds the
 * [service].listen endpoint (tcp) with a ROUTER, CURVE server and ZAP
 * allow-list when a secret key is configured, resumes the Runs left open
 * in [service].state_dir, and serves Agents (userspace/aggregator) until
 * SIGTERM or SIGINT. Foreground, logs to stderr, exit 0 on a signal. Job
 * Runs (nunatak attach, Prolog/Epilog) use [service].munge_socket (the
 * credentials of ATTACH) and [service].slurm_conf (job lookups).
 *
 * Exit codes: 0 stopped by a signal; 1 a failure while serving; 2 bad
 * usage or configuration (said on stderr, nothing bound).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include <zmq.h>

#include "userspace/aggregator/aggregator.h"
#include "userspace/log/version.h"
#include "userspace/attribution/symbolizer.h"
#include "userspace/config/config.h"
#include "userspace/log/log.h"
#include "userspace/wire/curve.h"

#define EXIT_SERVE_FAILED 1
#define EXIT_USAGE 2
/* beyond the Aggregator's own bound (an Error is sent up to it), a peer
 * is disconnected by ZeroMQ without reading more */
#define HARD_MESSAGE_BYTES (4 * (int64_t)AGGREGATOR_MAX_MESSAGE_BYTES)
#define DEFAULT_STATE_DIR "/var/lib/nunatak"

static const char usage[] =
    "usage: nunatak-aggregator [--config FILE] [--listen ENDPOINT] [--state-dir DIR] [-v]\n"
    "\n"
    "The Aggregator of a cluster: receives the Batches of every nunatakd, stores each\n"
    "exactly once in its Run (written as the Run's owner), finalizes Runs, and resumes\n"
    "the Runs left open when it restarts. Runs in the foreground, logs to stderr, stops\n"
    "on SIGTERM or SIGINT.\n"
    "\n"
    "  --config FILE       site configuration (default " CONFIG_SITE_PATH "): its [service]\n"
    "                      table gives listen, secret_key, allowed_agents, state_dir\n"
    "  --listen ENDPOINT   bind this instead of [service].listen (tcp://ADDR:PORT)\n"
    "  --state-dir DIR     keep the open Runs here instead of [service].state_dir\n"
    "                      (default " DEFAULT_STATE_DIR ")\n"
    "  --allow-root-runs   also write Runs whose owner is root; by default they are\n"
    "                      refused: the root of a node (whose Agent key is allowed)\n"
    "                      would otherwise write as root on this host\n"
    "  --refuse-root-runs  the default (kept for older scripts)\n"
    "  --no-curve          INSECURE: serve without CURVE although [service] has no\n"
    "                      secret_key; anyone who reaches the endpoint can then write\n"
    "                      Runs as any user here. Only for a test on a host no other\n"
    "                      user can reach\n"
    "  -v, --verbose       say more (twice: debug)\n"
    "  -h, --help          this text\n"
    "\n"
    "Examples:\n"
    "  nunatak-aggregator                                  # as /etc/nunatak.toml says\n"
    "  nunatak-aggregator --config /etc/nunatak/agg.toml\n"
    "  nunatak-aggregator --listen tcp://0.0.0.0:7450 --state-dir /var/lib/nunatak\n"
    "\n"
    "Agents must speak CURVE ([service].secret_key, the Aggregator's key) with a public\n"
    "key listed in [service].allowed_agents (a directory of *.pub files, or a file of\n"
    "keys); `nunatak keygen DIR NAME` makes key pairs. Without them it does not start.\n"
    "An allowed key speaks for one node (the first name it uses) and may write Runs\n"
    "as the users it names (root only with --allow-root-runs): see deploy/README.md.\n";

struct options {
	const char *config, *listen, *state_dir;
	int verbose, allow_root_runs, no_curve;
};

/* 0, or the exit code (said) */
static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"listen", required_argument, NULL, 'l'},
	    {"state-dir", required_argument, NULL, 's'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"allow-root-runs", no_argument, NULL, 'A'},
	    {"refuse-root-runs", no_argument, NULL, 'R'},
	    {"no-curve", no_argument, NULL, 'N'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:l:s:vh", longs, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config = optarg;
			break;
		case 'l':
			o->listen = optarg;
			break;
		case 's':
			o->state_dir = optarg;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'A':
			o->allow_root_runs = 1;
			break;
		case 'R':
			o->allow_root_runs = 0; /* the default */
			break;
		case 'N':
			o->no_curve = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		case 'V':
			printf("nunatak-aggregator " NUNATAK_VERSION "\n");
			exit(0);
		default:
			fputs(usage, stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "nunatak-aggregator: unexpected argument '%s'\n%s", argv[optind],
			usage);
		return EXIT_USAGE;
	}
	return 0;
}

/* SIGTERM/SIGINT read from a signalfd by a thread of their own, which
 * stops the Aggregator (the serving thread is in zmq_poll) */
struct signals {
	int fd, wake; /* wake: a pipe's read end, closed to end the thread */
	int wake_w;
	struct aggregator *agg;
	pthread_t thread;
};

static void *signal_thread(void *arg)
{
	struct signals *s = arg;
	struct pollfd fds[2] = {{.fd = s->fd, .events = POLLIN}, {.fd = s->wake, .events = POLLIN}};
	struct signalfd_siginfo si;

	for (;;) {
		if (poll(fds, 2, -1) < 0 && errno == EINTR)
			continue;
		if (fds[1].revents)
			return NULL;
		if (read(s->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
			pr_info("%s: stopping", strsignal((int)si.ssi_signo));
			aggregator_stop(s->agg);
			return NULL;
		}
	}
}

/* blocks SIGTERM and SIGINT (before any thread: all inherit the mask)
 * and opens their signalfd; SIGPIPE ignored. -errno */
static int signals_open(struct signals *s)
{
	sigset_t set;
	int p[2];

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL))
		return -EINVAL;
	s->fd = signalfd(-1, &set, SFD_CLOEXEC);
	if (s->fd < 0 || pipe2(p, O_CLOEXEC))
		return -errno;
	s->wake = p[0];
	s->wake_w = p[1];
	return 0;
}

static void signals_close(struct signals *s)
{
	if (s->thread) {
		close(s->wake_w);
		pthread_join(s->thread, NULL);
	}
	close(s->wake);
	close(s->fd);
}

/* what the Aggregator is bound with */
struct transport {
	void *ctx, *router;
	struct curve_zap *zap;
	struct curve_keypair kp;
};

/* the CURVE server side and its ZAP allow-list, before bind. 0 or the
 * exit code (said) */
static int transport_curve(struct transport *t, const struct service_config *svc, int no_curve)
{
	char err[1024] = "";
	int e;

	if (!svc->secret_key && no_curve) {
		pr_warn("--no-curve: Agents connect without CURVE (no encryption, no "
			"authentication): anyone who reaches this endpoint can write Runs as any "
			"user of this host");
		return 0;
	}
	if (!svc->secret_key) {
		fprintf(stderr,
			"nunatak-aggregator: no [service].secret_key: without CURVE anyone who "
			"reaches the endpoint (any user of any node) could write Runs as any user "
			"here; set secret_key and allowed_agents (nunatak keygen DIR NAME makes "
			"keys), or --no-curve for a test on a host nobody else can reach\n");
		return EXIT_USAGE;
	}
	if (!svc->allowed_agents) {
		fprintf(stderr, "nunatak-aggregator: [service].secret_key without "
				"[service].allowed_agents would let every CURVE client in: set "
				"allowed_agents to a directory of the Agents' *.pub files\n");
		return EXIT_USAGE;
	}
	e = curve_load_keypair(svc->secret_key, &t->kp, err, sizeof(err));
	if (!e) {
		t->zap = curve_zap__new(t->ctx, svc->allowed_agents, err, sizeof(err));
		e = t->zap ? 0 : -errno;
	}
	if (!e)
		e = curve_server_setup(t->router, &t->kp);
	curve_keypair_wipe(&t->kp);
	if (e) {
		fprintf(stderr, "nunatak-aggregator: CURVE: %s\n", err[0] ? err : strerror(-e));
		return EXIT_USAGE;
	}
	pr_info("CURVE on, %zu Agent keys allowed", curve_zap_allowed_count(t->zap));
	return 0;
}

/* the ROUTER bound on listen. 0 or the exit code (said) */
static int transport_open(struct transport *t, const char *listen, const struct service_config *svc,
			  int no_curve)
{
	int64_t max = HARD_MESSAGE_BYTES;
	int linger = 0, e;

	t->ctx = zmq_ctx_new();
	t->router = t->ctx ? zmq_socket(t->ctx, ZMQ_ROUTER) : NULL;
	if (!t->router) {
		fprintf(stderr, "nunatak-aggregator: cannot make a ZeroMQ socket: %s\n",
			zmq_strerror(zmq_errno()));
		return EXIT_SERVE_FAILED;
	}
	zmq_setsockopt(t->router, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_setsockopt(t->router, ZMQ_MAXMSGSIZE, &max, sizeof(max));
	e = transport_curve(t, svc, no_curve);
	if (e)
		return e;
	if (zmq_bind(t->router, listen)) {
		fprintf(stderr,
			"nunatak-aggregator: cannot bind '%s': %s; is another Aggregator "
			"listening there? (--listen or [service].listen)\n",
			listen, zmq_strerror(zmq_errno()));
		return EXIT_USAGE;
	}
	return 0;
}

static void transport_close(struct transport *t)
{
	if (t->router)
		zmq_close(t->router);
	curve_zap__free(t->zap);
	if (t->ctx)
		zmq_ctx_term(t->ctx);
}

static uint64_t no_refusals(void *ctx)
{
	(void)ctx;
	return 0;
}

/* serves until a signal; the exit code */
static int serve(struct transport *t, const char *listen, const char *state_dir,
		 const struct service_config *svc, struct signals *s, int allow_root_runs)
{
	/* without CURVE no peer is known to be remote or not: root Runs are
	 * refused from all unless allowed */
	struct aggregator_opts ao = {.router = t->router,
				     .state_dir = state_dir,
				     .endpoint_shown = listen,
				     .root_runs = allow_root_runs ? AGG_ROOT_RUNS_ALLOWED
						  : t->zap	     ? AGG_ROOT_RUNS_LOCAL
								     : AGG_ROOT_RUNS_REFUSED,
				     /* job Runs: ATTACH's credentials, job lookups */
				     .munge_socket = svc->munge_socket,
				     .slurm_conf = svc->slurm_conf};
	struct aggregator *agg;
	int e;

	agg = aggregator__new_opts(&ao);
	if (!agg) {
		fprintf(stderr,
			"nunatak-aggregator: cannot start with the state directory '%s': "
			"%s (said above)\n",
			state_dir, strerror(errno));
		return EXIT_USAGE;
	}
	t->router = NULL; /* the Aggregator's now */
	aggregator_set_refused_counter(agg, t->zap ? curve_zap_refused_fn : no_refusals, t->zap);
	s->agg = agg;
	e = pthread_create(&s->thread, NULL, signal_thread, s);
	if (e) {
		fprintf(stderr, "nunatak-aggregator: no signal thread: %s\n", strerror(e));
		aggregator__free(agg);
		return EXIT_SERVE_FAILED;
	}
	pr_info("serving on %s, state in %s; Runs owned by root %s", listen, state_dir,
		allow_root_runs ? "written (--allow-root-runs)" : "refused");
	e = aggregator_serve(agg, 0);
	if (e && e != -ECANCELED)
		pr_warn("the Aggregator stopped: %s", strerror(-e));
	aggregator__free(agg);
	return e && e != -ECANCELED ? EXIT_SERVE_FAILED : 0;
}

int main(int argc, char **argv)
{
	struct options o = {0};
	struct signals s = {.fd = -1, .wake = -1, .wake_w = -1};
	struct transport t = {0};
	const char *listen, *state_dir;
	char err[1024] = "";
	struct config cfg;
	int code;

	code = parse_options(argc, argv, &o);
	if (code)
		return code;
	log_set_level(o.verbose > 1 ? LOG_DEBUG : LOG_INFO);
	config_init(&cfg);
	if (config_load_daemon(&cfg, o.config, err, sizeof(err))) {
		fprintf(stderr, "nunatak-aggregator: %s\n", err);
		config_release(&cfg);
		return EXIT_USAGE;
	}
	if (symbolizer_set_debug_dirs((const char *const *)cfg.debug_dirs, cfg.n_debug_dirs, err,
				      sizeof(err)) &&
	    err[0])
		pr_warn("%s", err);
	listen = o.listen ? o.listen : cfg.service.listen;
	state_dir = o.state_dir		    ? o.state_dir
		    : cfg.service.state_dir ? cfg.service.state_dir
					    : DEFAULT_STATE_DIR;
	if (!listen) {
		fprintf(stderr,
			"nunatak-aggregator: nowhere to listen: set [service].listen in "
			"%s or give --listen tcp://ADDR:PORT\n",
			o.config ? o.config : CONFIG_SITE_PATH);
		config_release(&cfg);
		return EXIT_USAGE;
	}
	if (signals_open(&s)) {
		fprintf(stderr, "nunatak-aggregator: cannot set up signals: %s\n", strerror(errno));
		config_release(&cfg);
		return EXIT_SERVE_FAILED;
	}
	code = transport_open(&t, listen, &cfg.service, o.no_curve);
	if (!code)
		code = serve(&t, listen, state_dir, &cfg.service, &s, o.allow_root_runs);
	signals_close(&s);
	transport_close(&t);
	config_release(&cfg);
	return code;
}
