# A shell script that forks and execs children: the children's hotspots
# are in the Run, each process is its own Locus.
. "$TESTS_LIB/common.sh"
need_root_bpf

cd "$T"
cat >family.sh <<SCRIPT
#!/bin/sh
"$WORKLOADS/hotspots" 1 >/dev/null &
( exec "$WORKLOADS/hotspots" 1 >/dev/null )
wait
sh -c '"$WORKLOADS/hotspots" 0.5 >/dev/null'
SCRIPT
chmod +x family.sh
"$NUNATAK" run -- ./family.sh 2>err.txt || fail "exit $?: $(cat err.txt)"
run=$(run_dir_of err.txt)
case "$run" in .nunatak/family.sh-*) ;; *) fail "Run not named after the script: $run" ;; esac

procs=$(sql "$run" "select count(distinct l.tgid) from measurements m join loci l on l.id=m.locus
	join hotspots h on h.id=m.hotspot where h.name='heavy_kernel'")
[ "$procs" -ge 3 ] || fail "heavy_kernel seen in $procs processes, expected 3 (fork, fork+exec, sh -c)"
# each child's sampled time matches the CPU time the kernel accounted to it
sql "$run" "select l.tgid, sum(case when m.hotspot is not null then m.value else 0 end)/1e9,
	sum(case when m.counter in ('cpu_time_user','cpu_time_system') then m.value else 0 end)/1e9
	from measurements m join loci l on l.id=m.locus where l.comm='hotspots' group by l.tgid" >per_proc.txt
[ "$(wc -l <per_proc.txt)" -ge 3 ] || fail "fewer than 3 hotspots processes: $(cat per_proc.txt)"
while IFS='|' read -r tgid sampled cpu; do
	assert_near "$sampled" "$cpu" "$(python3 -c "print(0.15 * $cpu + 0.02)")" "process $tgid sampled vs CPU time"
done <per_proc.txt
echo "processes=$procs"; cat per_proc.txt
