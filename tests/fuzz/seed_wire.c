/* seed_wire — writes the seed corpus of fuzz_wire_aggregator: Envelopes as
 * an Agent sends them (Batches built with the real batch builder over real
 * modules of this machine: /usr/bin/cat and libc; one with kernel frames
 * and the kernel's symbols), a Control START and
 * FINALIZE as the launcher sends them, an Ack and an Error.
 * Not built by `make`; to make the seeds again:
 *   make build && cc -std=gnu11 -D_GNU_SOURCE -I. -Ibuild tests/fuzz/seed_wire.c \
 *      build/libnunatak.a -lbpf -ldw -lelf -lz -lzmq -lprotobuf-c -lsqlite3 -ljansson \
 *      -lpthread -o /tmp/seed_wire && /tmp/seed_wire tests/fuzz/corpus/wire_aggregator
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "userspace/agent/batch.h"
#include "userspace/agent/modules.h"

static void write_envelope(const char *dir, const char *name, wire_envelope *env)
{
	size_t len;
	uint8_t *buf;
	char path[4096];
	FILE *fp;

	env->protocol_major = WIRE_PROTOCOL_MAJOR;
	env->protocol_minor = WIRE_PROTOCOL_MINOR;
	len = nunatak__wire__envelope__get_packed_size(env);
	buf = malloc(len + 1);
	nunatak__wire__envelope__pack(env, buf);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fp = fopen(path, "wb");
	if (!fp || fwrite(buf, 1, len, fp) != len || fclose(fp)) {
		perror(path);
		exit(1);
	}
	free(buf);
}

static void batch_seed(const char *dir, const char *name, struct module *app, struct module *libc,
		       uint64_t seq, int mpi)
{
	struct batch_builder *b = batch_builder__new("solver-20261201-090000", "node07", seq);
	struct batch_locus main_thread = { .tgid = 4242, .tid = 4242, .comm = "cat",
					   .exe = app->path, .has_rank = mpi, .world_size = mpi ? 2 : -1 };
	struct batch_locus worker = { .tgid = 4242, .tid = 4243, .comm = "cat", .world_size = -1 };
	struct module *deep[] = { libc, app, app };
	uint64_t offs[] = { 0x28f40, 0x2a10, 0x1f00 };
	Nunatak__Wire__ProcessExit pe = NUNATAK__WIRE__PROCESS_EXIT__INIT;

	batch_builder_add_sample(b, &main_thread, deep, offs, 3, 0, 0, "cpu-clock", 12, 12012012);
	batch_builder_add_sample(b, &main_thread, deep, offs, 1, 0, 1, "cpu-clock", 2, 2002002);
	batch_builder_add_sample(b, &worker, deep + 1, offs + 1, 2, 1, 0, "cycles", 3, 9000000);
	if (mpi) {
		struct batch_mpi_site site = { .function = "MPI_Allreduce", .module = app,
					       .offset = 0x2a0f, .calls = 100, .total_ns = 50000,
					       .min_ns = 200, .max_ns = 4000, .bytes = 800, .sends = 1 };

		batch_builder_add_mpi_site(b, &main_thread, &site);
		site.function = "MPI_Recv";
		site.bytes_reason = "derived datatype";
		site.sends = 0;
		batch_builder_add_mpi_site(b, &main_thread, &site);
		batch_builder_add_mpi_process(b, &main_thread, &(struct batch_mpi_process){.init_end_ns = 1000, .finalize_start_ns = 900000, .probe_cost_ns = 9000, .probed_calls = 202, .probe_budget = 0.02, .probing = "every call"});
		batch_builder_add_mpi_event(b, &main_thread, "MPI_Send", 2000, 300, 1, 64, 1);
	}
	pe.exit_status = 0;
	pe.utime_ns = 4000000;
	pe.stime_ns = 1000000;
	pe.wall_ns = 9000000;
	pe.maxrss_bytes = 2 << 20;
	pe.hardware_counters_reason = "perf_event_paranoid is 3";
	batch_builder_add_exit(b, &main_thread, &pe);
	batch_builder_add_degradation(b, "no-hardware-counters", "perf_event_paranoid is 3",
				      "sysctl kernel.perf_event_paranoid=1");
	batch_builder_add_counter(b, "samples_dropped", 3);
	write_envelope(dir, name, batch_builder_envelope(b));
	batch_builder__free(b);
}

/* A sample taken in the kernel: kernel frames ("[kernel]", offsets from
 * the text base) above the user ones, and the kernel functions' names. */
static void kernel_seed(const char *dir, struct module_table *t, struct module *app,
			struct module *libc)
{
	struct batch_builder *b = batch_builder__new("solver-20261201-090000", "node07", 3);
	struct batch_locus main_thread = { .tgid = 4242, .tid = 4242, .comm = "cat",
					   .exe = app->path, .world_size = -1 };
	struct module *kernel = module_table_kernel(t);
	struct module *frames[] = { kernel, kernel, libc, app };
	uint64_t offs[] = { 0x1a2b47, 0x122a1c, 0x28f40, 0x2a10 };

	batch_builder_add_sample(b, &main_thread, frames, offs, 4, 0, 1, "cpu-clock", 7, 7007007);
	batch_builder_add_module_symbol(b, kernel, 0x1a2b00, 0x80, "clear_page_erms");
	batch_builder_add_module_symbol(b, kernel, 0x122a00, 0x40, "asm_exc_page_fault");
	write_envelope(dir, "batch_kernel", batch_builder_envelope(b));
	batch_builder__free(b);
}

int main(int argc, char **argv)
{
	struct module_table *t = module_table__new();
	struct module *app, *libc;
	wire_envelope env = NUNATAK__WIRE__ENVELOPE__INIT;
	Nunatak__Wire__Control control = NUNATAK__WIRE__CONTROL__INIT;
	Nunatak__Wire__Ack ack = NUNATAK__WIRE__ACK__INIT;
	Nunatak__Wire__Error error = NUNATAK__WIRE__ERROR__INIT;

	if (argc != 2 || !t)
		return 2;
	app = module_table_open_file(t, "/usr/bin/cat");
	libc = module_table_open_file(t, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	if (!app || !libc)
		return 1;
	batch_seed(argv[1], "batch_samples", app, libc, 1, 0);
	batch_seed(argv[1], "batch_mpi", app, libc, 2, 1);
	kernel_seed(argv[1], t, app, libc);

	control.action = NUNATAK__WIRE__CONTROL__ACTION__START;
	control.run_id = "solver-20261201-090000";
	control.json = "{\"run_dir\": \"/tmp/x\", \"name\": \"solver\"}";
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_CONTROL;
	env.control = &control;
	write_envelope(argv[1], "control_start", &env);
	control.action = NUNATAK__WIRE__CONTROL__ACTION__FINALIZE;
	control.json = "{\"exit_code\": 0, \"end\": \"2026-12-01T09:00:01Z\"}";
	write_envelope(argv[1], "control_finalize", &env);
	ack.run_id = control.run_id;
	ack.node = "node07";
	ack.seq = 1;
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ACK;
	env.ack = &ack;
	write_envelope(argv[1], "ack", &env);
	error.message = "batch 3 from 'node07' not stored: Invalid argument";
	env.body_case = NUNATAK__WIRE__ENVELOPE__BODY_ERROR;
	env.error = &error;
	write_envelope(argv[1], "error", &env);
	module_table__free(t);
	return 0;
}
