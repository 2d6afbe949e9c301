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
secs=$(sql "$run" "select sum(m.value)/1e9 from measurements m join hotspots h on h.id=m.hotspot
	where h.name in ('heavy_kernel','light_kernel')")
assert_near "$secs" 2.5 0.4 "seconds in the children's kernels (1 + 1 + 0.5)"
echo "processes=$procs seconds=$secs"
