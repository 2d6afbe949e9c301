/* nunatakd — the node service as a daemon: the Agent of this node, its
 * control socket (any user asks it to observe their own processes, or a
 * Slurm job of theirs: `nunatak attach`; Slurm's Prolog and Epilog, as
 * root, start and end the Runs of jobs submitted with --nunatak) and,
 * with no [service] aggregators configured, its own Aggregator, which
 * checks attach credentials with the munged of [service].munge_socket and
 * asks Slurm (libslurm, [service].slurm_conf) about jobs.
 *
 * Foreground, logs to stderr (systemd and containers collect it). Root
 * only: it loads BPF. BPF is loaded once, at start; no sampling event is
 * enabled until a Target exists. SIGTERM or SIGINT: every Target is ended,
 * its Run finalized as interrupted, and nunatakd exits 0.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "userspace/agent/node_service.h"
#include "userspace/attribution/symbolizer.h"
#include "userspace/config/config.h"
#include "userspace/control/control_client.h"
#include "userspace/log/log.h"

static struct {
	const char *config, *node, *socket;
	int verbose;
} env;

static const char doc[] =
	"The nunatak node service: observes, for any user, the processes they own and\n"
	"start with `nunatak run`, and their running Slurm jobs (`nunatak attach`, and\n"
	"jobs submitted with --nunatak through deploy/slurm's Prolog and Epilog), and\n"
	"writes their Runs as them (owner, mode 0700).\n"
	"\n"
	"Runs in the foreground and logs to stderr. Must run as root (it loads BPF\n"
	"programs, once, at start). The control socket (mode 0666: every request is\n"
	"decided by the caller's uid) is created in a directory owned by root, made\n"
	"0755 when missing. SIGTERM or SIGINT ends every Run (finalized, interrupted)\n"
	"and exits 0.\n"
	"\v"
	"EXAMPLES:\n"
	"  nunatakd                                  the service of this node\n"
	"  nunatakd --config /etc/nunatak.toml -v    a site file, more logs\n"
	"  nunatakd --node n01 --socket /tmp/svc/agent.sock\n"
	"  NUNATAK_AGENT_SOCKET=/tmp/svc/agent.sock nunatak run -- ./app\n"
	"                                            (as any user) through that socket";

static const struct argp_option options[] = {
	{ "config", 'c', "FILE", 0, "Site configuration (default " CONFIG_SITE_PATH ")", 0 },
	{ "node", 'N', "NAME", 0, "This node's name in Runs (default: [service] node, else the "
	  "host name)", 0 },
	{ "socket", 's', "PATH", 0,
	  "Control socket (default: [service] agent_socket, else " CONTROL_SOCKET_DEFAULT ")", 0 },
	{ "verbose", 'v', NULL, 0, "Log every Run started and finalized", 0 },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'c':
		env.config = arg;
		break;
	case 'N':
		if (!arg[0] || strlen(arg) > 255)
			argp_error(state, "invalid --node '%s': 1 to 255 characters", arg);
		env.node = arg;
		break;
	case 's':
		if (arg[0] != '/')
			argp_error(state, "invalid --socket '%s': an absolute path", arg);
		env.socket = arg;
		break;
	case 'v':
		env.verbose = 1;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* The socket's directory: made 0755 root when missing; refused unless
 * root's and writable by root alone (clients would refuse it too). */
static int socket_directory(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;

	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (!dir[0])
		return 0;
	if (mkdir(dir, 0755) && errno != EEXIST) {
		fprintf(stderr, "nunatakd: cannot create the socket directory '%s': %s\n", dir,
			strerror(errno));
		return -1;
	}
	if (lstat(dir, &st)) {
		fprintf(stderr, "nunatakd: '%s': %s\n", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022)) {
		fprintf(stderr,
			"nunatakd: the socket directory '%s' is %s: clients would refuse the "
			"socket; make it a directory owned by root, mode 0755, or choose another "
			"with --socket\n",
			dir, !S_ISDIR(st.st_mode) ? "not a directory (a link?)"
			     : st.st_uid ? "not owned by root" : "writable by others");
		return -1;
	}
	return 0;
}

/* INT and TERM go to a signalfd; blocked before any thread exists */
static int open_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	signal(SIGPIPE, SIG_IGN);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

static int load_config(struct config *cfg)
{
	char err[1024];

	if (config_load_daemon(cfg, env.config, err, sizeof(err))) {
		fprintf(stderr, "nunatakd: %s\n", err);
		return -1;
	}
	if (config_use_ceilings(cfg)) { /* the Agent's Machine snapshot carries them */
		fprintf(stderr, "nunatakd: %s\n", strerror(ENOMEM));
		return -1;
	}
	/* for the Aggregator it is when no other is configured */
	if (symbolizer_set_debug_dirs((const char *const *)cfg->debug_dirs, cfg->n_debug_dirs, err,
				      sizeof(err)) &&
	    err[0])
		pr_warn("%s", err);
	return 0;
}

/* descriptors: perf events per CPU, the clients (NS_MAX_CLIENTS 1024), the
 * Runs' files: the soft limit goes up to the hard one, and to at least
 * NOFILE_WANTED when root may raise the hard one (systemd's soft default
 * is 1024) */
#define NOFILE_WANTED 65536

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < NOFILE_WANTED) {
		struct rlimit more = { NOFILE_WANTED, NOFILE_WANTED };

		if (!setrlimit(RLIMIT_NOFILE, &more))
			return;
	}
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		pr_warn("cannot raise the open-file limit to %llu: %s", (unsigned long long)rl.rlim_max,
			strerror(errno));
}

int main(int argc, char **argv)
{
	static const struct argp argp = { options, parse_arg, NULL, doc, NULL, NULL, NULL };
	struct node_service_opts o = { .signal_fd = -1 };
	struct node_service *ns = NULL;
	struct config cfg;
	char err[2048] = "";
	int rc = 1, e;

	argp_err_exit_status = 2;
	argp_parse(&argp, argc, argv, 0, NULL, NULL);
	log_set_level(env.verbose ? LOG_INFO : LOG_WARN);
	log_route_libbpf();
	if (geteuid() != 0) {
		fprintf(stderr, "nunatakd: must run as root (it loads BPF programs and writes Runs "
				"as their owners); without it, `nunatak run` profiles in-process\n");
		return 1;
	}
	raise_nofile();
	config_init(&cfg);
	if (load_config(&cfg))
		goto out;
	o.control_path = env.socket ? env.socket
		       : cfg.service.agent_socket ? cfg.service.agent_socket : CONTROL_SOCKET_DEFAULT;
	o.node = env.node;
	o.cfg = &cfg;
	o.service = &cfg.service;
	if (socket_directory(o.control_path))
		goto out;
	o.signal_fd = open_signals();
	if (o.signal_fd < 0) {
		fprintf(stderr, "nunatakd: cannot set up signals: %s\n", strerror(-o.signal_fd));
		goto out;
	}
	ns = node_service__new(&o, err, sizeof(err));
	if (!ns) {
		fprintf(stderr, "nunatakd: %s\n", err);
		goto out;
	}
	fprintf(stderr, "nunatakd: listening at %s\n", o.control_path);
	e = node_service_run(ns);
	rc = e ? 1 : 0;
	if (!e)
		fprintf(stderr, "nunatakd: stopped\n");
out:
	node_service__free(ns);
	if (o.signal_fd >= 0)
		close(o.signal_fd);
	config_release(&cfg);
	return rc;
}
