#!/usr/bin/env bash
# This machine's certify findings (docs/certify.md), written by the product: llama-server -np 8
# with the tiny and small models in Q4_K_M, Q8_0 and F32 under the batch-invariant and
# no-prompt-cache claims, the tiny Q4_K_M model with -kvu, and -np 1 under single-slot and
# batch-invariant. Each certify job runs offline (logitaudit run) into one database; each
# refutation's smallest counterexample is written as a script and run by hand against its server.
# Reports and scripts go to $state/out; the document is written from them by hand.
#   scripts/certify-findings.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LOGITAUDIT_BUILD_DIR:-build}
state=${LOGITAUDIT_FINDINGS_STATE:-.cache/certify-findings}
say() { echo "certify-findings: $*" >&2; }
# shellcheck source=scripts/findings-lib.sh
source scripts/findings-lib.sh
mkdir -p "$state/out" "$state/models"
build_tools
db=$state/certify.db
rm -f "$db"
bash scripts/get-llama-server.sh
server=${LOGITAUDIT_CACHE:-$PWD/.cache}/bin/llama-server

certify() {  # NAME MODEL-PRESET QUANT CLAIM SERVER-FLAGS...
  local name=$1 preset=$2 quant=$3 claim=$4
  shift 4
  local file port pid
  file=$(model "$preset" "$quant")
  port=$(free_port)
  "$server" -m "$file" --port "$port" --metrics --no-webui -fa off -t 2 "$@" >"$state/out/$name.server.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  for _ in $(seq 1 300); do curl -sf -m 2 "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
  say "$name: certify-$claim on $preset $quant ($*)"
  local t0=$SECONDS
  "$cli" run --preset "certify-$claim" --backend "$name=http://127.0.0.1:$port" --db "$db" --quiet --format markdown \
    --tag "$name" >"$state/out/$name.md" || true
  local job
  job=$(sqlite3 "$db" 'SELECT max(id) FROM jobs')
  echo "$name job=$job seconds=$((SECONDS - t0)) flags=$*" >>"$state/out/runs.txt"
  rm -rf "$state/out/$name.scripts"
  if "$cli" counterexamples "$db" --job "$job" --out "$state/out/$name.scripts" >"$state/out/$name.scripts.txt" 2>&1 &&
    [[ -f $state/out/$name.scripts/counterexample-1.sh ]]; then
    sh "$state/out/$name.scripts/counterexample-1.sh" "http://127.0.0.1:$port" 3 >"$state/out/$name.by-hand.txt" 2>&1 || true
  fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

for preset in tiny small; do
  for quant in Q4_K_M Q8_0 none; do
    for claim in batch-invariant no-prompt-cache; do
      certify "$preset-${quant/none/F32}-np8-$claim" "$preset" "$quant" "$claim" -np 8 -c 8192
    done
  done
done
certify tiny-Q4_K_M-np8-kvu-batch-invariant tiny Q4_K_M batch-invariant -np 8 -c 8192 -kvu
certify tiny-Q4_K_M-np1-single-slot tiny Q4_K_M single-slot -np 1 -c 1024
certify tiny-Q4_K_M-np1-batch-invariant tiny Q4_K_M batch-invariant -np 1 -c 1024
"$cli" verify "$db" >"$state/out/verify.txt" || true
say "done: $state/out"
