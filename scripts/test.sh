#!/usr/bin/env bash
# The whole test suite on a fresh machine: dependencies, llama-server, one build under
# ASan+UBSan in which every test runs (unit, CLI, faults, e2e on real llama-servers, the demo
# and the README tour), then the concurrency-heavy tests under TSan beside a short run of every
# fuzz target. The TSan and fuzz builds compile at a lower priority while the suite runs, since
# the suite leaves the cores idle whenever it waits on a server.
# Usage: scripts/test.sh [extra ctest arguments, e.g. -L unit]
#        scripts/test.sh --hostile   every real-server test on other ggml CPU variants and busy cores
#                                    (scripts/hostile.sh, docs/reliability.md)
#   LOGITAUDIT_SANITIZERS=0   a plain optimized build instead, and no TSan or fuzz stage
#   LOGITAUDIT_BUILD_DIR      the suite's build folder (default build-test; build with SANITIZERS=0)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
if [[ ${1:-} == --hostile ]]; then shift; exec bash scripts/hostile.sh "$@"; fi
started=$(date +%s)
step() { echo "== $* ($(date +%H:%M:%S), $(( $(date +%s) - started )) s)"; }
sanitizers=${LOGITAUDIT_SANITIZERS:-1}
[[ $# -eq 0 ]] || sanitizers=0  # a partial run (ctest arguments) is a quick local run

bash scripts/bootstrap.sh --test
bash scripts/get-llama-server.sh

# Sanitizers: any report fails the test that caused it (UBSan does not recover; ASan aborts).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

# Sanitizer builds are unity builds (16 sources per unit) without the benchmarks: half the
# compile time of one object per source on 2 cores. The compile work of three instrumented
# builds is what bounds this script on 2 cores, so the GCC builds are at -Og: a unit of the
# clients library compiles in 87 s against 138 at -O1 (and 79 at -O0, whose code made the
# CPU-heavy tests twice as slow). The fuzz build (clang, whose -Og is -O1) is at -O0 for its
# 10-second smoke runs.
sanitized=(-G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16
           -DLOGITAUDIT_BENCH=OFF -DBUILD_TESTING=ON)
background=()
stop_background() { for p in "${background[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_background EXIT
if [[ $sanitizers == 1 ]]; then
  mkdir -p "${LOGITAUDIT_BUILD_DIR:-build-test}/logs"
  logs=${LOGITAUDIT_BUILD_DIR:-build-test}/logs
  # The TSan and fuzz builds start now at the lowest priority: they take only what the main
  # build and the suite leave idle (its links, its last long unity units, the suite's waits on
  # servers), and every core once those are done.
  # It also compiles every benchmark (bench/), which no other build of this script does, so
  # that none can stop compiling unseen (bench_history did, for a week).
  (nice -n 19 cmake -S . -B build-tsan "${sanitized[@]}" -DCMAKE_CXX_FLAGS_DEBUG="-Og -g1" -DLOGITAUDIT_SANITIZE=thread \
     -DLOGITAUDIT_BENCH=ON >/dev/null &&
   nice -n 19 cmake --build build-tsan -j "$(nproc)" --target unit_tests crash_writer benchmarks) >"$logs/tsan-build.log" 2>&1 &
  background+=($!)
  (LOGITAUDIT_FUZZ_OPT=-O0 nice -n 19 bash scripts/fuzz.sh --build-only) >"$logs/fuzz-build.log" 2>&1 &
  background+=($!)
fi
if [[ $sanitizers == 1 ]]; then
  build=${LOGITAUDIT_BUILD_DIR:-build-test}
  step "build under ASan+UBSan ($build)"
  cmake -S . -B "$build" "${sanitized[@]}" -DCMAKE_CXX_FLAGS_DEBUG="-Og -g1" -DLOGITAUDIT_SANITIZE=address,undefined >/dev/null
else
  build=${LOGITAUDIT_BUILD_DIR:-build}
  step "build ($build)"
  # BUILD_TESTING=ON: the demo configures build/ without tests, and a cached OFF would leave
  # ctest nothing to run (--no-tests=error below makes that a failure, never "all passed").
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON >/dev/null
fi
cmake --build "$build" -j "$(nproc)"

step "tests"
(cd "$build" && ctest --output-on-failure --no-tests=error -j 2 --timeout 900 "$@")
if [[ $sanitizers != 1 ]]; then step "all passed"; exit 0; fi

step "waiting for the TSan and fuzz builds"
for i in "${!background[@]}"; do
  if ! wait "${background[$i]}"; then
    cat "$build/logs/tsan-build.log" "$build/logs/fuzz-build.log" | tail -40 >&2
    echo "test.sh: a background build failed" >&2
    exit 1
  fi
done
background=()
step "concurrency-heavy tests under TSan, beside the fuzz targets (10 s each)"
# The fuzz targets take one core, the TSan tests (mostly waiting on sockets) the rest.
LOGITAUDIT_FUZZ_OPT=-O0 bash scripts/fuzz.sh --seconds 10 >"$build/logs/fuzz.log" 2>&1 &
fuzz_pid=$!
background+=($fuzz_pid)
(cd build-tsan && ctest --output-on-failure -j 2 --timeout 900 -L unit \
  -R 'daemon_api|job_runner|backend_client|storage|burst|lifecycle|api_registry')
fuzz_rc=0
wait "$fuzz_pid" || fuzz_rc=$?
background=()
cat "$build/logs/fuzz.log"
[[ $fuzz_rc -eq 0 ]] || { echo "test.sh: a fuzz target failed" >&2; exit 1; }
step "all passed"
