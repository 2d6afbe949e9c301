# 200 processes of about 20 ms each: at least 95 % of their samples are on
# named hotspots (their module maps were captured as they happened).
. "$TESTS_LIB/common.sh"
need_root_bpf

cd "$T"
cat >many.sh <<SCRIPT
#!/bin/sh
i=0
while [ \$i -lt 200 ]; do "$WORKLOADS/hotspots" 0.02 >/dev/null; i=\$((i + 1)); done
SCRIPT
chmod +x many.sh
"$NUNATAK" run -- ./many.sh 2>err.txt || fail "exit $?: $(cat err.txt)"
run=$(run_dir_of err.txt)

read -r named all procs <<<"$(sql "$run" "select
	sum(case when h.resolution_level != 'unresolved' then m.sample_count else 0 end),
	sum(m.sample_count), count(distinct l.tgid)
	from measurements m join loci l on l.id=m.locus join hotspots h on h.id=m.hotspot
	where l.comm='hotspots'" | tr '|' ' ')"
[ -n "$all" ] && [ "$all" -gt 0 ] || fail "no samples of the short-lived processes"
[ "$procs" -ge 150 ] || fail "only $procs of 200 short-lived processes were sampled"
python3 -c "import sys; sys.exit(0 if $named >= 0.95 * $all else 1)" ||
	fail "only $named of $all samples on named hotspots (< 95 %)"
echo "named=$named all=$all processes=$procs"
