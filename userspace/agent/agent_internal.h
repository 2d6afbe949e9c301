/* agent_internal — what agent.c (following processes, kernel reports)
 * and agent_publish.c (Batches, publishing) share: the Agent itself.
 * Not for other modules: agent.h is the interface. */
#ifndef NUNATAK_AGENT_INTERNAL_H
#define NUNATAK_AGENT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "userspace/agent/agent.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/sampler.h"
#include "userspace/launch/rank_identity.h"

#define AGENT_TARGET_ID 1

struct pending_degradation {
	char *name, *message, *remedy;
};

struct drained_sample {
	struct sample_key key;
	struct sample_value value;
	int depth;
	int stack_lost;
	uint64_t ips[MAX_STACK_DEPTH];
};

/* what the Agent knows of one observed process beyond its mappings */
struct process_info {
	pid_t tgid;
	struct rank_identity identity; /* read from its environment at exec */
	uint64_t exit_ns;	       /* 0: running */
};

struct agent {
	struct agent_opts opts;
	struct mpi_probes *mpi;
	struct hardware_counters *hw;
	void *processes; /* tsearch tree of struct process_info, by tgid */
	struct mpi_event *mpi_events;
	size_t n_mpi_events, cap_mpi_events;
	struct publish_queue *queue; /* Batches not acknowledged yet */
	int finished;		     /* agent_finish() done */
	char *run_id, *node, *endpoint;
	void *socket;
	struct sampler *sampler;
	struct module_table *modules;
	struct sideband *sideband;
	int epoll_fd;
	uint64_t seq;
	struct pending_degradation *degradations;
	size_t n_degradations;
	struct task_event *exits;
	size_t n_exits, cap_exits;
	struct drained_sample *drained;
	size_t n_drained, cap_drained;
	uint64_t drained_lost; /* drained, then no Batch held them: in samples_lost_in_drain */
};

/* tsearch order of struct process_info, by tgid */
int agent_process_info_cmp(const void *a, const void *b);
/* the process_info of tgid; create 1: made when absent (NULL on ENOMEM) */
struct process_info *agent_process_info(struct agent *a, pid_t tgid, int create);
/* Says on stderr what never reached the Run (agent_publish.c). */
void agent_report_loss(struct agent *a);

#endif
