#!/usr/bin/env bash
# The whole test suite on a fresh machine: dependencies, llama-server, build, every test;
# then the same unit, CLI and fault tests under ASan+UBSan, the concurrency-heavy ones under
# TSan, and a short run of every fuzz target.
# Usage: scripts/test.sh [extra ctest arguments, e.g. -L unit]
#   LOGITAUDIT_SANITIZERS=0   skip the sanitizer builds and the fuzz run (quick local runs)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
build=${LOGITAUDIT_BUILD_DIR:-build}
step() { echo "== $* ($(date +%H:%M:%S))"; }

bash scripts/bootstrap.sh
bash scripts/get-llama-server.sh
step "build ($build)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"
step "tests"
(cd "$build" && ctest --output-on-failure -j 2 --timeout 900 "$@")
[[ ${LOGITAUDIT_SANITIZERS:-1} == 1 && $# -eq 0 ]] || exit 0

# Sanitizers: any report fails the test that caused it (UBSan does not recover; ASan aborts).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
step "ASan+UBSan build"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DLOGITAUDIT_SANITIZE=address,undefined >/dev/null
cmake --build build-asan -j "$(nproc)" --target unit_tests cli_tests fault_tests crash_writer logitaudit logitauditd \
  logitaudit-make-model
step "unit, CLI and fault tests under ASan+UBSan"
(cd build-asan && ctest --output-on-failure -j 2 --timeout 900 -L 'unit|cli|faults')
step "TSan build"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DLOGITAUDIT_SANITIZE=thread >/dev/null
cmake --build build-tsan -j "$(nproc)" --target unit_tests crash_writer
step "concurrency-heavy tests under TSan"
(cd build-tsan && ctest --output-on-failure -j 2 --timeout 900 -L unit -R 'daemon_api|job_runner|backend_client|storage|burst')
step "fuzz targets, 15 s each"
bash scripts/fuzz.sh --seconds 15
step "all passed"
