#!/usr/bin/env bash
# The hostile run (docs/reliability.md): every test that starts a real llama-server, on a machine
# made slow and different. Each llama-server the suite starts runs a ggml CPU variant other than
# the one ggml picks for this host (LOGITAUDIT_CPU_VARIANT, which the llama-server wrapper of
# scripts/get-llama-server.sh reads), and busy processes occupy every core the whole time. The
# run is made twice: once with a variant under which bursts move the numbers on this host, once
# with one under which they do not. Which is which is measured first, through the product: the
# tiny model at -np 8, two serial repeats and three bursts of 8 identical requests.
# Usage: scripts/hostile.sh [extra ctest arguments]     (scripts/test.sh --hostile runs it)
#   LOGITAUDIT_HOSTILE_VARIANTS="MOVING HOLDING"  skip the probe and use these two variants
#   LOGITAUDIT_BUILD_DIR                          the build folder (default build-hostile)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
started=$(date +%s)
step() { echo "== $* ($(date +%H:%M:%S), $(( $(date +%s) - started )) s)"; }
build=${LOGITAUDIT_BUILD_DIR:-build-hostile}
work=$(mktemp -d /tmp/logitaudit-hostile-XXXXXX)
busy=()
server_pid=""
cleanup() {
  for p in "${busy[@]}"; do kill "$p" 2>/dev/null || true; done
  [[ -z $server_pid ]] || kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
# bash skips the EXIT trap when a signal ends it while it waits on ctest: exit on them instead.
trap 'exit 143' TERM
trap 'exit 130' INT

bash scripts/bootstrap.sh --test
bash scripts/get-llama-server.sh --training
step "build ($build: unsanitized, -O1, the fastest build with -Wall -Wextra -Werror)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g0" -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_UNITY_BUILD_BATCH_SIZE=16 >/dev/null
cmake --build "$build" -j "$(nproc)"
(cd "$build" && ctest -R '^models.generate$' >/dev/null)
server=$repo/.cache/bin/llama-server
model=$build/models/tiny.gguf
cli=$build/cli/logitaudit

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The variant ggml loads for this host by itself (its -lv 4 log names the library it loaded).
best_variant() {
  local port log=$work/best.log
  port=$(free_port)
  env -u LOGITAUDIT_CPU_VARIANT "$server" -m "$model" -np 1 -t 2 -c 512 --host 127.0.0.1 --port "$port" -lv 4 >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
  kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true; server_pid=""
  { grep -o 'libggml-cpu-[a-z0-9_]*\.so' "$log" || true; } | head -1 | sed 's/libggml-cpu-//; s/\.so//'
}

# moves | holds | undecided | cannot-run: what bursts of 8 identical requests do to the logits
# of the tiny model under VARIANT on this host, as the product's own verdicts say.
probe() {
  local variant=$1 port log=$work/probe-$1.log
  port=$(free_port)
  LOGITAUDIT_CPU_VARIANT=$variant "$server" -m "$model" -np 8 -t 2 -c 4096 --metrics --host 127.0.0.1 --port "$port" \
    >"$log" 2>&1 &
  server_pid=$!
  local up=0
  for _ in $(seq 300); do
    kill -0 "$server_pid" 2>/dev/null || break
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && { up=1; break; }
    sleep 0.1
  done
  if [[ $up == 1 ]]; then
    cat >"$work/probe.json" <<'JSON'
{"preset":"seed-protocol","n_predict":16,"predictions":[],
 "conditions":[{"name":"repeat","kind":"repeat","replicates":2},
               {"name":"burst_c8","kind":"concurrent","concurrency":8,"replicates":3},
               {"name":"control_prompt","kind":"control_prompt"}]}
JSON
    "$cli" run --spec "$work/probe.json" --backend "probe=http://127.0.0.1:$port" --format json --quiet \
      >"$work/probe-$variant.json" 2>>"$log" || true
  fi
  kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true; server_pid=""
  [[ $up == 1 ]] || { echo cannot-run; return; }
  python3 - "$work/probe-$variant.json" <<'PY'
import json, sys
try:
    f = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("undecided"); sys.exit()
row = next((t for t in f.get("pooled", []) if t["condition"] == "burst_c8"), None)
if not row or row["n"] == 0: print("undecided")
elif row["logit_identical"] < row["n"]: print("moves")
else: print("holds")
PY
}

read -r moving holding <<<"${LOGITAUDIT_HOSTILE_VARIANTS:-}"
if [[ -n ${moving:-} && -n ${holding:-} ]]; then
  # Variants named by hand: each must load on this host (ggml refuses a variant whose
  # instructions the CPU lacks, and every server of the run would then fail to start).
  for v in "$moving" "$holding"; do
    verdict=$(probe "$v")
    [[ $verdict != cannot-run ]] ||
      { echo "hostile: ggml's CPU variant '$v' does not run on this host; llama-server said:" >&2
        grep -m 3 ' E ' "$work/probe-$v.log" >&2 || tail -3 "$work/probe-$v.log" >&2; exit 1; }
    echo "   $v: $verdict"
  done
else
  best=$(best_variant)
  [[ -n $best ]] || { echo "hostile: llama-server's log names no ggml CPU variant ($work/best.log)" >&2; exit 1; }
  step "probing ggml CPU variants other than this host's own ($best)"
  moving=""; holding=""
  for v in $(ls "$repo/.cache/llama.cpp/root/usr/lib/x86_64-linux-gnu/ggml/backends0" | sed -n 's/^libggml-cpu-\(.*\)\.so$/\1/p'); do
    [[ $v == "$best" ]] && continue
    [[ -n $moving && -n $holding ]] && break
    verdict=$(probe "$v")
    echo "   $v: $verdict"
    [[ $verdict == moves && -z $moving ]] && moving=$v
    [[ $verdict == holds && -z $holding ]] && holding=$v
  done
  [[ -n $moving ]] || { moving=$best; echo "   no other variant moves the numbers here: $best (this host's own) stands in"; }
  [[ -n $holding ]] || { holding=$best; echo "   no variant here keeps bursts logit-identical: $best (this host's own) stands in"; }
fi

step "busy processes on all $(nproc) cores"
for _ in $(seq "$(nproc)"); do
  (trap - EXIT; while kill -0 $$ 2>/dev/null; do :; done) &  # ends with this script, however it ends
  busy+=($!)
done

rc=0
for v in "$moving" "$holding"; do
  step "every real-server test with LOGITAUDIT_CPU_VARIANT=$v ($([[ $v == "$moving" ]] && echo "bursts move the numbers" || echo "bursts keep them"))"
  (cd "$build" && LOGITAUDIT_CPU_VARIANT=$v ctest --output-on-failure -j 2 --timeout 1800 -L 'e2e|faults' "$@") || rc=1
done
[[ $rc == 0 ]] && step "hostile run passed (variants: $moving moves the numbers, $holding keeps them)" ||
  step "hostile run FAILED"
exit $rc
