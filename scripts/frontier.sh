#!/usr/bin/env bash
# The determinism/throughput frontier of llama-server on this machine (docs/frontier-cpu.md):
# the small generated model in Q4_K_M, Q8_0 and F32, logitauditd with them as managed models,
# and sweeps over llama-server's settings submitted through the CLI. Each configuration's
# server is started by the daemon, audited under load, timed by the throughput probe and
# stopped; the frontier tables are printed (markdown). Everything it starts it stops.
#
# Usage: scripts/frontier.sh [--quick] [--threads N]
#   --quick      one sweep of 4 configurations (tiny model, Q4_K_M and Q8_0, -np 1 and 4)
#   --threads N  llama-server -t (default: the number of cores)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
quick=0
threads=$(nproc)
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) quick=1 ;;
    --threads) threads=$2; shift ;;
    *) echo "usage: scripts/frontier.sh [--quick] [--threads N]" >&2; exit 2 ;;
  esac
  shift
done
build=${LOGITAUDIT_BUILD_DIR:-build}
state=${LOGITAUDIT_FRONTIER_STATE:-.cache/frontier}
say() { echo "frontier: $*" >&2; }
bash scripts/bootstrap.sh
bash scripts/get-llama-server.sh
if [[ ! -x $build/cli/logitaudit || ! -x $build/daemon/logitauditd || ! -x $build/tools/logitaudit-make-model ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target logitaudit logitauditd logitaudit-make-model >/dev/null
cli=$build/cli/logitaudit
rm -rf "$state/logs"
mkdir -p "$state/models"
preset=small
[[ $quick -eq 1 ]] && preset=tiny
quants=(Q4_K_M Q8_0 none)
[[ $quick -eq 1 ]] && quants=(Q4_K_M Q8_0)
models_json=""
for q in "${quants[@]}"; do
  name=$([[ $q == none ]] && echo F32 || echo "$q")
  f=$state/models/$preset-$name.gguf
  if [[ ! -f $f ]]; then
    say "generating the $preset model in $name"
    "$build/tools/logitaudit-make-model" --preset "$preset" --seed 7 --quantize "$q" --out "$f" >&2
  fi
  models_json+="${models_json:+,}{\"name\":\"$name\",\"path\":\"$(realpath "$f")\"}"
done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$state/logitauditd.json" <<JSON
{"database": "$state/frontier.db", "listen": "127.0.0.1:$port",
 "managed": {"models": [$models_json], "log_dir": "$state/logs"},
 "limits": {"max_sweep_configurations": 32}}
JSON
rm -f "$state/frontier.db"*
"$build/daemon/logitauditd" --config "$state/logitauditd.json" >"$state/logitauditd.log" 2>&1 &
daemon=$!
trap 'kill $daemon 2>/dev/null || true; wait $daemon 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do curl -sf -m 2 "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
export LOGITAUDIT_SERVER=http://127.0.0.1:$port

sweep() {  # a title, then --sweep arguments
  local title=$1
  shift
  say "$title"
  echo "## $title"
  echo
  echo "\`logitaudit submit --preset sweep --n-predict 32 $*\`"
  echo
  "$cli" submit --preset sweep --n-predict 32 --wait --format markdown --tag frontier "$@" |
    sed -n '/^### Frontier/,/^### Findings/p' | sed '$d'
  echo
}
all_models=$(IFS=,; echo "${quants[*]/none/F32}")
if [[ $quick -eq 1 ]]; then
  sweep "Quantisation and slots (quick)" --sweep "models=$all_models" --sweep parallel=1,4 --sweep "threads=$threads"
  exit 0
fi
sweep "Quantisation, slots and flash attention" --sweep "models=$all_models" --sweep parallel=1,4 \
  --sweep flash_attn=off,on --sweep "threads=$threads"
sweep "The KV cache and the batch (Q4_K_M, -np 4)" --sweep models=Q4_K_M --sweep parallel=4 \
  --sweep kv_unified=false,true --sweep ubatch=512,32 --sweep prompt_cache=true,false --sweep "threads=$threads"
sweep "Threads and cache reuse (Q8_0, -np 4)" --sweep models=Q8_0 --sweep parallel=4 --sweep threads=1,2 \
  --sweep cache_reuse=0,256
