#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + coverage; UBSan on the parsers) and runs
# each for a while on a copy of its corpus in tests/fuzz/corpus/. Prints one line per target:
# executions, coverage, corpus size, crashes. A crash leaves its input in $out and fails.
#
# Usage: scripts/fuzz.sh [--seconds N] [--merge] [--build-only] [TARGET...]
#   --seconds N   per target (default 20; the long run in docs/reliability.md used 600)
#   --merge       fold what was found back into tests/fuzz/corpus (minimized)
#   --build-only  build the targets and stop (scripts/test.sh builds them beside the suite)
# Targets: spec completion openai cron http (default: all).
#   LOGITAUDIT_FUZZ_OPT  the optimisation of a new build folder (default -O1). A folder keeps
#                        what it was configured with: remove it to change.
#   LOGITAUDIT_FUZZ_BUILD_DIR  the build folder (default build-fuzz); scripts/test.sh points it
#                        at its own ASan+UBSan build, which links the targets too.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
seconds=20
merge=0
build_only=0
targets=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) seconds=$2; shift ;;
    --merge) merge=1 ;;
    --build-only) build_only=1 ;;
    spec|completion|openai|cron|http|bundle) targets+=("$1") ;;
    *) echo "usage: scripts/fuzz.sh [--seconds N] [--merge] [--build-only] [spec|completion|openai|cron|http|bundle ...]" >&2; exit 2 ;;
  esac
  shift
done
[[ ${#targets[@]} -gt 0 ]] || targets=(spec completion openai cron http bundle)
build=${LOGITAUDIT_FUZZ_BUILD_DIR:-build-fuzz}
out=${LOGITAUDIT_FUZZ_OUT:-$build/fuzz-out}

bash scripts/bootstrap.sh
command -v clang++ >/dev/null || { echo "fuzz: clang++ is missing (apt-get install clang)" >&2; exit 2; }
if [[ ! -f $build/build.ninja ]]; then
  # A unity build: half the compile time of one object per source (on 2 cores the fuzz build
  # runs beside the test suite); -O1 unless LOGITAUDIT_FUZZ_OPT says otherwise.
  CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="${LOGITAUDIT_FUZZ_OPT:--O1} -g1" \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 -DLOGITAUDIT_BENCH=OFF -DLOGITAUDIT_FUZZ=ON \
    -DBUILD_TESTING=OFF >/dev/null
fi
# Quiet when it builds; the compiler's errors (on ninja's stdout) when it does not.
if ! log=$(cmake --build "$build" -j "${LOGITAUDIT_FUZZ_JOBS:-$(nproc)}" --target $(printf 'fuzz_%s ' "${targets[@]}") 2>&1); then
  echo "$log" | grep -v '^\[' | tail -60 >&2
  echo "fuzz: the build failed" >&2
  exit 1
fi
[[ $build_only -eq 1 ]] && exit 0

# Any sanitizer report is a crash (UBSan would otherwise print and go on).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1} UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
failed=0
printf '%-11s %10s %8s %8s %8s %s\n' target executions exec/s coverage corpus result
for t in "${targets[@]}"; do
  work=$out/$t
  rm -rf "$work" && mkdir -p "$work/corpus" "$work/crashes"
  cp tests/fuzz/corpus/$t/* "$work/corpus/"
  set +e
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$work/crashes/" "$work/corpus" >"$work/log.txt" 2>&1
  rc=$?
  set -e
  execs=$(awk '/stat::number_of_executed_units:/ {print $2}' "$work/log.txt")
  rate=$(awk '/stat::average_exec_per_sec:/ {print $2}' "$work/log.txt")
  cov=$(grep -o 'cov: [0-9]*' "$work/log.txt" | tail -1 | awk '{print $2}')
  files=$(ls "$work/corpus" | wc -l)
  result=ok
  if [[ $rc -ne 0 ]]; then
    result="CRASH (rc $rc): $(ls "$work/crashes" | head -3 | tr '\n' ' ') see $work/log.txt"
    failed=1
  fi
  printf '%-11s %10s %8s %8s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "$files" "$result"
  if [[ $merge -eq 1 && $rc -eq 0 ]]; then
    mkdir -p "$work/merged"
    "$build/tests/fuzz/fuzz_$t" -merge=1 "$work/merged" tests/fuzz/corpus/$t "$work/corpus" >/dev/null 2>&1
    rm -f tests/fuzz/corpus/$t/* && cp "$work/merged"/* tests/fuzz/corpus/$t/
  fi
done
exit $failed
