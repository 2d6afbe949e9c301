# MPI on real openmpi: ranks, exact call counts and bytes, compute and
# outside-MPI time in the ratio r+1, MPI time against the workload's own,
# Events, Fortran bindings counted once, a rank killed mid-run.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/mpi.sh"
need_root_bpf
mpi_check_family openmpi
