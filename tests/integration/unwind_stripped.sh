# Unnamed functions by their extent: 4 hot functions doing 4:3:2:1 of the
# work in an executable `strip --strip-all`ed. Exactly 4 Hotspots of the
# module hold the samples, each `stripped+0xSTART` (unresolved) where START
# is one function's start (read from the unstripped twin), with its share
# within 5 points; no more than a handful of Hotspots in the module in all
# (never one per sampled instruction); the folded export sums to the Run's
# samples.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/unwind.sh"
need_root_bpf

unwind_run stripped -- "$UW/stripped"
summary_check stripped extents --module stripped --debug "$UW/stripped.debug" \
	--expect hot4=0.4 --expect hot3=0.3 --expect hot2=0.2 --expect hot1=0.1 || exit 1
unwind_export stripped
unwind_check_sum stripped
