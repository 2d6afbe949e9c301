# The C chain main -> chain_a -> chain_b -> chain_c (b and c in
# libchain.so), built -O2 -fomit-frame-pointer (chain) and with frame
# pointers (chain-fp), run by main and a second thread: >= 99 % of the
# samples in chain_c carry the complete chain up to main or the thread's
# start function chain_thread (root first in the folded export, not
# truncated); the SIGPROF handler's chain (chain_handler -> chain_sig_b ->
# chain_sig_c) unwinds through the signal frame into main or chain_thread;
# the folded export sums to the Run's samples.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/unwind.sh"
need_root_bpf

for w in chain chain-fp; do
	unwind_run "$w" -- "$UW/$w"
	unwind_export "$w"
	unwind_check_sum "$w"
	folded "$T/$w.folded" chain --what "$w: chain_c" --chain chain_a,chain_b,chain_c \
		--caller main --caller chain_thread --min-samples 500 || exit 1
	folded "$T/$w.folded" has --what "$w: chain_c under chain_thread" --frame chain_c \
		--with chain_thread --min-samples 200 || exit 1
	folded "$T/$w.folded" has --what "$w: chain_c under main" --frame chain_c \
		--with main --min-samples 200 || exit 1
	folded "$T/$w.folded" chain --what "$w: signal handler" \
		--chain chain_handler,chain_sig_b,chain_sig_c --via main --via chain_thread \
		--min-samples 30 || exit 1
done
