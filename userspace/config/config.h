/* config — the effective configuration of nunatak and where each value
 * came from.
 *
 * The cascade, later overriding earlier: built-in defaults, the site file,
 * the project file, then command-line flags. Every value carries its
 * source ("default", the file's path, or "command line") so a Run's
 * manifest.json can record why it was configured the way it was.
 *
 * Files are TOML (see toml.h for the accepted subset) with exactly these
 * keys; any other key or table is refused with its position, so a typo
 * never silently falls back to a default:
 *
 *	name = "cavity-3d"                 # string, not empty
 *	runs_dir = ".nunatak"              # string, not empty
 *	[sampling]
 *	frequency = 997                    # integer, 1..100000 (Hz)
 *	[tools]
 *	llvm-symbolizer = "llvm-symbolizer" # string, not empty
 *	debug_dirs = ["/opt/debug"]        # array of absolute paths, at most 16:
 *	                                   # where llvm-symbolizer also looks for split
 *	                                   # debug files (DIR/.build-id/xx/rest.debug),
 *	                                   # after /usr/lib/debug (always searched)
 *	[mpi]
 *	budget = 2                         # number, more than 0 and less than 100: the
 *	                                   # share (%) of each rank's time the MPI probes
 *	                                   # may cost (mpi_budget.h); --mpi-budget
 *	                                   # overrides it, --mpi-exact ignores it. Read by
 *	                                   # nunatak run and by nunatakd for the Runs it
 *	                                   # starts itself (Slurm jobs, nunatak attach)
 *	[source]
 *	embed = true                       # false: no line of code in a Run (--no-source)
 *	[source_map]                       # where the source of a binary built elsewhere
 *	"/build/dir" = "/home/me/src"      # is: a DWARF path under OLD (whole leading
 *	                                   # components) is looked for under NEW; at most
 *	                                   # 64, tried in order; keys and values not empty
 *	[service]                          # the daemons; see struct service_config
 *	[ceilings]                         # fitted Ceilings; see struct ceilings_config
 *
 * A file is obeyed only if trust_file() (trust.h) accepts it: a regular
 * file, not a symbolic link, owned by the effective uid or root (a root
 * nunatak obeys only files root owns), not writable by group or others,
 * under directories only the euid or root can write (sticky ones aside).
 * Otherwise it is refused, the whole cascade with it, with a message naming
 * the file, its owner and what to do, as git refuses a repository owned by
 * someone else: a configuration planted in a shared parent directory never
 * reaches a root nunatak, and a FIFO or a device never blocks it.
 *
 * runs_dir is kept as written: a relative runs_dir, even one set in a
 * project file, is relative to the current working directory of the
 * process, not to the file that set it.
 *
 * The fields of struct config always hold the effective value (name may be
 * NULL: unset). Read them, never assign or free them: a default points to a
 * static string, which config_release() knows from its source being NULL.
 */
#ifndef NUNATAK_CONFIG_H
#define NUNATAK_CONFIG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define CONFIG_DEFAULT_RUNS_DIR ".nunatak"
#define CONFIG_DEFAULT_SAMPLING_FREQUENCY 997
#define CONFIG_MIN_SAMPLING_FREQUENCY 1
#define CONFIG_MAX_SAMPLING_FREQUENCY 100000
#define CONFIG_DEFAULT_LLVM_SYMBOLIZER "llvm-symbolizer"
#define CONFIG_DEFAULT_MPI_BUDGET_PCT 2.0
#define CONFIG_MAX_DEBUG_DIRS 16
#define CONFIG_MAX_SOURCE_MAP 64
#define CONFIG_SITE_PATH "/etc/nunatak.toml"
#define CONFIG_PROJECT_FILENAME "nunatak.toml"
#define CONFIG_SOURCE_COMMAND_LINE "command line"
#define CONFIG_SOURCE_DEFAULT "default"

#define CONFIG_DEFAULT_AGENT_SOCKET "/run/nunatak/agent.sock"
#define CONFIG_DEFAULT_SPOOL_DIR "/var/spool/nunatak"
#define CONFIG_DEFAULT_SPOOL_MAX_BYTES (1ULL << 30)
#define CONFIG_MAX_SPOOL_MAX_BYTES (1ULL << 50)
#define CONFIG_DEFAULT_STATE_DIR "/var/lib/nunatak"
#define CONFIG_DEFAULT_MUNGE_SOCKET "/run/munge/munge.socket.2"
#define CONFIG_MAX_AGGREGATORS 64
#define CONFIG_MAX_NODE_NAME 64

/* The [service] table: what nunatakd and nunatak-aggregator are, where
 * they talk and keep their files. Read from the site file or the daemons'
 * --config file only: a project file holding [service] is refused (a
 * user's project must not point the service, or the CLI, elsewhere).
 *
 *	[service]
 *	aggregators = ["tcp://agg1:7450"]  # nunatakd's Aggregators, 1..64 distinct
 *	                                   # "tcp://HOST:PORT"; absent: nunatakd is its
 *	                                   # own Aggregator (one machine)
 *	listen = "tcp://0.0.0.0:7450"      # nunatak-aggregator binds it: "tcp://ADDR:PORT"
 *	agent_socket = "/run/nunatak/agent.sock"  # the control socket (absolute)
 *	node = "n001"                      # this node's name; absent: the host name
 *	secret_key = "/etc/nunatak/n001.key"      # this daemon's CURVE secret key
 *	aggregator_public_key = "/etc/nunatak/agg.pub" # nunatakd: the Aggregators' key
 *	allowed_agents = "/etc/nunatak/agents"    # aggregator: dir of *.pub or key file
 *	spool_dir = "/var/spool/nunatak"   # nunatakd: unacknowledged Batches
 *	spool_max_bytes = 1073741824       # 0..2^50; 0: no spool
 *	state_dir = "/var/lib/nunatak"     # nunatak-aggregator: open Runs to resume
 *	runs_dir = "/shared/nunatak"       # Runs started without a runs directory
 *	netns_only = false                 # adopt Run tokens only in nunatakd's netns
 *	munge_socket = "/run/munge/munge.socket.2" # munged: `nunatak attach` makes
 *	                                   # its credential there, the Aggregator checks it
 *	slurm_conf = "/etc/slurm/slurm.conf" # the Aggregator's slurm.conf; absent:
 *	                                   # libslurm's ($SLURM_CONF, /etc/slurm/slurm.conf)
 *
 * Every path is absolute; node is [A-Za-z0-9._-], at most 64 bytes.
 * Together: aggregator_public_key and allowed_agents need secret_key;
 * aggregators with secret_key need aggregator_public_key (CURVE is all or
 * nothing on a link). Key files are checked by curve.h when a daemon loads
 * them, not here. Fields hold the effective value; NULL = unset (the
 * defaults above are set where one exists). Read them, never assign or free
 * them. */
struct service_config {
	int present; /* a [service] table was read */
	char **aggregators; /* NULL, n_aggregators 0: nunatakd is its own Aggregator */
	size_t n_aggregators;
	char *listen, *agent_socket, *node, *secret_key, *aggregator_public_key, *allowed_agents,
	    *spool_dir, *state_dir, *runs_dir;
	char *munge_socket; /* default CONFIG_DEFAULT_MUNGE_SOCKET */
	char *slurm_conf;   /* NULL: libslurm's own */
	uint64_t spool_max_bytes;
	int netns_only;
	unsigned owned; /* private: which strings the cascade allocated */
};

/* The [ceilings] table: the Machine's Ceilings as `nunatak fit` fitted
 * them from calibration rows (its output is this block, pasted):
 *
 *	[ceilings]
 *	backend = "<Machine identity>"     # optional: the Machine they were fitted on;
 *	                                   # another Machine ignores the table (one warning)
 *	peak_flops = 8.555651e+10          # FLOP/s, > 0: the Ceiling flops_dp
 *	peak_memory_bandwidth = 2.129387e+10 # B/s, > 0: the Ceiling dram_bandwidth
 *	reason = "envelope fit of ..."     # required, not empty: where they come from
 *
 * At least one peak; numbers are floats or integers. A later file's table
 * replaces an earlier one's whole. They win over the cached and theoretical
 * Ceilings in the Runs' Machine snapshot: quality "measured", source "fit",
 * reason "fitted Ceiling ([ceilings] of <file>): <reason>" (machine.h). Read them,
 * never assign or free them. */
struct ceilings_config {
	int present;
	char *backend; /* NULL: any Machine */
	double peak_flops, peak_memory_bandwidth; /* NAN: not given */
	char *reason;
	char *source; /* the file that gave the table */
};

enum config_key {
	CONFIG_NAME,
	CONFIG_RUNS_DIR,
	CONFIG_SAMPLING_FREQUENCY,
	CONFIG_LLVM_SYMBOLIZER,
	CONFIG_DEBUG_DIRS,
	CONFIG_SOURCE_EMBED,
	CONFIG_SOURCE_MAP,
	CONFIG_MPI_BUDGET,
	CONFIG_KEY_COUNT,
};

struct config {
	char *name; /* NULL = unset */
	char *runs_dir;
	long sampling_frequency; /* Hz */
	char *llvm_symbolizer;
	char **debug_dirs; /* n_debug_dirs absolute paths; NULL, 0 by default */
	size_t n_debug_dirs;
	int source_embed; /* 1 by default */
	char **source_map_old, **source_map_new; /* n_source_map prefix pairs, in order */
	size_t n_source_map;
	double mpi_budget_pct; /* [mpi] budget: 0 < pct < 100 */
	/* who set each value: NULL for the default, else a file path or
	 * CONFIG_SOURCE_COMMAND_LINE; owned */
	char *source[CONFIG_KEY_COUNT];
	struct service_config service;
	struct ceilings_config ceilings;
};

/* Defaults. Never fails (defaults are static strings). config_release()
 * frees what the cascade set and leaves @cfg back at its defaults. */
void config_init(struct config *cfg);
void config_release(struct config *cfg);

/* The key as written in TOML ("sampling.frequency"). */
const char *config_key_name(enum config_key key);
/* "default", a file path, or "command line". */
const char *config_source(const struct config *cfg, enum config_key key);

/* Applies one TOML file over @cfg. Returns 0; -ENOENT if the file does not
 * exist; -EINVAL with "file:line:column: message" in @err for a syntax
 * error, an unknown key, a wrong type or an out-of-range value; the
 * refusals of trust_file() with "refusing 'file': why; what to do" in @err:
 * -EPERM (owned by another user, writable by others, under a directory
 * others can write), -ELOOP (a symbolic link), -EISDIR (a directory),
 * -EINVAL (a FIFO, device or socket, never opened); -EFBIG over 1 MiB;
 * another -errno (with a message in @err) if it cannot be read. On any
 * error but -ENOMEM, @cfg is unchanged.
 */
int config_load_file(struct config *cfg, const char *path, char *err, size_t errlen);

/* The cascade's file part: @site_path (NULL = CONFIG_SITE_PATH; a missing
 * site file is fine), then the first "nunatak.toml" found walking up from
 * @start_dir (NULL = current directory) to "/". Whatever bears that name
 * ends the search (a directory, FIFO or link named nunatak.toml is refused,
 * not skipped). A project file that is the site file itself is read once,
 * as the site file. Both pass trust_file() before a byte is read. Returns 0
 * or -errno as config_load_file(); a refused file refuses the cascade;
 * @cfg is unchanged on error but -ENOMEM.
 */
int config_load(struct config *cfg, const char *site_path, const char *start_dir, char *err,
		size_t errlen);

/* The daemons' configuration: the file @path (NULL = CONFIG_SITE_PATH),
 * alone, with the same trust rules; a project file is never looked for.
 * A missing default site file is fine (0: defaults, service.present 0);
 * a missing file given as @path is -ENOENT with the path in @err ("given
 * with --config"). Otherwise as config_load_file(). */
int config_load_daemon(struct config *cfg, const char *path, char *err, size_t errlen);

/* Flags, last in the cascade; the source becomes "command line". Return 0,
 * -EINVAL for NULL or empty strings, -ERANGE for a frequency outside
 * 1..100000, -ENOMEM; @cfg is unchanged on error. */
int config_set_name(struct config *cfg, const char *name);
int config_set_runs_dir(struct config *cfg, const char *runs_dir);
int config_set_sampling_frequency(struct config *cfg, long frequency);
int config_set_llvm_symbolizer(struct config *cfg, const char *path);
/* --no-source (embed 0) */
int config_set_source_embed(struct config *cfg, int embed);
/* --mpi-budget PCT: -ERANGE unless 0 < pct < 100 */
int config_set_mpi_budget(struct config *cfg, double pct);
/* --source-map OLD=NEW: the pairs[0..n) ("OLD=NEW", split at the first
 * '='; -EINVAL when either side is empty) tried before the files' ones. */
int config_add_source_map(struct config *cfg, const char *const *pairs, size_t n);

/* Hands cfg->ceilings to the Machine snapshot of this process
 * (machine_set_fitted_ceilings, machine.h); none present: forgets any.
 * 0 or -ENOMEM. nunatak run and nunatakd call it once loaded. */
int config_use_ceilings(const struct config *cfg);

/* The effective configuration for manifest.json:
 *   {"name": {"value": "x" | null, "source": "default" | path | "command line"},
 *    "runs_dir": {...}, "sampling.frequency": {...}, "tools.llvm-symbolizer": {...},
 *    "tools.debug_dirs": {"value": ["/opt/debug"], "source": ...},
 *    "source.embed": {"value": true, ...},
 *    "source_map": {"value": [{"old": "/build", "new": "/src"}], ...}}
 * A new reference for the caller to json_decref(), or NULL with errno ENOMEM.
 */
json_t *config_effective_json(const struct config *cfg);

#endif
