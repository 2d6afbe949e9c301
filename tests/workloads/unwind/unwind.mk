# unwind.mk — the workloads of the unwind tests and benchmark (issue 9),
# included by the Makefile: build/workloads/unwind/...
#
#   chain, chain_cxx, chain_f   the known chain main -> a -> b -> c in C, C++
#                               and Fortran, a and main in the executable, b
#                               and c in a shared library found next to it
#                               ($ORIGIN), -O2 -fomit-frame-pointer
#   chain-fp, chain_cxx-fp,     the same with frame pointers, leaf functions
#   chain_f-fp                  asked too (-mno-omit-leaf-frame-pointer);
#                               gcc 12 still sets up no frame in a leaf that
#                               needs no stack (chain_c), so a frame-pointer
#                               walk loses chain_b (perf --call-graph fp
#                               does): unwinding must take that frame from
#                               the tables
#   pagefault                   kernel time: fresh memory faulted in, one
#                               store per page, for 1.5 s of CPU time
#   stripped, stripped.debug    4 hot functions, `strip --strip-all`ed (and
#                               the unstripped twin, to name the extents)
#   recursion                   tens of thousands of distinct stacks
#   openmp                      2 OpenMP threads, its own getrusage printed
#
# Like every workload: -g, never sanitized.
UW_SRC := tests/workloads/unwind
UW := $(BUILD)/workloads/unwind
UW_CXX ?= g++
UW_FC ?= gfortran
UW_NOFP := -O2 -g -fomit-frame-pointer
UW_FP := -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
UW_WARN := -Wall -Wextra -Werror
UW_RPATH := -Wl,-rpath,'$$ORIGIN'
UNWIND_WORKLOADS := $(addprefix $(UW)/,chain chain-fp chain_cxx chain_cxx-fp chain_f chain_f-fp \
	pagefault stripped stripped.debug recursion openmp)

build: $(UNWIND_WORKLOADS)

# -fp: the frame-pointer twin of each chain (binary and library)
uw_flags = $(if $*,$(UW_FP),$(UW_NOFP))

$(UW)/libchain.so $(UW)/libchain-fp.so: $(UW)/libchain%.so: $(UW_SRC)/libchain.c $(UW_SRC)/chain.h
	@mkdir -p $(@D)
	$(CC) $(uw_flags) $(UW_WARN) -fPIC -shared -o $@ $<

$(UW)/chain $(UW)/chain-fp: $(UW)/chain%: $(UW_SRC)/chain.c $(UW_SRC)/chain.h $(UW)/libchain%.so
	$(CC) $(uw_flags) $(UW_WARN) -o $@ $< -L$(UW) -lchain$* $(UW_RPATH) -lpthread

$(UW)/libchain_cxx.so $(UW)/libchain_cxx-fp.so: $(UW)/libchain_cxx%.so: $(UW_SRC)/libchain_cxx.cpp $(UW_SRC)/chain_lib.hpp
	@mkdir -p $(@D)
	$(UW_CXX) $(uw_flags) $(UW_WARN) -fPIC -shared -o $@ $<

$(UW)/chain_cxx $(UW)/chain_cxx-fp: $(UW)/chain_cxx%: $(UW_SRC)/chain_cxx.cpp $(UW_SRC)/chain_lib.hpp $(UW)/libchain_cxx%.so
	$(UW_CXX) $(uw_flags) $(UW_WARN) -o $@ $< -L$(UW) -lchain_cxx$* $(UW_RPATH) -lpthread

# each variant its own module directory; the program built -fno-inline
# (gfortran 12 has no noinline attribute: chain_a stays a frame)
$(UW)/libchain_f.so $(UW)/libchain_f-fp.so: $(UW)/libchain_f%.so: $(UW_SRC)/libchain_f.f90
	@mkdir -p $(UW)/mod$*
	$(UW_FC) $(uw_flags) -Wall -Werror -J $(UW)/mod$* -fPIC -shared -o $@ $<

$(UW)/chain_f $(UW)/chain_f-fp: $(UW)/chain_f%: $(UW_SRC)/chain_f.f90 $(UW)/libchain_f%.so
	$(UW_FC) $(uw_flags) -fno-inline -fopenmp -Wall -Werror -J $(UW)/mod$* -o $@ $< \
		-L$(UW) -lchain_f$* $(UW_RPATH)

$(UW)/pagefault $(UW)/recursion: $(UW)/%: $(UW_SRC)/%.c
	@mkdir -p $(@D)
	$(CC) $(UW_NOFP) $(UW_WARN) -o $@ $< -lpthread

$(UW)/stripped.debug: $(UW_SRC)/stripped.c
	@mkdir -p $(@D)
	$(CC) $(UW_NOFP) $(UW_WARN) -o $@ $<

$(UW)/stripped: $(UW)/stripped.debug
	strip --strip-all -o $@ $<

$(UW)/openmp: $(UW_SRC)/openmp.c
	@mkdir -p $(@D)
	$(CC) $(UW_NOFP) -fopenmp $(UW_WARN) -o $@ $<

# the unwind benchmark's large-library process (tests/bench/unwind.sh)
$(BUILD)/bench/llvm-load: tests/bench/llvm_load.c
	@mkdir -p $(@D)
	$(CC) $(UW_NOFP) $(UW_WARN) -o $@ $< -ldl
