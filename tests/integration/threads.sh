# A process' CPU time counts every thread, including those still parked
# when main returns (an OpenMP runtime's workers), and the samples agree.
. "$TESTS_LIB/common.sh"
need_root_bpf

cd "$T"
"$NUNATAK" run -- "$WORKLOADS/threads" 2 300 >/dev/null 2>err.txt || fail "exit $?: $(cat err.txt)"
run=$(run_dir_of err.txt)
cpu=$(sql "$run" "select sum(value)/1e9 from measurements where hotspot is null
	and counter in ('cpu_time_user','cpu_time_system')")
assert_near "$cpu" 0.9 0.12 "CPU time of 3 threads of 0.3 s each"
threads=$(sql "$run" "select count(distinct l.tid) from measurements m join loci l on l.id=m.locus
	join hotspots h on h.id=m.hotspot where h.name='burn'")
[ "$threads" -ge 3 ] || fail "burn sampled in $threads threads, expected 3"
sampled=$(sql "$run" "select sum(m.value)/1e9 from measurements m where m.hotspot is not null")
assert_near "$sampled" "$cpu" "$(python3 -c "print(0.15 * $cpu)")" "sampled time vs CPU time"
echo "cpu=$cpu sampled=$sampled threads=$threads"
