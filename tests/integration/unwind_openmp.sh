# CPU time per process and per thread: an OpenMP process (2 threads, each
# burning ~1 s in omp_burn) prints its own getrusage(RUSAGE_SELF); the CPU
# time the Run accounts to it (the pivot's cpu_time_user + cpu_time_system,
# and summary --json's processes) is within 5 % of it, three times in a row
# (a worker killed by exit_group used to lose its share now and then);
# summary --json lists 2 busy threads of the process; the folded export
# sums to the Run's samples and omp_burn's stacks are complete up to the
# outlined region main._omp_fn.0.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/unwind.sh"
need_root_bpf

for i in 1 2 3; do
	unwind_run "openmp$i" -- "$UW/openmp"
	ru=$(sed -n 's/^rusage_user_s=\([0-9.]*\) rusage_system_s=\([0-9.]*\)$/\1 + \2/p' "$T/openmp$i.err")
	[ -n "$ru" ] || fail "the workload printed no rusage line: $(tail -5 "$T/openmp$i.err")"
	ru=$(python3 -c "print($ru)")
	cpu=$(sql "$run" "select sum(m.value)/1e9 from measurements m join loci l on l.id=m.locus
		where m.hotspot is null and m.counter in ('cpu_time_user','cpu_time_system') and l.comm='openmp'")
	echo "run $i: pivot CPU time $cpu s, getrusage $ru s"
	assert_near "$cpu" "$ru" "$(python3 -c "print(0.05 * $ru)")" "run $i: the process' CPU time in the pivot against its getrusage"
done
# per-thread Loci in the pivot: 2 threads with a fair part of the samples
busy=$(sql "$run" "select count(*) from (select l.tid, sum(m.sample_count) n from measurements m
	join loci l on l.id=m.locus where m.hotspot is not null and l.comm='openmp' group by l.tid)
	where n >= 0.3 * (select sum(sample_count) from measurements where hotspot is not null)")
[ "$busy" -ge 2 ] || fail "$busy threads of openmp hold 30 % of the samples in the pivot, expected 2"
summary_check openmp3 process-cpu --exe openmp --expect "$ru" || exit 1
summary_check openmp3 threads --exe openmp --busy 2 || exit 1
unwind_export openmp3
unwind_check_sum openmp3
folded "$T/openmp3.folded" chain --what "openmp: omp_burn" --chain omp_burn \
	--caller 'main\._omp_fn\.0' --min-samples 500 || exit 1
