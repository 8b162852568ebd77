#!/usr/bin/env bash
# The main job on a fresh machine, in one command: Debian packages, llama-server, build, two
# generated models (tiny, small), one llama-server per model (-np 8, --metrics), the
# seed-protocol audit, and its findings table. Everything it starts it stops again.
#
# Usage: scripts/demo.sh [--keep] [--format text|markdown|csv|json]
#   --keep   leave the two llama-servers running and print their URLs
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
keep=0
format=text
while [[ $# -gt 0 ]]; do
  case $1 in
    --keep) keep=1 ;;
    --format) format=$2; shift ;;
    *) echo "usage: scripts/demo.sh [--keep] [--format text|markdown|csv|json]" >&2; exit 2 ;;
  esac
  shift
done
build=${LOGITAUDIT_BUILD_DIR:-build}
models=.cache/models
say() { echo "demo: $*" >&2; }

bash scripts/bootstrap.sh
bash scripts/get-llama-server.sh
if [[ ! -x $build/cli/logitaudit || ! -x $build/tools/logitaudit-make-model ]]; then
  say "building (first run only)"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target logitaudit logitaudit-make-model >/dev/null

mkdir -p "$models"
for preset in tiny small; do
  if [[ ! -f $models/$preset.gguf ]]; then
    say "generating the $preset model"
    "$build/tools/logitaudit-make-model" --preset $preset --seed 7 --out "$models/$preset.gguf" >&2
  fi
done

# Free loopback ports for the two servers.
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
[[ $keep -eq 1 ]] || trap cleanup EXIT
declare -A url
for preset in tiny small; do
  p=$(port)
  .cache/bin/llama-server -m "$models/$preset.gguf" --host 127.0.0.1 --port "$p" -np 8 -t 2 -c 8192 --metrics \
    --no-webui >".cache/llama-server-$preset.log" 2>&1 &
  pids+=($!)
  url[$preset]="http://127.0.0.1:$p"
done
for preset in tiny small; do
  for _ in $(seq 1 300); do
    curl -sf "${url[$preset]}/health" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -sf "${url[$preset]}/health" >/dev/null || { tail -20 ".cache/llama-server-$preset.log" >&2; say "llama-server ($preset) did not start"; exit 1; }
done
say "llama-server tiny at ${url[tiny]}, small at ${url[small]}; running the seed protocol"
"$build/cli/logitaudit" run --preset seed-protocol --backend "tiny=${url[tiny]}" --backend "small=${url[small]}" \
  --format "$format"
if [[ $keep -eq 1 ]]; then
  say "servers kept running: tiny ${url[tiny]} (pid ${pids[0]}), small ${url[small]} (pid ${pids[1]})"
fi
