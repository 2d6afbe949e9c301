# The C++ chain main -> chainxx::Chain::a -> chainlib::b ->
# chainlib::Burner::c (b and c in libchain_cxx.so), built -O2
# -fomit-frame-pointer (chain_cxx) and with frame pointers (chain_cxx-fp),
# run by main and a std::thread (chainxx::thread_main): >= 99 % of the
# samples in Burner::c carry the complete chain up to main or
# chainxx::thread_main, with the names as llvm-symbolizer demangles them
# (parameter lists allowed); the SIGPROF handler's chain unwinds through
# the signal frame; the folded export sums to the Run's samples.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/unwind.sh"
need_root_bpf

for w in chain_cxx chain_cxx-fp; do
	unwind_run "$w" -- "$UW/$w"
	unwind_export "$w"
	unwind_check_sum "$w"
	folded "$T/$w.folded" chain --what "$w: Burner::c" \
		--chain 'chainxx::Chain::a,chainlib::b,chainlib::Burner::c' \
		--caller main --caller 'chainxx::thread_main' --min-samples 500 || exit 1
	folded "$T/$w.folded" has --what "$w: Burner::c under thread_main" \
		--frame 'chainlib::Burner::c' --with 'chainxx::thread_main' --min-samples 200 || exit 1
	folded "$T/$w.folded" chain --what "$w: signal handler" \
		--chain 'chainxx::on_profile_signal,chainlib::sig_b,chainlib::Burner::sig_c' \
		--via main --via 'chainxx::thread_main' --min-samples 30 || exit 1
done
