/* mpi_probes_fixture — what test_mpi_probes.c and
 * test_mpi_probes_process.c share: a small MPI program built with
 * mpicc.openmpi and mpicc.mpich in a mkdtemp directory (its MPI library
 * the one ldd names), a sampler + module table + MPI probes, and the
 * program launched inside or outside the Target set, probed or not, from
 * before its exec. Header-only like test_helpers.h (each test is one
 * translation unit); include it after test_helpers.h and bpf_fixture.h.
 *
 * The program, run as a singleton (no mpirun), calls MPI_Allreduce N
 * times with D doubles, PMPI_Allreduce K times, MPI_Barrier once, between
 * MPI_Init and MPI_Finalize; given a fifth argument it blocks in an
 * MPI_Recv no message answers.
 */
#ifndef NUNATAK_TESTS_MPI_PROBES_FIXTURE_H
#define NUNATAK_TESTS_MPI_PROBES_FIXTURE_H

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "userspace/agent/modules.h"
#include "userspace/agent/mpi_probes.h"
#include "userspace/agent/sampler.h"

#define N_ALLREDUCE 37
#define K_PMPI 5
#define D_DOUBLES 10

static const char prog_src[] =
    "#include <mpi.h>\n"
    "#include <stdlib.h>\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "	int n = atoi(argv[1]), k = atoi(argv[2]), d = atoi(argv[3]);\n"
    "	double *in = calloc(d, sizeof(*in)), *out = calloc(d, sizeof(*out));\n"
    "	MPI_Init(&argc, &argv);\n"
    "	if (argc > 4) { /* block in MPI_Recv: no message ever comes */\n"
    "		MPI_Recv(in, d, MPI_DOUBLE, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n"
    "		return 1;\n"
    "	}\n"
    "	for (int i = 0; i < n; i++)\n"
    "		MPI_Allreduce(in, out, d, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);\n"
    "	for (int i = 0; i < k; i++)\n"
    "		PMPI_Allreduce(in, out, d, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);\n"
    "	MPI_Barrier(MPI_COMM_WORLD);\n"
    "	MPI_Finalize();\n"
    "	return 0;\n"
    "}\n";

struct family {
	const char *name, *compiler, *lib_needle;
	char exe[PATH_MAX], lib[PATH_MAX];
	int available;
};

static struct family openmpi = {
    .name = "openmpi", .compiler = "mpicc.openmpi", .lib_needle = "/libmpi.so"};
static struct family mpich = {
    .name = "mpich", .compiler = "mpicc.mpich", .lib_needle = "/libmpich.so"};
static char dir[PATH_MAX];
static const char *why_not;

/* the MPI library of exe as ldd resolves it */
static inline int ldd_library(struct family *f)
{
	char cmd[PATH_MAX + 32], line[PATH_MAX + 64], path[PATH_MAX];
	int found = -ENOENT;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "ldd '%s'", f->exe);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	while (fgets(line, sizeof(line), p))
		if (strstr(line, f->lib_needle) && sscanf(line, " %*s => %4095s", path) == 1) {
			snprintf(f->lib, sizeof(f->lib), "%s", path);
			found = 0;
		}
	pclose(p);
	return found;
}

static inline int build(struct family *f)
{
	f->available = have_command(f->compiler);
	if (!f->available)
		return 0;
	snprintf(f->exe, sizeof(f->exe), "%s/prog.%s", dir, f->name);
	if (run_cmd("%s -O1 -g '%s' -o '%s'", f->compiler, path_in(dir, "prog.c"), f->exe))
		return -1;
	return ldd_library(f);
}

static inline int setup(void **state)
{
	(void)state;
	why_not = bpf_unavailable();
	if (why_not)
		return 0;
	if (make_tmpdir(dir, sizeof(dir), "mpi-probes") ||
	    write_file(path_in(dir, "prog.c"), prog_src))
		return -1;
	return build(&openmpi) || build(&mpich) ? -1 : 0;
}

static inline int teardown(void **state)
{
	(void)state;
	return remove_tree(dir);
}

struct fixture {
	struct sampler *sampler;
	struct module_table *table;
	struct mpi_probes *mp;
	uint32_t target_id; /* of the processes launched in the Target (0: 1) */
};

static inline void fixture_init_attach(struct fixture *fx, int events, enum mpi_attach attach)
{
	struct sampler_opts opts = {.frequency = 99};
	char err[256] = "";

	fx->target_id = 0;
	fx->sampler = sampler__new(&opts, err, sizeof(err));
	if (!fx->sampler)
		fail_msg("sampler__new: %s", err);
	fx->table = module_table__new();
	assert_non_null(fx->table);
	fx->mp = mpi_probes__new_attach(sampler_targets_fd(fx->sampler), events, attach, err,
					sizeof(err));
	if (!fx->mp)
		fail_msg("mpi_probes__new: %s", err);
}

static inline void fixture_init(struct fixture *fx, int events)
{
	fixture_init_attach(fx, events, MPI_ATTACH_AUTO);
}

static inline void fixture_release(struct fixture *fx)
{
	mpi_probes__free(fx->mp);
	module_table__free(fx->table);
	sampler__free(fx->sampler);
}

/* probe f's library: 1 probed now */
static inline int consider(struct fixture *fx, const char *path)
{
	char err[256] = "";
	struct module *m = module_table_open_file(fx->table, path);
	int r;

	assert_non_null(m);
	r = mpi_probes_consider(fx->mp, m, err, sizeof(err));
	if (r < 0)
		fail_msg("mpi_probes_consider('%s'): %s", path, err);
	return r;
}

struct site_tally {
	pid_t tgid;
	uint64_t calls[MPI_FUNCTIONS], count_sum[MPI_FUNCTIONS];
	int zero_site;
};

static inline int tally_site(const struct mpi_site_key *key, const struct mpi_site_value *v, void *ctx)
{
	struct site_tally *t = ctx;

	if ((pid_t)key->tgid != t->tgid || key->function >= MPI_FUNCTIONS)
		return 0;
	t->calls[key->function] += v->calls;
	t->count_sum[key->function] += v->count_sum;
	if (!key->call_site || v->min_ns > v->max_ns || v->total_ns < v->max_ns)
		t->zero_site++;
	return 0;
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* waits for pid, 60 s at most; its wait status */
static inline int wait_bounded(pid_t pid)
{
	int status, i;

	for (i = 0; i < 6000; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

enum how {
	IN_TARGET_PROBED = 0, /* a Target process, probed from before its exec */
	IN_TARGET,	      /* a Target process, the caller probes it (exec report) */
	OUTSIDE,	      /* outside every Target, not probed */
	OUTSIDE_PROBED,	      /* outside every Target, but probed: the trap of old */
};

/* runs f's program (n MPI_Allreduce, K_PMPI more; block: it stays in an
 * MPI_Recv) as how says, the probes and the Target set in place before
 * its exec */
static inline pid_t launch_n(struct fixture *fx, struct family *f, int block, int n_calls, enum how how)
{
	int gate[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(gate), 0);
	pid = fork();
	if (pid == 0) {
		char n[16], k[16], d[16];

		close(gate[1]);
		if (read(gate[0], &c, 1) != 1)
			_exit(120);
		snprintf(n, sizeof(n), "%d", n_calls);
		snprintf(k, sizeof(k), "%d", K_PMPI);
		snprintf(d, sizeof(d), "%d", D_DOUBLES);
		setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
		setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
		execl(f->exe, f->exe, n, k, d, block ? "block" : (char *)NULL, (char *)NULL);
		_exit(121);
	}
	close(gate[0]);
	assert_true(pid > 0);
	if (how == IN_TARGET_PROBED || how == IN_TARGET)
		assert_int_equal(sampler_add_target(fx->sampler, pid,
						    fx->target_id ? fx->target_id : 1,
						    TARGET_UID_ANY),
				 0);
	if (how == IN_TARGET_PROBED || how == OUTSIDE_PROBED)
		assert_int_equal(mpi_probes_process_exec(fx->mp, pid), 0);
	assert_int_equal(write(gate[1], "g", 1), 1);
	close(gate[1]);
	return pid;
}

static inline pid_t launch(struct fixture *fx, struct family *f, int block)
{
	return launch_n(fx, f, block, N_ALLREDUCE, IN_TARGET_PROBED);
}

/* MPI_Init returned in pid and one call stays in flight: 0, or -1 after 30 s */
static inline int wait_blocked(struct fixture *fx, pid_t pid)
{
	struct mpi_process proc;
	int i;

	for (i = 0; i < 3000; i++) {
		if (mpi_probes_process(fx->mp, pid, &proc) == 0 && proc.init_end_ns &&
		    mpi_probes_in_flight(fx->mp, pid) == 1)
			return 0;
		usleep(10000);
	}
	return -1;
}


#endif
