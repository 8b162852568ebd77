#!/usr/bin/env bash
# The main job on a fresh machine, in one command: Debian packages, llama-server, build, two
# models (tiny, small), one llama-server per model (-np 8, --metrics), logitauditd with its
# SQLite database, the seed-protocol audit submitted through the CLI with a progress bar, and
# the findings table with the predictions evaluated. Everything it starts it stops again,
# unless --keep. A second run reuses the build, the models and kept processes.
#
# The models are trained ones by default (docs/models.md): their greedy margins look like a
# trained model's, so the seed's prediction 3 (the greedy text survives) is a real test. The
# tiny one is trained on the first run (scripts/train-model.sh: about a minute on 2 cores, then
# cached). Training the small one takes about 17 minutes, more than the demo's budget: the demo
# uses it once `scripts/train-model.sh --preset small` has trained it, and the random small
# model until then, and says so. The backends are named by kind (tiny-trained, small-random).
#
# Usage: scripts/demo.sh [--keep] [--quick] [--random] [--format text|markdown|csv|json]
#   --keep    leave llama-server x2 and logitauditd running and print their URLs
#   --quick   the reduced configuration CI runs: tiny model only, 16 tokens per request
#   --random  the generated random models (seeded weights, never trained: logit scale 10 makes
#             them confident and wrong; docs/models.md compares their margins with the trained)
#   --stop    stop what an earlier --keep left running, and exit
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
keep=0
quick=0
random=0
stop=0
format=text
usage() { echo "usage: scripts/demo.sh [--keep] [--quick] [--random] [--stop] [--format text|markdown|csv|json]" >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --keep) keep=1 ;;
    --quick) quick=1 ;;
    --random) random=1 ;;
    --stop) stop=1 ;;
    --format) [[ $# -ge 2 ]] || usage; format=$2; shift ;;
    *) usage ;;
  esac
  shift
done
build=${LOGITAUDIT_BUILD_DIR:-build}
models=.cache/models
state=${LOGITAUDIT_DEMO_STATE:-.cache/demo}  # pids and URLs of what --keep left running; logs; the database
mkdir -p "$state"
say() { echo "demo: $*" >&2; }
started=()                   # pids this run started (stopped at exit unless --keep)

alive() { kill -0 "$1" 2>/dev/null && ! grep -qs '^State:.*Z' "/proc/$1/status"; }
stop_kept() {  # SIGTERM what --keep left, wait for it to end (SIGKILL after 30 s)
  local pids=()
  for f in "$state"/*.pid; do
    [[ -e $f ]] || continue
    pids+=("$(cat "$f")")
    kill "$(cat "$f")" 2>/dev/null || true
    rm -f "$f" "${f%.pid}.url"
  done
  for p in "${pids[@]}"; do
    for _ in $(seq 1 300); do alive "$p" || break; sleep 0.1; done
    alive "$p" && kill -9 "$p" 2>/dev/null || true
  done
}
if [[ $stop -eq 1 ]]; then stop_kept; say "stopped"; exit 0; fi

cleanup() {
  for p in "${started[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${started[@]}"; do wait "$p" 2>/dev/null || true; done
  for p in "${started[@]}"; do grep -lx "$p" "$state"/*.pid 2>/dev/null | while read -r f; do rm -f "$f" "${f%.pid}.url"; done; done
}
trap cleanup EXIT

bash scripts/bootstrap.sh --demo
if [[ $random -eq 1 ]]; then bash scripts/get-llama-server.sh; else bash scripts/get-llama-server.sh --training; fi
if [[ ! -x $build/cli/logitaudit || ! -x $build/daemon/logitauditd || ! -x $build/tools/logitaudit-make-model ]]; then
  say "building the daemon, the CLI and the model generator (first run only, about 3 minutes on 2 cores)"
  # Only what the demo runs, in the fastest configuration that keeps -Wall -Wextra -Werror: no
  # optimisation and no debug information (the audit's time is the servers'), one unity unit per
  # 8 sources (no unit over 25 s on 2 cores; 16 made four of 26-34 s and no faster a build), no
  # tests. A folder configured before (by hand, or the tour's Release build) is used as it is.
  [[ -f $build/CMakeCache.txt ]] ||
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g0" \
      -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 -DBUILD_TESTING=OFF >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target logitaudit logitauditd logitaudit-make-model >/dev/null
cli=$build/cli/logitaudit

sizes=(tiny small)
[[ $quick -eq 1 ]] && sizes=(tiny)
mkdir -p "$models"
presets=()                   # the backends, named size-kind (tiny-trained, small-random)
declare -A file
for size in "${sizes[@]}"; do
  if [[ ! -f $models/$size.gguf ]]; then
    say "generating the random $size model"
    "$build/tools/logitaudit-make-model" --preset "$size" --seed 7 --out "$models/$size.gguf" >&2
  fi
  kind=random
  if [[ $random -eq 0 ]]; then
    # The small model only when trained already (exit 3: not cached); a failure is the demo's.
    rc=0
    trained=$(LOGITAUDIT_MAKE_MODEL=$build/tools/logitaudit-make-model bash scripts/train-model.sh --preset "$size" \
      $([[ $size == small ]] && echo --cached-only)) || rc=$?
    if [[ $rc -eq 0 ]]; then
      kind=trained
      file[$size-$kind]=$(tail -1 <<<"$trained")
    elif [[ $rc -eq 3 ]]; then
      say "no trained $size model yet: the demo uses the random one (scripts/train-model.sh --preset $size trains it once)"
    else
      say "training the $size model failed (above); scripts/demo.sh --random runs the demo on the random models"
      exit 1
    fi
  fi
  [[ $kind == random ]] && file[$size-$kind]=$models/$size.gguf
  presets+=("$size-$kind")
done

port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
healthy() { curl -sf -m 2 "$1" >/dev/null 2>&1; }
wait_healthy() {  # URL NAME LOG
  for _ in $(seq 1 600); do healthy "$1" && return 0; sleep 0.1; done
  tail -20 "$3" >&2
  say "$2 did not become healthy at $1"
  exit 1
}
# What an earlier --keep left running is reused when every piece of it still answers;
# otherwise it is stopped and everything starts afresh.
kept_url() {  # NAME HEALTH-PATH
  [[ -f $state/$1.pid && -f $state/$1.url ]] || return 0
  kill -0 "$(cat "$state/$1.pid")" 2>/dev/null || return 0
  if healthy "$(cat "$state/$1.url")$2"; then cat "$state/$1.url"; fi
}
declare -A url
daemon_url=$(kept_url logitauditd /readyz)
for preset in "${presets[@]}"; do url[$preset]=$(kept_url "llama-$preset" /health); done
reuse=1
[[ -n $daemon_url ]] || reuse=0
for preset in "${presets[@]}"; do [[ -n ${url[$preset]} ]] || reuse=0; done
# Kept servers are reused only for the same backends serving the same files (a model trained
# again is a new file).
served() { for preset in "${presets[@]}"; do printf '%s %s %s\n' "$preset" "${file[$preset]}" "$(stat -c %Y "${file[$preset]}")"; done; }
if [[ $reuse -eq 1 ]] && diff -q <(served) "$state/presets" >/dev/null 2>&1; then
  say "reusing the kept llama-server(s) and logitauditd at $daemon_url"
else
  stop_kept
  for preset in "${presets[@]}"; do
    p=$(port)
    .cache/bin/llama-server -m "${file[$preset]}" --host 127.0.0.1 --port "$p" -np 8 -t "$(nproc)" -c 8192 \
      --metrics --no-webui >"$state/llama-$preset.log" 2>&1 &
    started+=($!)
    echo $! >"$state/llama-$preset.pid"
    url[$preset]="http://127.0.0.1:$p"
    echo "${url[$preset]}" >"$state/llama-$preset.url"
  done
  p=$(port)
  backends=()
  for preset in "${presets[@]}"; do backends+=(--backend "$preset=${url[$preset]}"); done
  "$build/daemon/logitauditd" --listen "127.0.0.1:$p" --db "$state/logitaudit.db" "${backends[@]}" \
    >"$state/logitauditd.log" 2>&1 &
  started+=($!)
  echo $! >"$state/logitauditd.pid"
  daemon_url="http://127.0.0.1:$p"
  echo "$daemon_url" >"$state/logitauditd.url"
  served >"$state/presets"
fi
for preset in "${presets[@]}"; do wait_healthy "${url[$preset]}/health" "llama-server ($preset)" "$state/llama-$preset.log"; done
wait_healthy "$daemon_url/readyz" logitauditd "$state/logitauditd.log"

export LOGITAUDIT_SERVER=$daemon_url
submit=(submit --preset seed-protocol --wait --format "$format" --tag demo)
for preset in "${presets[@]}"; do submit+=(--backend "$preset"); done
[[ $quick -eq 1 ]] && submit+=(--n-predict 16 --tag quick)
say "llama-server: $(for p in "${presets[@]}"; do printf '%s %s  ' "$p" "${url[$p]}"; done)logitauditd: $daemon_url"
say "submitting the seed protocol: logitaudit ${submit[*]}"
set +e
"$cli" "${submit[@]}"
rc=$?
set -e
if [[ $keep -eq 1 ]]; then
  started=()
  say "kept running (scripts/demo.sh --stop ends them):"
  say "  logitauditd  $daemon_url   (export LOGITAUDIT_SERVER=$daemon_url; $cli list)"
  for preset in "${presets[@]}"; do say "  llama-server $preset ${url[$preset]}"; done
fi
exit $rc
