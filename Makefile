# Thin wrapper around CMake/CTest.  Build trees: build/ (normal), build-asan/
# (AddressSanitizer + UBSan), build-tsan/ (ThreadSanitizer).
BUILD    ?= build
PREFIX   ?= /usr/local
JOBS     ?= $(shell nproc)
CMAKE    ?= cmake
CC       ?= cc
CTESTARGS ?=
BENCHARGS ?= all --quick
# Debian's python3 has python3-matplotlib; a python3 earlier on PATH may not.
PYTHON   ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
# MODULES="notify;ipc" builds only those modules (and core).
MODULES  ?=
CMAKEDEFS = $(if $(MODULES),-DBYPASS_MODULES="$(MODULES)")


.PHONY: deps all configure check soak check-kernel bench bench-full bench-64mib bench-docs install deb asan asan-check tsan tsan-check clang clean report doctor realworld realworld-full

all: $(BUILD)/CMakeCache.txt
	$(CMAKE) --build $(BUILD) -j $(JOBS)

deps:
	tools/deps.sh

$(BUILD)/CMakeCache.txt:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_C_COMPILER=$(CC) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKEDEFS)

check: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE soak $(CTESTARGS)

# The long runs: tests labelled "soak" (millions of calls, faults,
# allocations per test; minutes each), left out of `make check`.  Under the
# sanitizers: make soak BUILD=build-asan (after make asan) or
# BUILD=build-tsan.
soak: all
	cd $(BUILD) && ctest --output-on-failure -L soak $(CTESTARGS)

# The tests inside a VM on another kernel (default: Debian 12's Linux 6.1)
# under QEMU; KERNEL=<package or vmlinuz>, ACCEL=kvm|tcg|auto,
# KTESTS=kernel|all (the "kernel" label, tests/kernel.list, or everything).
# See tools/check-kernel.sh and docs/kernels.md.
KERNEL ?=
ACCEL  ?= auto
KTESTS ?= kernel
check-kernel: all
	KERNEL='$(KERNEL)' ACCEL='$(ACCEL)' KTESTS='$(KTESTS)' CTESTARGS='$(CTESTARGS)' \
	  tools/check-kernel.sh $(BUILD)

# Redis's own test suite (the source of Debian's package, fetched once into
# $(BUILD)/realworld/), plain and with every server under the batch preload
# and the pager preload, failing on any test that ends differently
# (tools/realworld/redis.sh --help; docs/batch.md, "Tested against").
# realworld: the CI subset; realworld-full: the whole suite.
REALWORLDARGS ?=
realworld: all
	tools/realworld/redis.sh --build $(BUILD) --preload "batch pager" $(REALWORLDARGS)

realworld-full: all
	tools/realworld/redis.sh --full --build $(BUILD) --preload "batch pager" $(REALWORLDARGS)

# The quick suite: every experiment, baselines beside bypass, one table,
# within 300 s on 2 CPUs (bench/bench.h states each module's share).  The
# report is rendered even when an experiment failed; the exit status is
# bypass-bench's (1: a failure).
BENCHJSON ?= results/bench.json
bench: all
	mkdir -p $(dir $(BENCHJSON))
	status=0; $(BUILD)/bench/bypass-bench $(BENCHARGS) --json $(BENCHJSON) || status=$$?; \
	  $(PYTHON) tools/report.py $(BENCHJSON) --out $(dir $(BENCHJSON)) || status=1; \
	  exit $$status

# The full suite: the source documents' sizes (what docs/BENCHMARKS.md
# publishes), then issue 35's rows at a 64 MiB budget (bench-64mib).
bench-full:
	status=0; $(MAKE) bench BENCHARGS="all --full" BENCHJSON=results/bench-full.json || \
	  status=$$?; $(MAKE) bench-64mib || status=1; exit $$status

# Issue 35's rows at a 64 MiB budget (docs/BENCHMARKS.md: "the same
# programs at a 64 MiB budget"): Python and SQLite under the preload, with
# and without its compressed tier, against Linux's swap file, zram and
# zswap at the same memory, 5 rounds: results/pager-64mib.json (about 4x
# the 16 MiB rows' time: ~10-15 min on 2 CPUs).
bench-64mib: all
	$(MAKE) bench BENCHARGS="pager --quick --param only=unmodified --param programs=python,sqlite --param budget_mib=64" \
	  BENCHJSON=results/pager-64mib.json

# docs/BENCHMARKS.md from a run's JSON (the quiet full suite's by default):
# the JSON goes to docs/results/, the page and its charts are rendered from
# docs/BENCHMARKS.in.md, and README's "Where the targets stand" from the
# same JSON.  BENCHDOCS_MORE: more JSON files (other runs, another
# machine), copied there too; the first file that has an experiment gives
# its table.
BENCHDOCS_JSON ?= results/bench-full.json
BENCHDOCS_MORE ?=
bench-docs:
	cp $(BENCHDOCS_JSON) $(BENCHDOCS_MORE) docs/results/
	$(PYTHON) tools/report.py --template docs/BENCHMARKS.in.md \
	  $(addprefix docs/results/,$(notdir $(BENCHDOCS_JSON) $(BENCHDOCS_MORE))) \
	  --md docs/BENCHMARKS.md --out docs/img --chart-prefix img/
	$(PYTHON) tools/report.py --readme README.md \
	  $(addprefix docs/results/,$(notdir $(BENCHDOCS_JSON) $(BENCHDOCS_MORE)))

# What this kernel and CPU offer each module (bypass doctor, see bypass(1)).
doctor: all
	$(BUILD)/bypass doctor

install: all
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

# The Debian packages libbypass0, libbypass-dev and bypass-tools, built by
# dpkg-buildpackage from debian/ in a copy of the tree and checked by
# lintian: $(DEBDIR)/*.deb (tools/deb.sh, docs/packaging.md).
DEBDIR ?= build-deb
deb:
	tools/deb.sh $(DEBDIR)

asan:
	$(CMAKE) -S . -B $(ASAN_BUILD) -DBYPASS_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKEDEFS)
	$(CMAKE) --build $(ASAN_BUILD) -j $(JOBS)

asan-check: asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) -LE soak $(CTESTARGS)

tsan:
	$(CMAKE) -S . -B $(TSAN_BUILD) -DBYPASS_TSAN=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKEDEFS)
	$(CMAKE) --build $(TSAN_BUILD) -j $(JOBS)

# ThreadSanitizer runs where threads meet: tests labelled "threads".
tsan-check: tsan
	cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest --output-on-failure -j $(JOBS) -L threads -LE soak $(CTESTARGS)

clang:
	$(MAKE) BUILD=build-clang CC=clang all

clean:
	rm -rf build build-asan build-tsan build-clang build-deb
