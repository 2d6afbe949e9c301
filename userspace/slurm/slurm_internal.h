/* slurm_internal — what slurm_job.c, slurm_setup.c and munge_cred.c share. */
#ifndef NUNATAK_SLURM_INTERNAL_H
#define NUNATAK_SLURM_INTERNAL_H

#include <stddef.h>

#include "userspace/slurm/slurm_job.h"

#define SLURM_DEFAULT_CONF "/etc/slurm/slurm.conf"

/* ret (a -errno), with a printf-formatted message in err (when errlen) */
int slurm_error(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* libslurm configured with conf (NULL: $SLURM_CONF, else the default), once
 * per process; see slurm_job.h. 0 or -errno with err. */
int slurm_setup(const char *conf, char *err, size_t errlen);

/* The path libslurm was configured with ("" not yet) */
const char *slurm_setup_conf(void);

/* 0 when a TCP connection to one of the configuration's slurmctld hosts
 * opens within SLURM_JOB_PROBE_MS; -EHOSTUNREACH with err otherwise.
 * After slurm_setup only. */
int slurm_setup_probe(char *err, size_t errlen);

#endif
