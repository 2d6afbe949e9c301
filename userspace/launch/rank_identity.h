/* rank_identity — which MPI rank a process is, read from its environment.
 *
 * Launchers publish the rank in environment variables whose names depend
 * on the family (Open MPI, MVAPICH2, PMI/hydra, PMIx, PALS, Flux, Slurm).
 * Families are tried most specific first; the first whose RANK variable is
 * present and parses as a non-negative decimal integer wins. A malformed
 * number ("abc", "-1", "", "3x", "+2", beyond INT_MAX) counts as absent, so
 * a later family may win. Slurm comes last because, measured, every rank
 * started by mpirun inside an sbatch job has SLURM_PROCID=0; under
 * `srun --mpi=pmix` Open MPI sets no OMPI_COMM_WORLD_RANK but PMIX_RANK.
 *
 *   family           rank                  size                  local rank
 *   OMPI_COMM_WORLD  OMPI_COMM_WORLD_RANK  OMPI_COMM_WORLD_SIZE  OMPI_COMM_WORLD_LOCAL_RANK
 *   MV2_COMM_WORLD   MV2_COMM_WORLD_RANK   MV2_COMM_WORLD_SIZE   MV2_COMM_WORLD_LOCAL_RANK
 *   PMI              PMI_RANK              PMI_SIZE              MPI_LOCALRANKID
 *   PMIX             PMIX_RANK             OMPI_COMM_WORLD_SIZE  PMIX_LOCAL_RANK
 *                                          else PMIX_SIZE        else OMPI_COMM_WORLD_LOCAL_RANK
 *   PALS             PALS_RANKID           PALS_SIZE             PALS_LOCAL_RANKID
 *   FLUX_TASK        FLUX_TASK_RANK        FLUX_JOB_SIZE         FLUX_TASK_LOCAL_ID
 *   SLURM            SLURM_PROCID          SLURM_NTASKS          SLURM_LOCALID
 *
 * A size or local rank that is absent or malformed is -1 (unknown); so is
 * a size of 0 or one not greater than the rank (it contradicts the rank).
 * No identity is has_rank 0 with rank, world_size, local_rank -1 and
 * family NULL: never rank 0 by default. family points to a static string.
 * Whenever out is not NULL it is filled, on error too (as no identity).
 * A variable given twice counts at its first occurrence, as getenv(3) does.
 */
#ifndef NUNATAK_RANK_IDENTITY_H
#define NUNATAK_RANK_IDENTITY_H

#include <stddef.h>

struct rank_identity {
	int has_rank;	    /* 0: no identity (never rank 0 by default) */
	int rank;	    /* -1 without identity */
	int world_size;	    /* -1 unknown */
	int local_rank;	    /* -1 unknown */
	const char *family; /* static: "OMPI_COMM_WORLD", "MV2_COMM_WORLD", "PMI", "PMIX",
			       "PALS", "FLUX_TASK", "SLURM"; NULL without identity */
};

/* environ_block: NUL-separated "NAME=VALUE" block as /proc/PID/environ gives it,
 * len bytes, possibly without the final NUL; NULL is accepted when len is 0.
 * 0 with out filled (has_rank 0 when no family matched), -EINVAL when out
 * is NULL or environ_block is NULL with len > 0. */
int rank_identity_from_environ(const char *environ_block, size_t len, struct rank_identity *out);

/* Reads /proc/PID/environ. 0 with out filled; -EINVAL (pid <= 0 or out
 * NULL), -ENOENT or -ESRCH (the process is gone), -EACCES (not ours),
 * -ENOMEM, or another -errno. A process whose environment reads empty (a
 * zombie, a kernel thread) yields 0 and has_rank 0. So does a process read
 * in the instant its exec runs (measured: right after posix_spawn returns,
 * the new image's environment may still read empty); read it once its
 * exec has completed (sched_process_exec), or read again. */
int rank_identity_read(int pid, struct rank_identity *out);

#endif
