# Kernel frames: a workload whose time is the kernel's (fresh memory
# faulted in by touch_pages <- fault_round <- main, one store per page,
# then unmapped: the kernel's share is far above the 0.5 checked, see
# pagefault.c). The Run has Hotspots of module [kernel] named after kernel
# functions; the summary's kernel_share is theirs and user + kernel shares
# add up to 1; in the folded export most samples hold touch_pages with
# kernel frames above it, and the samples whose leaf is a kernel Hotspot
# hold their user caller (fault_round); the export sums to the samples.
. "$TESTS_LIB/common.sh"
. "$TESTS_LIB/unwind.sh"
need_root_bpf

unwind_run pagefault -- "$UW/pagefault"
summary_check pagefault kernel --min-kernel-share 0.5 || exit 1
summary_check pagefault kernel-names >"$T/kernel-names" || exit 1
unwind_export pagefault
unwind_check_sum pagefault
folded "$T/pagefault.folded" above --names "$T/kernel-names" --user touch_pages --min-share 0.5 || exit 1
folded "$T/pagefault.folded" leaf-with --names "$T/kernel-names" --with fault_round --min-share 0.9 || exit 1
folded "$T/pagefault.folded" has --what "touch_pages under fault_round under main" \
	--frame touch_pages --with fault_round --with main --min-samples 300 || exit 1
