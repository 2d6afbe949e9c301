# nunatak — one entry point: deps, build, test, fuzz, demo, install, vmlinux.
#
#   make demo    install what is missing, build, profile the bundled demo
#   make test    install what is missing, build (plain, ASan/UBSan and the
#                fuzz targets), run every unit test, each fuzz target
#                briefly, and every integration test
#   make fuzz    each fuzz target FUZZ_SECONDS (60), one after the other
#
# Objects go to $(BUILD) (build/, or build-asan/ for the sanitizer variant).
# Every .c under userspace/ (but cli/), analysis/ and report/ lands in
# libnunatak.a; tests/unit/test_X.c links against it, so adding a module or
# a test needs no edit here.
#
# Fuzzing: tests/fuzz/fuzz_X.c is a libFuzzer target, built with clang under
# ASan/UBSan in $(FUZZ_BUILD) (the library too, with coverage) and started
# from tests/fuzz/corpus/X/. `make test` runs each one FUZZ_TEST_SECONDS;
# `make fuzz FUZZ_SECONDS=N` runs each N seconds and prints its executions
# (FUZZ_RUNS=N stops a target earlier, after N executions).

BUILD ?= build
SAN ?=
CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
READELF ?= readelf
PROTOC_C ?= protoc-c
PREFIX ?= /usr/local

ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

# Debian 12 packages the build, the tests and the demo need.
DEB_PACKAGES := clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev \
	libzmq3-dev libprotobuf-c-dev protobuf-c-compiler libsqlite3-dev \
	golang-github-google-pprof-dev protobuf-compiler \
	libjansson-dev libcmocka-dev pkg-config linux-perf hyperfine sqlite3 \
	libclang-rt-14-dev openmpi-bin libopenmpi-dev mpich libmpich-dev gfortran g++ util-linux procps python3 \
	systemd python3-zmq iproute2 passwd \
	libslurm-dev libmunge-dev munge nettle-dev slurmctld slurmd slurm-client slurm-wlm-basic-plugins libpmix-dev chromium nodejs

CFLAGS := -std=gnu11 -g -O2 -Wall -Wextra -Werror -Wno-format-truncation -D_GNU_SOURCE \
	-I. -I$(BUILD) -MMD -MP
LDLIBS := -lbpf -ldw -lelf -lz -lnettle -lzmq -lprotobuf-c -lsqlite3 -ljansson -lslurm -lmunge -lpthread -lstdc++ -lm
ifneq ($(SAN),)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif
# FUZZER=1: clang, coverage for libFuzzer, ASan/UBSan (set by `make fuzz`)
FUZZER ?=
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?= -1
FUZZ_TEST_SECONDS ?= 8
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
# (-Werror is the gcc build's gate: a warning only clang has stays a warning)
ifneq ($(FUZZER),)
CC := $(CLANG)
CFLAGS := $(filter-out -Werror,$(CFLAGS)) -fsanitize=fuzzer-no-link $(FUZZ_SAN) \
	-Wno-unknown-warning-option
endif

BPF_CFLAGS := -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(ARCH) \
	-I. -Ivmlinux

LIB_SRCS := $(filter-out userspace/cli/% userspace/daemon/%,$(wildcard userspace/*/*.c analysis/*.c report/*.c))
CLI_SRCS := $(wildcard userspace/cli/*.c)
# userspace/daemon/X.c: the main() of the service binary X (nunatakd, nunatak-aggregator)
DAEMON_SRCS := $(wildcard userspace/daemon/*.c)
BPF_SRCS := $(wildcard bpf/*.bpf.c)
SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.skel.h,$(BPF_SRCS))
# the names of every program and sub-program of bpf/ (own_code.c)
OWN_PROGRAMS := $(BUILD)/bpf/own_programs.h
PROTO := userspace/wire/nunatak.proto
PROTO_C := $(BUILD)/userspace/wire/nunatak.pb-c.c
# pprof's profile.proto, as Debian ships it (golang-github-google-pprof-dev):
# `nunatak export --format pprof` writes it (report/export_pprof.c)
PPROF_PROTO_DIR ?= /usr/share/gocode/src/github.com/google/pprof/proto
PPROF_PROTO_C := $(BUILD)/report/pprof/profile.pb-c.c
GENERATED := $(SKELS) $(OWN_PROGRAMS) $(PROTO_C) $(PPROF_PROTO_C)

LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(BUILD)/obj/wire/nunatak.pb-c.o \
	$(BUILD)/obj/report/pprof/profile.pb-c.o $(BUILD)/obj/report_app_assets.o
CLI_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRCS))
LIB := $(BUILD)/libnunatak.a
NUNATAK := $(BUILD)/nunatak
DAEMONS := $(patsubst userspace/daemon/%.c,$(BUILD)/%,$(DAEMON_SRCS))

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
WORKLOADS := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%,$(WORKLOAD_SRCS))
# MPI workloads, one build per MPI family (never sanitized)
MPI_W := -O2 -g -fno-omit-frame-pointer
MPI_WORKLOADS := $(foreach f,openmpi mpich,$(BUILD)/workloads/mpi/pattern.$(f) $(BUILD)/workloads/mpi/pattern_f.$(f) \
	$(BUILD)/workloads/mpi/sites_f.$(f) $(BUILD)/workloads/mpi/busy_send.$(f) $(BUILD)/workloads/mpi/mpi_loop.$(f) \
	$(BUILD)/workloads/mpi/budget.$(f))

.SECONDARY:

.PHONY: all deps build unit-bins fuzz-bins fuzz test test-unit test-integration test-fuzz \
	demo install vmlinux bench clean

all: build

build: $(NUNATAK) $(DAEMONS) $(WORKLOADS) $(MPI_WORKLOADS)

# Installs only what is missing, so a second `make test` costs nothing.
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		if [ "$$(id -u)" != 0 ]; then echo "error: missing packages and not root; run: sudo apt-get install $$missing" >&2; exit 1; fi; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) vmlinux/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst .bpf.o,,$(notdir $<))_bpf > $@.tmp && mv $@.tmp $@

# every function symbol of the BPF objects, as the kernel names them in
# kallsyms (a program by its function's name, a sub-program by its own)
$(OWN_PROGRAMS): $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.bpf.o,$(BPF_SRCS))
	@for o in $^; do $(READELF) -sW $$o || exit 1; done > $@.syms
	@{ printf '/* generated from the functions of the objects of bpf/ by the Makefile: never edit */\n'; \
	printf '#define OWN_PROGRAM_NAMES'; \
	awk '$$4 == "FUNC" { print $$8 }' $@.syms | LC_ALL=C sort -u | \
		while read -r f; do printf ' "%s",' "$$f"; done; \
	printf '\n'; } > $@.tmp && rm $@.syms && mv $@.tmp $@

$(PROTO_C): $(PROTO)
	@mkdir -p $(@D)
	$(PROTOC_C) --c_out=$(BUILD) $<

$(BUILD)/obj/wire/nunatak.pb-c.o: $(PROTO_C)
	@mkdir -p $(@D)
	$(CC) $(filter-out -Werror,$(CFLAGS)) -c $< -o $@

$(PPROF_PROTO_C): $(PPROF_PROTO_DIR)/profile.proto
	@mkdir -p $(@D)
	$(PROTOC_C) --proto_path=$(PPROF_PROTO_DIR) --c_out=$(@D) $<

$(BUILD)/obj/report/pprof/profile.pb-c.o: $(PPROF_PROTO_C)
	@mkdir -p $(@D)
	$(CC) $(filter-out -Werror,$(CFLAGS)) -c $< -o $@

# version.h changes only when the commit or the tree's state does; made
# when make reads this file (.SECONDARY keeps a FORCE prerequisite from
# remaking anything: the rule below alone left it at its first commit)
HASH := \#
$(shell mkdir -p $(BUILD) && c=$$(git rev-parse HEAD 2>/dev/null || echo unknown); \
	d=$$(git status --porcelain 2>/dev/null | grep -q . && echo 1 || echo 0); \
	printf '$(HASH)define NUNATAK_COMMIT "%s"\n$(HASH)define NUNATAK_DIRTY %s\n' "$$c" "$$d" \
		> $(BUILD)/version.h.tmp; \
	cmp -s $(BUILD)/version.h.tmp $(BUILD)/version.h && rm $(BUILD)/version.h.tmp || \
		mv $(BUILD)/version.h.tmp $(BUILD)/version.h)
$(BUILD)/version.h: FORCE

FORCE:

$(BUILD)/obj/userspace/cli/provenance.o $(BUILD)/obj/userspace/aggregator/provenance.o \
	$(BUILD)/obj/report/payload.o: $(BUILD)/version.h

# the calibration kernels, embedded with .incbin (the compiler's -MMD does not list them)
$(BUILD)/obj/userspace/calibration/kernel_sources.o: $(wildcard userspace/calibration/kernels/*)

# report/app/* (the report page: page.html, *.css, *.js) embedded with
# .incbin into the table of report/report_assets.h, generated into $(BUILD)
# from the directory's list (re-read at each make: a new file needs no
# edit here); the object depends on the files the assembler reads
REPORT_APP := $(sort $(wildcard report/app/*))

# (rewritten when make reads this file and the list changed: .SECONDARY
# keeps a FORCE prerequisite from remaking anything)
$(shell mkdir -p $(BUILD) && printf '%s\n' $(REPORT_APP) | cmp -s - $(BUILD)/report_app.list || \
	printf '%s\n' $(REPORT_APP) > $(BUILD)/report_app.list)

$(BUILD)/report_app_assets.c: $(BUILD)/report_app.list
	@mkdir -p $(@D)
	@{ printf '/* generated from report/app/ by the Makefile: never edit */\n'; \
	printf '#include <stddef.h>\n#include "report/report_assets.h"\n'; i=0; \
	for f in $(REPORT_APP); do \
		printf '__asm__(".section .rodata\\n.global nk_asset_%d\\n.global nk_asset_%d_end\\n.balign 16\\nnk_asset_%d:\\n.incbin \\"%s\\"\\nnk_asset_%d_end:\\n.byte 0\\n.previous\\n");\n' $$i $$i $$i "$(CURDIR)/$$f" $$i; \
		printf 'extern const unsigned char nk_asset_%d[], nk_asset_%d_end[];\n' $$i $$i; \
		i=$$((i + 1)); \
	done; \
	printf 'const struct report_asset report_assets[] = {\n'; i=0; \
	for f in $(REPORT_APP); do \
		printf '\t{"%s", nk_asset_%d, nk_asset_%d_end},\n' "$${f##*/}" $$i $$i; i=$$((i + 1)); \
	done; \
	printf '\t{NULL, NULL, NULL},\n};\nconst size_t report_n_assets = %d;\n' $$i; } > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/report_app_assets.o: $(BUILD)/report_app_assets.c $(REPORT_APP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.c | $(GENERATED)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(NUNATAK): $(CLI_OBJS) $(LIB)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJS) $(LIB) $(LDLIBS)

$(DAEMONS): $(BUILD)/%: $(BUILD)/obj/userspace/daemon/%.o $(LIB)
	$(CC) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(LIB) | $(GENERATED)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB) $(LDLIBS) -lcmocka

# Workloads are what users profile: -O2 -g, frame pointers kept, never sanitized.
$(BUILD)/workloads/%: tests/workloads/%.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -o $@ $< -lpthread

# components without .symtab: its Components found by their .dynsym names
$(BUILD)/workloads/components-stripped: tests/workloads/components.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -fno-omit-frame-pointer -rdynamic -Wall -Wextra -Werror -o $@ $< -lpthread
	strip --strip-all $@
build: $(BUILD)/workloads/components-stripped
# the empty uprobe pair tests/integration/mpi_probe_cost.sh measures the probe cost against
build: $(BUILD)/bench/bare-uprobe

# the unwind workloads: chains in C, C++, Fortran without frame pointers, ...
include tests/workloads/unwind/unwind.mk

# The SPANK plugin of deploy/slurm (--nunatak[=FREQ] for sbatch, srun and
# salloc): loaded by Slurm's own programs, so -shared -fPIC, no -lslurm (they
# provide the spank_* symbols), built against this machine's Slurm headers
# (/usr/include/slurm/spank.h of libslurm-dev: its plugin_version must be
# the running Slurm's), never sanitized.
SPANK_PLUGIN := $(BUILD)/spank_nunatak.so
SPANK_SRCS := deploy/slurm/spank_nunatak.c deploy/slurm/spank_option.c
build: $(SPANK_PLUGIN)

$(SPANK_PLUGIN): $(SPANK_SRCS) deploy/slurm/spank_option.h
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -I. -shared -fPIC -o $@ $(SPANK_SRCS)

# its option parsing, unit-tested alone (it is not part of libnunatak.a)
$(BUILD)/tests/test_spank_option: tests/unit/test_spank_option.c deploy/slurm/spank_option.c deploy/slurm/spank_option.h
	@mkdir -p $(@D)
	$(CC) $(filter-out -MMD -MP,$(CFLAGS)) $(LDFLAGS) -o $@ $< deploy/slurm/spank_option.c -lcmocka

# benchmark tools: the bare sampling interrupt, the bare uprobe, an MPI loop
$(BUILD)/bench/bare-interrupt: tests/bench/bare_interrupt.c | $(GENERATED)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< -lbpf -lelf -lz

$(BUILD)/bench/bare-uprobe: tests/bench/bare_uprobe.c | $(GENERATED)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< -lbpf -lelf -lz

# compile time and size of unwind tables (userspace/unwind/) for the files named
$(BUILD)/bench/unwind-tables: tests/bench/unwind_tables.c $(LIB) | $(GENERATED)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# what the sampling group costs the sampling program (verifier, per sample)
$(BUILD)/bench/sample-group: tests/bench/sample_group.c $(LIB) | $(GENERATED)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# the big synthetic Run of tests/bench/report_size.sh, built through the pivot API
$(BUILD)/bench/report-pivot: tests/bench/report_pivot.c $(LIB) | $(GENERATED)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDLIBS)

# the Component of tests/bench/component_probe.sh: a loop of calls of an empty function
$(BUILD)/bench/component-loop: tests/bench/component_loop.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -o $@ $<

# the probes of tests/bench/fixed_cost.sh: a launcher, a start/exit clock, a CPU burner
$(BUILD)/bench/fixed-cost: tests/bench/fixed_cost.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -o $@ $<

$(BUILD)/bench/mpi_loop.%: tests/bench/mpi_loop.c
	@mkdir -p $(@D)
	mpicc.$* -O2 -g -Wall -Wextra -Werror -o $@ $<


# a C MPI workload, built per family
define mpi_c
	@mkdir -p $(@D)
	mpicc.$* -std=gnu11 $(MPI_W) -Wall -Wextra -Werror -o $@ $<
endef

$(BUILD)/workloads/mpi/pattern.%: tests/workloads/mpi/pattern.c
	$(mpi_c)

$(BUILD)/workloads/mpi/busy_send.%: tests/workloads/mpi/busy_send.c
	$(mpi_c)

# a Fortran MPI workload, its .mod files apart per family
define mpi_fortran
	@mkdir -p $(@D)/mod-$*
	mpif90.$* $(MPI_W) $(MPI_FFLAGS) -Wall -Werror -J $(@D)/mod-$* -o $@ $<
endef

$(BUILD)/workloads/mpi/mpi_loop.%: tests/workloads/mpi/mpi_loop.c
	$(mpi_c)

$(BUILD)/workloads/mpi/budget.%: tests/workloads/mpi/budget.c
	$(mpi_c)

$(BUILD)/workloads/mpi/pattern_f.%: tests/workloads/mpi/pattern_f.f90
	$(mpi_fortran)

# its subroutines are the call sites to find: frames of their own
$(BUILD)/workloads/mpi/sites_f.%: MPI_FFLAGS := -fno-inline
$(BUILD)/workloads/mpi/sites_f.%: tests/workloads/mpi/sites_f.f90
	$(mpi_fortran)

unit-bins: $(UNIT_BINS)

$(BUILD)/fuzz/%: tests/fuzz/%.c $(LIB) | $(GENERATED)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $< $(LIB) $(LDLIBS)

fuzz-bins: $(FUZZ_BINS)

test: deps
	$(MAKE) build
	$(MAKE) BUILD=build-asan SAN=1 unit-bins
	$(MAKE) BUILD=$(FUZZ_BUILD) FUZZER=1 fuzz-bins
	tests/run.sh --unit build-asan/tests --fuzz $(FUZZ_BUILD)/fuzz --fuzz-seconds $(FUZZ_TEST_SECONDS) --integration tests/integration --nunatak $(abspath $(NUNATAK)) --workloads $(abspath $(BUILD)/workloads)

test-unit: deps
	$(MAKE) BUILD=build-asan SAN=1 unit-bins
	tests/run.sh --unit build-asan/tests

test-fuzz: deps
	$(MAKE) BUILD=$(FUZZ_BUILD) FUZZER=1 fuzz-bins
	tests/run.sh --fuzz $(FUZZ_BUILD)/fuzz --fuzz-seconds $(FUZZ_TEST_SECONDS)

# each target FUZZ_SECONDS, one after the other; a crash stops it, its input kept
fuzz: deps
	$(MAKE) BUILD=$(FUZZ_BUILD) FUZZER=1 fuzz-bins
	tests/fuzz/run.sh --seconds $(FUZZ_SECONDS) --runs $(FUZZ_RUNS) $(FUZZ_BUILD)/fuzz

test-integration: deps
	$(MAKE) build $(addprefix $(BUILD)/tests/,test_agent_job test_munge_cred test_slurm_job test_aggregator_job)
	tests/run.sh --integration tests/integration --nunatak $(abspath $(NUNATAK)) --workloads $(abspath $(BUILD)/workloads)

demo: deps
	$(MAKE) build
	$(NUNATAK) run --name demo -- $(BUILD)/workloads/hotspots 3

BENCH_TOOLS := $(addprefix $(BUILD)/bench/,bare-interrupt bare-uprobe mpi_loop.openmpi mpi_loop.mpich llvm-load sample-group component-loop report-pivot fixed-cost)

bench: deps
	$(MAKE) build $(BENCH_TOOLS)
	tests/bench/overhead.sh $(abspath $(NUNATAK)) $(abspath $(BUILD)/bench) $(abspath $(BUILD)/workloads)
	tests/bench/mpi_call.sh $(abspath $(NUNATAK)) $(abspath $(BUILD)/bench) $(abspath $(BUILD)/workloads)
	tests/bench/mpi_latency.sh $(abspath $(NUNATAK)) $(abspath $(BUILD)/bench) $(abspath $(BUILD)/workloads)
	tests/bench/service.sh $(abspath $(NUNATAK)) $(abspath $(BUILD)/workloads)
	tests/bench/fixed_cost.sh $(abspath $(NUNATAK)) $(abspath $(BUILD)/bench)
	tests/bench/unwind.sh $(abspath $(NUNATAK)) $(abspath $(BUILD)/bench) $(abspath $(BUILD)/workloads)
	$(BUILD)/bench/sample-group 3 3
	tests/bench/component_probe.sh $(abspath $(NUNATAK)) $(abspath $(BUILD)/bench)
	tests/bench/report_size.sh $(abspath $(NUNATAK)) $(abspath $(BUILD)/bench)
	tests/bench/slurm.sh $(abspath $(NUNATAK)) $(abspath $(BUILD)/workloads) || [ $$? = 77 ]

# The binaries of $(BUILD) (nunatak and the daemons of userspace/daemon/),
# the systemd units of deploy/systemd with their paths under $(PREFIX), the
# tmpfiles.d entry of the spool, the example site configuration and the
# deployment notes. `make -o build install` installs an already built tree
# without looking at its sources again.
UNITDIR ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
DOCDIR ?= $(PREFIX)/share/doc/nunatak

install: build
	install -d -m 0755 $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR) $(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(DOCDIR)
	install -m 0755 $(NUNATAK) $(DAEMONS) $(DESTDIR)$(PREFIX)/bin/
	for u in deploy/systemd/*.service; do \
		sed -e 's|/usr/local/bin/|$(PREFIX)/bin/|g' -e 's|/usr/local/share/doc/nunatak/|$(DOCDIR)/|g' \
			"$$u" > "$(DESTDIR)$(UNITDIR)/$${u##*/}.tmp" && \
		chmod 0644 "$(DESTDIR)$(UNITDIR)/$${u##*/}.tmp" && \
		mv "$(DESTDIR)$(UNITDIR)/$${u##*/}.tmp" "$(DESTDIR)$(UNITDIR)/$${u##*/}" || exit 1; \
	done
	install -m 0644 deploy/tmpfiles/nunatak.conf $(DESTDIR)$(TMPFILESDIR)/nunatak.conf
	install -m 0644 deploy/nunatak.toml.example $(DESTDIR)$(DOCDIR)/nunatak.toml.example
	install -m 0644 deploy/README.md $(DESTDIR)$(DOCDIR)/README.deploy.md

# deploy/slurm: the SPANK plugin, the Prolog and Epilog (naming
# $(PREFIX)/bin/nunatak), the slurm.conf lines and the notes
SLURM_LIBDIR ?= $(PREFIX)/lib/nunatak/slurm
.PHONY: install-slurm
install: install-slurm
install-slurm: $(SPANK_PLUGIN)
	install -d -m 0755 $(DESTDIR)$(SLURM_LIBDIR) $(DESTDIR)$(DOCDIR)
	install -m 0755 $(SPANK_PLUGIN) $(DESTDIR)$(SLURM_LIBDIR)/spank_nunatak.so
	for s in prolog epilog; do \
		sed -e 's|^NUNATAK=/usr/local/bin/nunatak$$|NUNATAK=$(PREFIX)/bin/nunatak|' \
			deploy/slurm/$$s > "$(DESTDIR)$(SLURM_LIBDIR)/$$s.tmp" && \
		chmod 0755 "$(DESTDIR)$(SLURM_LIBDIR)/$$s.tmp" && \
		mv "$(DESTDIR)$(SLURM_LIBDIR)/$$s.tmp" "$(DESTDIR)$(SLURM_LIBDIR)/$$s" || exit 1; \
	done
	sed -e 's|/usr/local/lib/nunatak/slurm/|$(SLURM_LIBDIR)/|g' deploy/slurm/slurm.conf.example \
		> "$(DESTDIR)$(DOCDIR)/slurm.conf.example.tmp" && \
		chmod 0644 "$(DESTDIR)$(DOCDIR)/slurm.conf.example.tmp" && \
		mv "$(DESTDIR)$(DOCDIR)/slurm.conf.example.tmp" "$(DESTDIR)$(DOCDIR)/slurm.conf.example"
	install -m 0644 deploy/slurm/README.md $(DESTDIR)$(DOCDIR)/README.slurm.md

vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/vmlinux.h.tmp
	mv vmlinux/vmlinux.h.tmp vmlinux/vmlinux.h

clean:
	rm -rf build build-asan $(FUZZ_BUILD)

-include $(shell find $(BUILD)/obj $(BUILD)/tests $(BUILD)/fuzz -name '*.d' 2>/dev/null)
