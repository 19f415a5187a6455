# The two commands of the README: `make run` and `make test`. Each does all the set-up: `run`
# installs only what the program needs, `test` the tools of every test too (scripts/setup.sh).
# `make install` and `make deb` (docs/install.md) put the program where Debian puts programs.
BUILD ?= build
JOBS ?= $(shell nproc)
# Release and ASan build as unity builds (a few sources per compile: CLI11's, JSON's and
# GoogleTest's headers parsed a few times instead of once per file), which halves make test's
# compiling. A plain `cmake -S . -B dir` build compiles file by file, as does the TSan build, so
# a missing include still breaks a build (docs/hardening.md).
UNITY = -DCMAKE_UNITY_BUILD=ON
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=Release $(UNITY)

# Hardening (docs/hardening.md): clang builds of their own, each in its own directory.
#  build-asan: AddressSanitizer + UndefinedBehaviorSanitizer, with libFuzzer coverage, so one
#              build serves the in-process tests (asan) and the fuzz targets (fuzz).
#  build-tsan: ThreadSanitizer over the tests of the communicator and the engine.
# The MPI backend is left out of both: OpenMPI is not instrumented and is noisy under them.
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
# The planner's web page (docs/web.md): the site a static server serves, and its CMake tree
# beside it (WEB_BUILD.cmake).
WEB_BUILD ?= build-web
FUZZ_SECONDS ?= 10
HARDENING_FLAGS = -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" -DZERODP_MPI=OFF -DZERODP_BUILD_BENCH=OFF \
  -DZERODP_PYTHON=OFF
# Every in-process test folder, the planner's arithmetic (plan, deepspeed, report, catalog)
# included: not the layer probes (release only), nor MPI, the cluster, the web page or Python,
# which this build leaves out (docs/hardening.md).
ASAN_TEST_DIRS = "-DZERODP_TEST_DIRS=common;comm;zero;model;data;optim;checkpoint;run;predict;cli;export;plan;deepspeed;report;catalog"
ASAN_FLAGS = $(HARDENING_FLAGS) $(UNITY) -DZERODP_SANITIZE=address,undefined -DZERODP_FUZZ=ON \
  -DZERODP_FUZZ_SECONDS=$(FUZZ_SECONDS) $(ASAN_TEST_DIRS)
# TSan leaves oneDNN out: its OpenMP runtime (libgomp) is not instrumented, and TSan would
# report its threads' handoffs as races; products there run on OpenBLAS.
TSAN_FLAGS = $(HARDENING_FLAGS) -DZERODP_SANITIZE=thread -DZERODP_BUILD_CLI=OFF -DZERODP_ONEDNN=OFF \
  "-DZERODP_TEST_DIRS=comm;zero" "-DZERODP_TEST_LIBS=zerodp_zero;zerodp_predict;zerodp_sanitizer_options"

# make install's and make uninstall's prefix (DESTDIR, when given, goes before it); the .debs'
# is /usr.
PREFIX ?= /usr/local

.PHONY: setup setup-web setup-test build run test install uninstall deb format clean asan-build asan \
  tsan fuzz sanitize web

setup:
	@scripts/setup.sh run

setup-web:
	@scripts/setup.sh web

setup-test:
	@scripts/setup.sh test

build: setup
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) > /dev/null
	@cmake --build $(BUILD) -j $(JOBS)

# The planner compiled to WebAssembly with its page: open $(WEB_BUILD)/index.html.
web: setup-web
	@scripts/build-web.sh $(WEB_BUILD)

# The main job.
run: build
	@scripts/main-job.sh $(BUILD)

# zerodp, its engine, its man page, its bash completion, the Python module, the docs and the
# examples under PREFIX (DESTDIR honoured), as cmake/install.cmake lays them out.
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

# Removes what the last `make install` from $(BUILD) installed, as $(BUILD)/install_manifest.txt
# lists it, if that was under the same DESTDIR and PREFIX.
uninstall:
	@packaging/uninstall.sh $(BUILD) "$(PREFIX)" "$(DESTDIR)"

# The packages zerodp, zerodp-engine and python3-zerodp (docs/install.md) in this folder, and
# their file names the only output: the build's and cpack's go to logs in $(BUILD), shown when
# they fail.
deb: setup
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) > /dev/null
	@cmake --build $(BUILD) -j $(JOBS) > $(BUILD)/deb-build.log 2>&1 || \
	  { cat $(BUILD)/deb-build.log; exit 1; }
	@rm -rf $(BUILD)/debs
	@cd $(BUILD) && cpack -G DEB -B debs > debs.log 2>&1 || { cat debs.log; exit 1; }
	@cp $(BUILD)/debs/*.deb .
	@cd $(BUILD)/debs && ls *.deb

# The release tests, then the hardening runs, one after the other. The release tests take the
# cores they compute on from a spec of JOBS cores (cmake/test_cpus.cmake); the one job more runs
# a test that mostly waits (the cluster's) beside them. Two slots at least: an MPI run takes two.
CPU_SLOTS = $(shell echo $$(( $(JOBS) > 2 ? $(JOBS) : 2 )))
test: setup-test build
	@printf '{"version": {"major": 1, "minor": 0}, "local": [{"cpus": [{"id": "0", "slots": %s}]}]}\n' \
	  $(CPU_SLOTS) > $(BUILD)/cpus.json
	@cd $(BUILD) && ctest --output-on-failure -j $$(( $(CPU_SLOTS) + 1 )) --resource-spec-file cpus.json
	@$(MAKE) --no-print-directory asan
	@$(MAKE) --no-print-directory tsan
	@$(MAKE) --no-print-directory fuzz

asan-build: setup-test
	@cmake -S . -B $(ASAN_BUILD) $(ASAN_FLAGS) > /dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

# The in-process tests of ASAN_TEST_DIRS under ASan + UBSan.
asan: asan-build
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -LE fuzz

# The communicator's and the engine's tests under TSan, built with only the parts they use, but
# the peak's exhaustive grids (770 runs of the ledger against its prediction: arithmetic, and
# the threads they start are the other tests' too) and the layer probes (the release build's).
tsan: setup-test
	@cmake -S . -B $(TSAN_BUILD) $(TSAN_FLAGS) > /dev/null
	@cmake --build $(TSAN_BUILD) -j $(JOBS) --target zerodp_tests
	@cd $(TSAN_BUILD) && ctest --output-on-failure -j $(JOBS) -E '^(Gpt|Mlp)/Peak\.|^Models/PeakQwz\.|^layers\.'

# Each fuzz target replays its corpus (fuzz/corpus/<name>/), then fuzzes for FUZZ_SECONDS.
fuzz: asan-build
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS) -L fuzz

sanitize: asan tsan

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	@rm -f zerodp_*.deb
	@rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(WEB_BUILD) $(WEB_BUILD).cmake
