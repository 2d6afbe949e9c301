# Honest stack accounting: a thread descends recursions of depth 1 to 60
# (2 frames a level: up to 126 frames, within the 127 issue 9 promises:
# none truncated) through 4 mutually recursive functions, sampled at
# 2999 Hz for ~5 s: over ten thousand distinct stacks, 3 000 samples a
# second (997 Hz on 3 CPUs). One thread, so that the Agent and the
# Aggregator have a core of this 2-core machine: storing a new stack frame
# costs them 2-4 us, and 10 000 new 60-frame stacks a second with both
# cores taken by the application outrun them (see README). No "stacks-dropped"/
# "map full" Degradation, no sample lost on its way to the Run (the
# samples match the process' CPU time, nothing "not stored"); the folded
# export sums to the Run's samples; >= 99 % of the samples at the bottom
# carry their complete stack up to main or the thread's start; a truncated
# stack, if any, is counted in a Degradation.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/unwind.sh"
need_root_bpf
freq=2999

unwind_run recursion -F "$freq" -- "$UW/recursion" 700 1
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
# every truncated stack is counted under the cause that ended it (a
# stacks-truncated Degradation above 1 % of the samples)
if [ "$truncated" -gt 0 ]; then
	counted=$(sql "$run" "select coalesce(sum(value), 0) from counters where name like 'stacks_ended_%'")
	[ "${counted:-0}" -ge "$truncated" ] ||
		fail "$truncated samples have a truncated stack, $counted counted by cause"
	echo "truncated: $truncated samples, $counted counted by cause"
fi
folded "$T/recursion.folded" chain --what "recursion: bottom" --chain 'rec[0-3],bottom' \
	--via main --via worker --min-samples 1000 || exit 1
