# The Fortran chain: the program unit (MAIN__, called by main) runs an
# OpenMP region of 2 threads, each calling chain_a (module chainf, in the
# executable) -> chain_b -> chain_c (module chainf_lib, libchain_f.so),
# built -O2 -fomit-frame-pointer (chain_f) and with frame pointers
# (chain_f-fp). Names as gfortran mangles them and llvm-symbolizer prints
# them: __chainf_MOD_chain_a, __chainf_lib_MOD_chain_b/_c, the outlined
# region MAIN__._omp_fn.0. >= 99 % of the samples in chain_c carry the
# complete chain up to the region (not truncated: on to main for the
# initial thread, to the thread's start for the worker); the folded export
# sums to the Run's samples.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/unwind.sh"
need_root_bpf

for w in chain_f chain_f-fp; do
	unwind_run "$w" -- "$UW/$w"
	unwind_export "$w"
	unwind_check_sum "$w"
	folded "$T/$w.folded" chain --what "$w: chain_c" \
		--chain '__chainf_MOD_chain_a,__chainf_lib_MOD_chain_b,__chainf_lib_MOD_chain_c' \
		--caller 'MAIN__\._omp_fn\.0' --min-samples 500 || exit 1
	folded "$T/$w.folded" has --what "$w: chain_c under main and MAIN__" \
		--frame '__chainf_lib_MOD_chain_c' --with main --with MAIN__ --min-samples 200 || exit 1
done
