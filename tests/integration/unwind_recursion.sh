# Honest stack accounting: 2 threads descend recursions of depth 1 to 60
# (2 frames a level: up to 126 frames, within the 127 issue 9 promises:
# none truncated)
# through 4 mutually recursive functions, sampled at
# 9999 Hz: tens of thousands of distinct stacks. No "stacks-dropped"/"map
# full" Degradation; every sample is in the folded export (its counts sum
# to the Run's samples, and the samples match the CPU time); >= 99 % of
# the samples at the bottom carry their complete stack up to main or the
# thread's start; any truncated stack is counted in a Degradation.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/unwind.sh"
need_root_bpf
freq=9999

unwind_run recursion -F "$freq" -- "$UW/recursion" 200
summary_check recursion degradations --forbid 'stacks?[-_ ]dropped|map (was |is )?full|full map' || exit 1
samples=$(json "$T/recursion.json" 'd["totals"]["samples"]')
cpu=$(sql "$run" "select sum(m.value)/1e9 from measurements m join loci l on l.id=m.locus
	where m.hotspot is null and m.counter in ('cpu_time_user','cpu_time_system') and l.comm='recursion'")
expected=$(python3 -c "print(round($cpu * $freq))")
echo "samples=$samples, CPU time $cpu s: $expected expected at $freq Hz"
if ! python3 -c "import sys; sys.exit(0 if $samples >= 0.85 * $expected else 1)"; then
	summary_check recursion has-degradation --match 'lost|dropped|throttl' ||
		fail "$samples samples for $cpu s of CPU at $freq Hz ($expected expected) and no Degradation says why"
fi
unwind_export recursion
unwind_check_sum recursion
distinct=$(wc -l <"$T/recursion.folded")
echo "distinct stacks: $distinct"
[ "$distinct" -ge 10000 ] || fail "only $distinct distinct stacks: the workload did not make tens of thousands"
truncated=$(folded "$T/recursion.folded" count --frame '\[truncated\]') || exit 1
if [ "$truncated" -gt 0 ]; then
	summary_check recursion has-degradation --match 'truncat|depth' ||
		fail "$truncated samples have a truncated stack and no Degradation counts them"
fi
folded "$T/recursion.folded" chain --what "recursion: bottom" --chain 'rec[0-3],bottom' \
	--via main --via worker --min-samples 1000 || exit 1
