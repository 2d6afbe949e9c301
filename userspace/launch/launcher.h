/* launcher — tells the MPI launcher and the application apart in the
 * command line given to `nunatak run -- CMD...`.
 *
 * The command line is read, never executed: from the left, leading
 * NAME=VAL assignments and wrappers (env, numactl, taskset, time, nice,
 * stdbuf, chrt, ionice, nohup, setsid) are skipped with their own options,
 * an MPI launcher (mpirun, mpiexec and their variants, orterun, prterun,
 * srun) is recorded with its options skipped, wrappers after the launcher
 * are skipped again, and the first remaining word is the application: the
 * real target whose basename names the Run.
 *
 * Invariants of a filled struct launcher_split:
 *   - -1 <= launcher_index < argc and -1 <= target_index < argc;
 *   - when both are set, launcher_index < target_index;
 *   - launcher[] is the basename of argv[launcher_index] (truncated to
 *     fit), "" exactly when launcher_index is -1;
 *   - world_size is a declared count >= 1, or -1.
 *
 * Options must be known to know whether they take a value. An unknown
 * option starting with '-' is assumed to take no value (the next word is
 * then read as the program, or as the next option): a guess, the only one.
 * Joined forms are understood: --opt=value, -np=4, -n4 (a launcher option
 * name followed by digits) and getopt clusters such as -n4 or -pdebug for
 * srun and the wrappers. An MPMD line (`mpirun -n 1 a : -n 2 b`) yields the
 * first program; world_size is the sum of the contexts' counts when every
 * context declares one, else -1. A nested launcher (`srun mpirun ./app`)
 * is skipped like the first one; the first launcher is the one recorded,
 * world_size comes from the first that declares it.
 * `env -S STRING` hides the command inside STRING, and taskset/chrt/ionice
 * with -p act on an existing process: no target then.
 * Ranks are declared by -n, -np, --np, --n and Open MPI's -c (an alias of
 * -np); srun by -n and --ntasks. srun's -c is --cpus-per-task: not ranks.
 */
#ifndef NUNATAK_LAUNCHER_H
#define NUNATAK_LAUNCHER_H

struct launcher_split {
	int launcher_index; /* argv index of the MPI launcher, -1 when there is none */
	int target_index;   /* argv index of the application, -1 when it cannot be told */
	long world_size;    /* declared number of ranks, -1 when not declared */
	char launcher[64];  /* basename of the launcher ("mpirun"), "" when none */
};

/* Splits argv into launcher and target. Never fails on odd input: fills
 * out as well as it can. 0, or -EINVAL for argc < 1, a NULL argv or out.
 * A NULL inside argv[0..argc) ends the command line there. */
int launcher_split(int argc, char *const argv[], struct launcher_split *out);

/* Basename of argv[s->target_index], the name of the Run ("app", never
 * "mpirun"); falls back to argv[0]'s basename when there is no target (or
 * s is NULL). Borrowed from argv; "" when argv is empty. */
const char *launcher_target_name(int argc, char *const argv[], const struct launcher_split *s);

/* 1 when a process' comm or exe basename (a path is accepted) is an MPI
 * launcher or one of its helper daemons (orted, prted, hydra_pmi_proxy,
 * slurmstepd...), 0 otherwise or for NULL. */
int launcher_is_launcher_process(const char *name);

#endif
