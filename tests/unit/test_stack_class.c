/* Tests of analysis/stack_class over synthetic Stacks (innermost first):
 * nunatak's probe (the int3 trap, the uretprobe system call, its BPF
 * programs, the [uprobes] page) before MPI; inside MPI with the outermost
 * API frame as the MPI function (C, PMPI, Fortran bindings normalised) and
 * the first frame outside the MPI libraries as the call site; the MPI
 * library's own thread (no API frame); a truncated Stack; the application.
 * Also the rules behind it: userspace/attribution/mpi_library.h (file
 * names, function names) and own_code.h (kernel functions, BPF names). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/stack_class.h"
#include "userspace/attribution/mpi_library.h"
#include "userspace/attribution/own_code.h"
#include "userspace/pivot/pivot.h"

#define F(mod, fn) {.module = (mod), .hotspot = (fn)}
#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct stack_classification classify(const struct pivot_stack_frame *f, size_t n)
{
	struct stack_classification sc;

	assert_int_equal(stack_classify(f, n, &sc), 0);
	return sc;
}

static void test_busy_send(void **state)
{
	/* the LAMMPS/vader shape: a busy-wait in the shared-memory transport */
	const struct pivot_stack_frame f[] = {
	    F("mca_btl_vader.so", "mca_btl_vader.so+0x4d50"),
	    F("libopen-pal.so.40.30.2", "opal_progress"),
	    F("mca_pml_ob1.so", "mca_pml_ob1_send"),
	    F("libmpi.so.40.30.4", "PMPI_Send"),
	    F("lmp", "CommBrick::reverse_comm()"),
	    F("lmp", "main"),
	};
	struct stack_classification sc = classify(f, N(f));

	(void)state;
	assert_int_equal(sc.class, STACK_INSIDE_MPI);
	assert_string_equal(sc.mpi_function, "MPI_Send");
	assert_int_equal(sc.api_frame, 3);
	assert_int_equal(sc.call_site, 4);
	assert_string_equal(stack_class_name(sc.class), "inside MPI");
}

static void test_fortran(void **state)
{
	/* Open MPI's Fortran binding calls the C one: the outer is the call */
	const struct pivot_stack_frame f[] = {
	    F("libc.so.6", "__memmove_avx_unaligned_erms"),
	    F("libmpi.so.40", "PMPI_Allreduce"),
	    F("libmpi_mpifh.so.40", "mpi_allreduce_"),
	    F("pw.x", "mp_sum_r1_"),
	    F("pw.x", "main"),
	};
	struct stack_classification sc = classify(f, N(f));

	(void)state;
	assert_int_equal(sc.class, STACK_INSIDE_MPI);
	assert_string_equal(sc.mpi_function, "MPI_Allreduce");
	assert_int_equal(sc.call_site, 3);
}

static void test_probe_first(void **state)
{
	/* the trap on entry to MPI_Iprobe: nunatak's, not MPI time */
	const struct pivot_stack_frame trap[] = {
	    F("[kernel]", "pvm_irq_enable"),
	    F("[kernel]", "irqentry_exit_to_user_mode"),
	    F("[kernel]", "asm_exc_int3"),
	    F("libmpi.so.40", "MPI_Iprobe"),
	    F("app", "poll"),
	};
	const struct pivot_stack_frame bpf[] = {
	    F("[kernel]", "read_tsc"),
	    F("[kernel]", "bpf_prog_d2a369ba240289dd_mpi_return [bpf]"),
	    F("[kernel]", "do_syscall_64"),
	    F("libmpi.so.40", "MPI_Send"),
	};
	const struct pivot_stack_frame renamed[] = {
	    F("[kernel]", "[nunatak BPF program mpi_entry]"),
	};
	const struct pivot_stack_frame ret[] = {
	    F("[kernel]", "__ia32_sys_uretprobe"),
	    F("[kernel]", "entry_SYSCALL_64_after_hwframe"),
	    F("app", "poll"),
	};
	const struct pivot_stack_frame tramp[] = {
	    F(OWN_CODE_UPROBES_PATH, OWN_CODE_TRAMPOLINE_NAME),
	    F("app", "poll"),
	};

	(void)state;
	assert_int_equal(classify(trap, N(trap)).class, STACK_PROBE);
	assert_int_equal(classify(bpf, N(bpf)).class, STACK_PROBE);
	assert_int_equal(classify(renamed, N(renamed)).class, STACK_PROBE);
	assert_int_equal(classify(ret, N(ret)).class, STACK_PROBE);
	assert_int_equal(classify(tramp, N(tramp)).class, STACK_PROBE);
}

static void test_not_probe(void **state)
{
	/* a system call of the application, another tool's BPF program */
	const struct pivot_stack_frame sys[] = {
	    F("[kernel]", "pvm_irq_enable"),
	    F("[kernel]", "bpf_prog_0123456789abcdef_their_prog [bpf]"),
	    F("[kernel]", "do_syscall_64"),
	    F("libc.so.6", "read"),
	    F("app", "main"),
	};
	/* a system call made inside MPI is MPI time */
	const struct pivot_stack_frame mpi_sys[] = {
	    F("[kernel]", "process_vm_rw"),
	    F("libc.so.6", "process_vm_readv"),
	    F("mca_btl_vader.so", "mca_btl_vader_get_cma"),
	    F("libmpi.so.40", "PMPI_Recv"),
	    F("app", "recv_all"),
	};
	struct stack_classification sc;

	(void)state;
	assert_int_equal(classify(sys, N(sys)).class, STACK_APPLICATION);
	sc = classify(mpi_sys, N(mpi_sys));
	assert_int_equal(sc.class, STACK_INSIDE_MPI);
	assert_string_equal(sc.mpi_function, "MPI_Recv");
	assert_int_equal(sc.call_site, 4);
}

static void test_library_thread_and_truncated(void **state)
{
	/* Open MPI's progress thread: MPI's code, no MPI call */
	const struct pivot_stack_frame thr[] = {
	    F("libevent_core-2.1.so.7", "epoll_dispatch"),
	    F("libopen-pal.so.40", "opal_progress_thread"),
	    F("libc.so.6", "start_thread"),
	};
	/* unwinding stopped inside MPI: no call site */
	const struct pivot_stack_frame cut[] = {
	    F("mca_btl_vader.so", "mca_btl_vader.so+0x4d50"),
	    F("libmpi.so.40", "MPI_Wait"),
	};
	/* statically linked: MPI_ functions recognised by name */
	const struct pivot_stack_frame stat[] = {
	    F("app", "MPIDI_progress"),
	    F("app", "PMPI_Barrier"),
	    F("app", "solve"),
	};
	struct stack_classification sc;

	(void)state;
	sc = classify(thr, N(thr));
	assert_int_equal(sc.class, STACK_INSIDE_MPI);
	assert_string_equal(sc.mpi_function, "");
	assert_int_equal(sc.api_frame, STACK_CLASS_NONE);
	assert_int_equal(sc.call_site, 2);
	sc = classify(cut, N(cut));
	assert_int_equal(sc.class, STACK_INSIDE_MPI);
	assert_string_equal(sc.mpi_function, "MPI_Wait");
	assert_int_equal(sc.call_site, STACK_CLASS_NONE);
	sc = classify(stat, N(stat));
	assert_int_equal(sc.class, STACK_INSIDE_MPI);
	assert_string_equal(sc.mpi_function, "MPI_Barrier");
	assert_int_equal(sc.call_site, 2);
}

static void test_application(void **state)
{
	const struct pivot_stack_frame f[] = {
	    F("app", "compute"),
	    F("libc.so.6", "__libc_start_main"),
	};
	struct stack_classification sc;

	(void)state;
	sc = classify(f, N(f));
	assert_int_equal(sc.class, STACK_APPLICATION);
	sc = classify(NULL, 0);
	assert_int_equal(sc.class, STACK_APPLICATION);
	assert_int_equal(stack_classify(NULL, 1, &sc), -EINVAL);
}

static void test_names(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(mpi_library_function_name("PMPI_Send", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "MPI_Send");
	assert_int_equal(mpi_library_function_name("mpi_comm_rank_", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "MPI_Comm_rank");
	assert_int_equal(mpi_library_function_name("pmpi_allreduce__", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "MPI_Allreduce");
	assert_int_equal(mpi_library_function_name("mpi_send_f08", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "MPI_Send");
	assert_int_equal(mpi_library_function_name("MPI_T_init_thread", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "MPI_T_init_thread");
	assert_int_equal(mpi_library_function_name("ompi_mpi_init", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(mpi_library_function_name("MPI_Send", buf, 5), -ENOSPC);
	/* the binding each spelling enters */
	{
		static const struct {
			const char *symbol, *name;
			enum mpi_binding binding;
		} spellings[] = {
		    {"MPI_Send", "MPI_Send", MPI_BINDING_C},
		    {"PMPI_Send_c", "MPI_Send_c", MPI_BINDING_C},
		    {"MPI_T_init_thread", "MPI_T_init_thread", MPI_BINDING_C},
		    {"MPI_SEND", "MPI_Send", MPI_BINDING_FORTRAN},
		    {"PMPI_SEND", "MPI_Send", MPI_BINDING_FORTRAN},
		    {"mpi_send", "MPI_Send", MPI_BINDING_FORTRAN},
		    {"pmpi_send__", "MPI_Send", MPI_BINDING_FORTRAN},
		    {"MPI_Send_f", "MPI_Send", MPI_BINDING_FORTRAN},
		    {"PMPI_Send_f08", "MPI_Send", MPI_BINDING_FORTRAN},
		    {"mpi_send_f08_", "MPI_Send", MPI_BINDING_FORTRAN},
		    {"mpi_send_f08ts_", "MPI_Send", MPI_BINDING_FORTRAN},
		    {"mpi_send_f08ts_large_", "MPI_Send_f08ts_large", MPI_BINDING_FORTRAN},
		    {"MPI_T_INIT_THREAD", "MPI_T_init_thread", MPI_BINDING_FORTRAN},
		};
		enum mpi_binding binding;

		for (size_t i = 0; i < sizeof(spellings) / sizeof(*spellings); i++) {
			binding = 0;
			assert_int_equal(mpi_library_function_spelled(spellings[i].symbol, buf,
								      sizeof(buf), &binding),
					 0);
			assert_string_equal(buf, spellings[i].name);
			assert_int_equal(binding, spellings[i].binding);
		}
		assert_int_equal(mpi_library_function_spelled("pMPI_Send", buf, sizeof(buf),
							      &binding),
				 -EINVAL);
		assert_int_equal(mpi_library_function_spelled("mpi__", buf, sizeof(buf), &binding),
				 -EINVAL);
	}
	assert_true(mpi_library_is_api("libmpich.so.12"));
	assert_true(mpi_library_is_api("libmpifort.so.12"));
	assert_true(mpi_library_is_api("libmpi_usempif08.so.40"));
	assert_false(mpi_library_is_api("mca_btl_vader.so"));
	assert_true(mpi_library_is_mpi("mca_btl_vader.so"));
	assert_true(mpi_library_is_mpi("libucp.so.0"));
	assert_false(mpi_library_is_mpi("libc.so.6"));
	assert_false(mpi_library_is_api_function("MPIDI_progress") &&
		     !mpi_library_is_api_function("MPI_send"));
	assert_true(own_code_bpf_program("bpf_prog_d2a369ba240289dd_mpi_return [bpf]", buf,
					 sizeof(buf)) == 1);
	assert_string_equal(buf, "[nunatak BPF program mpi_return]");
	/* the kernel keeps 15 characters of a program's name */
	assert_true(own_code_bpf_program("bpf_prog_0123456789abcdef_component_retur", buf,
					 sizeof(buf)) == 1);
	assert_string_equal(buf, "[nunatak BPF program component_return]");
	assert_int_equal(own_code_bpf_program("bpf_prog_0123456789abcdef_mpi", buf, sizeof(buf)),
			 0);
	assert_int_equal(own_code_bpf_program("bpf_prog_0123456789abcdef_mpi_entry", buf, 8),
			 -ENOSPC);
	/* the list is every function of the objects of bpf/: a program of
	 * each, and the sub-programs the kernel lists apart */
	assert_true(own_code_is_own_bpf_program("bpf_prog_0123456789abcdef_sample_cpu [bpf]"));
	assert_true(own_code_is_own_bpf_program("bpf_prog_0123456789abcdef_task_exec [bpf]"));
	assert_true(own_code_is_own_bpf_program("bpf_prog_0123456789abcdef_empty_uprobe"));
	assert_true(own_code_is_own_bpf_program("bpf_prog_0123456789abcdef_selftest_token"));
	assert_true(own_code_is_own_bpf_program("bpf_prog_0123456789abcdef_unwind_frame_cb"));
	assert_true(own_code_is_own_bpf_program("bpf_prog_0123456789abcdef_token_scan_chun"));
	assert_false(own_code_is_own_bpf_program("bpf_prog_0123456789abcdef_hid_tail_call"));
	assert_true(own_code_is_probe_kernel_function("uprobe_notify_resume"));
	assert_false(own_code_is_probe_kernel_function("do_syscall_64"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_busy_send),
	    cmocka_unit_test(test_fortran),
	    cmocka_unit_test(test_probe_first),
	    cmocka_unit_test(test_not_probe),
	    cmocka_unit_test(test_library_thread_and_truncated),
	    cmocka_unit_test(test_application),
	    cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
