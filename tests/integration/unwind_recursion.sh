# Honest stack accounting: 2 threads descend recursions of depth 1 to 60
# (2 frames a level: up to 126 frames, within the 127 issue 9 promises:
# none truncated) through 4 mutually recursive functions, sampled at
# 4999 Hz for ~3 s each: tens of thousands of distinct stacks, 10 000
# samples a second (what 997 Hz on 10 CPUs gives). No "stacks-dropped"/
# "map full" Degradation, no sample lost on its way to the Run (the
# samples match the process' CPU time, nothing "not stored"); the folded
# export sums to the Run's samples; >= 99 % of the samples at the bottom
# carry their complete stack up to main or the thread's start; a truncated
# stack, if any, is counted in a Degradation.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/unwind.sh"
need_root_bpf
freq=4999

unwind_run recursion -F "$freq" -- "$UW/recursion" 400
summary_check recursion degradations \
	--forbid 'stacks?[-_ ]dropped|map (was |is )?full|full map|storage|not stored|interrupted' || exit 1
samples=$(json "$T/recursion.json" 'd["totals"]["samples"]')
cpu=$(sql "$run" "select sum(m.value)/1e9 from measurements m join loci l on l.id=m.locus
	where m.hotspot is null and m.counter in ('cpu_time_user','cpu_time_system') and l.comm='recursion'")
[ -n "$cpu" ] || fail "the Run has no CPU time for the recursion process (its exit report lost?)"
expected=$(python3 -c "print(round($cpu * $freq))")
echo "samples=$samples, CPU time $cpu s: $expected expected at $freq Hz"
python3 -c "import sys; sys.exit(0 if $samples >= 0.85 * $expected else 1)" ||
	fail "$samples samples for $cpu s of CPU at $freq Hz ($expected expected): samples lost"
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
