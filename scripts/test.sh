#!/usr/bin/env bash
# The whole test suite on a fresh machine: dependencies, llama-server, one clang build under
# ASan+UBSan with libFuzzer's coverage, in which every test runs (unit, CLI, faults, e2e on real
# llama-servers, the demo and the README tour) and every fuzz target is linked; then the
# concurrency-heavy tests under TSan beside a short run of each fuzz target. The TSan build
# compiles at a lower priority while the suite runs, since the suite leaves the cores idle
# whenever it waits on a server.
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
# With ggml's Vulkan (lavapipe), BLAS and RPC backends, for the tests of other devices: 79
# packages, about 10 s (docs/llama-server.md); and llama-finetune and llama-perplexity, for the
# test of scripts/train-model.sh (one more package).
bash scripts/get-llama-server.sh --backends --training

# Sanitizers: any report fails the test that caused it (UBSan does not recover; ASan aborts).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
# Every llama-server the suite starts sleeps while it waits for work instead of spinning (the
# wrapper of scripts/get-llama-server.sh puts these first, so a test's own --poll wins): on 2
# cores shared by a server at work, the TSan build at nice 19 and the daemons, a polling server
# takes CPU from the others (docs/reliability.md).
export LOGITAUDIT_LLAMA_SERVER_ARGS=${LOGITAUDIT_LLAMA_SERVER_ARGS---poll 0}

# The compile work of the instrumented builds is what bounds this script on 2 cores
# (docs/reliability.md, "The test command's budget"), so: unity builds (16 sources per unit)
# without the benchmarks; one build for the suite and the fuzz targets, where there were two
# (clang, since GCC has no libFuzzer), at -O0, which compiles in half the CPU time of -O1; the
# TSan build with clang at -O0 too: 240 CPU-s where GCC's at -Og took 441, and its tests ran in
# fewer CPU-seconds as well (47 against 51).
# lld links the unit tests' executable in 2 s where GNU ld takes 14.
sanitized=(-G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16
           -DLOGITAUDIT_BENCH=OFF -DBUILD_TESTING=ON -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld)
background=()
stop_background() { for p in "${background[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_background EXIT
if [[ $sanitizers == 1 ]]; then
  build=${LOGITAUDIT_BUILD_DIR:-build-test}
  mkdir -p "$build/logs"
  # The TSan build starts now, under SCHED_IDLE: it takes only what the main build and the suite
  # leave idle (its links, its last long unity units, the suite's waits on servers), and every
  # core once those are done. At nice 19 alone it slowed the suite from 448 s to 597 (its
  # compilers kept the cores a suite process woke up for; docs/reliability.md). It also
  # compiles every benchmark (bench/), which no other build of this script does, so that none
  # can stop compiling unseen (bench_history did, for a week).
  idle() { chrt --idle 0 nice -n 19 "$@"; }
  (idle cmake -S . -B build-tsan "${sanitized[@]}" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" \
     -DLOGITAUDIT_SANITIZE=thread \
     -DLOGITAUDIT_BENCH=ON >/dev/null &&
   idle cmake --build build-tsan -j "$(nproc)" --target unit_tests crash_writer benchmarks) >"$build/logs/tsan-build.log" 2>&1 &
  background+=($!)
  step "build under ASan+UBSan with the fuzz targets ($build)"
  cmake -S . -B "$build" "${sanitized[@]}" -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g1" -DLOGITAUDIT_SANITIZE=address,undefined -DLOGITAUDIT_FUZZ=ON >/dev/null
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

step "waiting for the TSan build"
for i in "${!background[@]}"; do
  if ! wait "${background[$i]}"; then
    tail -40 "$build/logs/tsan-build.log" >&2
    echo "test.sh: the TSan build failed" >&2
    exit 1
  fi
done
background=()
step "concurrency-heavy tests under TSan, beside the fuzz targets (10 s each)"
# Two runs of the fuzz targets beside the TSan tests (mostly waiting on sockets): `http` alone,
# whose corpus takes 40 s to replay at -O0 before its 10 s begin, and the other five.
# The targets are built already (they are in `all`), so the two runs' builds have nothing to do.
export LOGITAUDIT_FUZZ_BUILD_DIR=$build LOGITAUDIT_FUZZ_OUT=$build/fuzz-out
bash scripts/fuzz.sh --seconds 10 http >"$build/logs/fuzz-http.log" 2>&1 &
fuzz_http=$!
bash scripts/fuzz.sh --seconds 10 spec completion openai cron bundle >"$build/logs/fuzz.log" 2>&1 &
fuzz_rest=$!
background+=($fuzz_http $fuzz_rest)
(cd build-tsan && ctest --output-on-failure -j 2 --timeout 900 -L unit \
  -R 'daemon_api|job_runner|backend_client|storage|burst|lifecycle|api_registry')
fuzz_rc=0
wait "$fuzz_rest" || fuzz_rc=$?
wait "$fuzz_http" || fuzz_rc=$?
background=()
cat "$build/logs/fuzz.log"
tail -n +2 "$build/logs/fuzz-http.log"
[[ $fuzz_rc -eq 0 ]] || { echo "test.sh: a fuzz target failed" >&2; exit 1; }
step "all passed"
