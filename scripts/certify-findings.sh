#!/usr/bin/env bash
# This machine's certify findings (docs/certify.md), written by the product. The question: what
# do llama-server's own defaults certify, and what does each flag users add change? Per model
# (the tiny and small generated models in Q4_K_M, Q8_0 and F32): llama-server with no flags at
# all, then -np 4 --no-kv-unified, --cache-ram 0 and --no-cache-prompt, under the
# batch-invariant claim; the tiny Q4_K_M server with no flags under every other claim; -np 1
# under single-slot. Each certify job runs offline (logitaudit run) into one database; each
# refutation's first counterexample (the confirmed ones lead) is written as a script and run
# by hand against its server, 5 times. Reports and scripts go to $state/out.
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
  "$server" -m "$file" --port "$port" --metrics --no-webui "$@" >"$state/out/$name.server.log" 2>&1 &
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
    sh "$state/out/$name.scripts/counterexample-1.sh" "http://127.0.0.1:$port" 5 >"$state/out/$name.by-hand.txt" 2>&1 || true
  fi
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

for preset in tiny small; do
  for quant in Q4_K_M Q8_0 none; do
    q=${quant/none/F32}
    certify "$preset-$q-noflags-batch-invariant" "$preset" "$quant" batch-invariant
    certify "$preset-$q-np4-nokvu-batch-invariant" "$preset" "$quant" batch-invariant -np 4 --no-kv-unified
    certify "$preset-$q-cacheram0-batch-invariant" "$preset" "$quant" batch-invariant --cache-ram 0
    certify "$preset-$q-nocacheprompt-batch-invariant" "$preset" "$quant" batch-invariant --no-cache-prompt
  done
done
for claim in no-prompt-cache greedy-text-only; do
  certify "tiny-Q4_K_M-noflags-$claim" tiny Q4_K_M "$claim"
done
certify tiny-Q4_K_M-np1-single-slot tiny Q4_K_M single-slot -np 1 -c 1024
"$cli" verify "$db" >"$state/out/verify.txt" || true
say "done: $state/out"
