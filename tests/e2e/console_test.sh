#!/usr/bin/env bash
# e2e: the web console in a real browser (Debian's chromium, driven by playwright-core) against
# logitauditd with real audits on a real llama-server, reads protected by a token; the OpenAPI
# document linted by @redocly/cli and real responses checked against its schemas (ajv).
# Seeds: a small spec audited three times (the server restarted with other slots before the
# third: a fingerprint change on the series), an audit of a prompt crafted to break out of
# the HTML, and the seed protocol (quick). Screenshots go to BUILD_DIR/console-artifacts.
# Usage: console_test.sh REPO BUILD_DIR MODELS_DIR
set -euo pipefail
repo=$1
build=$2
models=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ -x /usr/bin/chromium ]] || fail "no /usr/bin/chromium (scripts/test.sh installs Debian's chromium)"
[[ -d $repo/tests/console/node_modules/playwright-core ]] || fail "no node modules (npm ci --prefix tests/console)"
state=$(mktemp -d /tmp/logitaudit-console-XXXXXX)
artifacts=$build/console-artifacts
rm -rf "$artifacts" && mkdir -p "$artifacts"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$state"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_url() {  # URL LOG
  for _ in $(seq 1 600); do curl -sf -m 2 "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done
  tail -20 "$2" >&2
  fail "$1 did not answer"
}
llama_port=$(port)
llama_pid=
start_llama() {  # SLOTS
  "$repo/.cache/bin/llama-server" -m "$models/tiny.gguf" --host 127.0.0.1 --port "$llama_port" -np "$1" -t 2 -c 4096 \
    --metrics --no-webui >>"$state/llama.log" 2>&1 &
  llama_pid=$!
  pids+=("$llama_pid")
  wait_url "http://127.0.0.1:$llama_port/health" "$state/llama.log"
}
start_llama 4
# A second server with a unified KV cache: where it moves a burst's numbers on this machine, the
# run page's repro is tried on it (whether it does is the machine's: docs/findings-cpu.md).
kvu_port=$(port)
"$repo/.cache/bin/llama-server" -m "$models/tiny.gguf" --host 127.0.0.1 --port "$kvu_port" -np 4 -kvu -t 2 -c 4096 \
  --metrics --no-webui >>"$state/llama-kvu.log" 2>&1 &
pids+=($!)
wait_url "http://127.0.0.1:$kvu_port/health" "$state/llama-kvu.log"

token=console-test-token-1
daemon_port=$(port)
cat >"$state/config.json" <<JSON
{"listen": "127.0.0.1:$daemon_port", "database": "$state/logitaudit.db", "tokens": ["$token"], "protect_reads": true,
 "backends": [{"name": "tiny", "url": "http://127.0.0.1:$llama_port"}, {"name": "tiny-kvu", "url": "http://127.0.0.1:$kvu_port"}],
 "managed": {"models": [{"name": "tiny-q4", "path": "$models/tiny.gguf"}], "log_dir": "$state/managed-logs"}}
JSON
"$build/daemon/logitauditd" --config "$state/config.json" >"$state/daemon.log" 2>&1 &
pids+=($!)
daemon=http://127.0.0.1:$daemon_port
wait_url "$daemon/readyz" "$state/daemon.log"

auth=(-H "Authorization: Bearer $token" -H "Content-Type: application/json")
submit() {  # SPEC-JSON -> waits for the audit to end, prints its id
  local id answer
  answer=$(curl -s "${auth[@]}" -d "$1" "$daemon/v1/audits")
  id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$answer" 2>/dev/null) || fail "submit: $answer"
  curl -sf "${auth[@]}" "$daemon/v1/audits/$id?wait=300" >/dev/null
  echo "$id"
}
series_spec='{"backends": ["tiny"], "prompts": ["The history of the printing press begins", "Once upon a time"], "n_predict": 12,
  "conditions": [{"name": "repeat", "kind": "repeat", "replicates": 3},
                 {"name": "concurrent_c4", "kind": "concurrent", "concurrency": 4, "replicates": 2},
                 {"name": "control_temperature", "kind": "control_temperature", "replicates": 2, "seeded": true}], "tags": ["series"]}'
s1=$(submit "$series_spec")
s2=$(submit "$series_spec")
kill "$llama_pid"; wait "$llama_pid" 2>/dev/null || true
start_llama 2  # another slot count: the series' next audit opens a segment (explained: server settings)
s3=$(submit "$series_spec")
xss=$(submit '{"backends": ["tiny"], "prompts": ["<img src=x onerror=alert(1)>", "</script><script>alert(2)</script>"], "n_predict": 8,
  "conditions": [{"name": "repeat", "kind": "repeat", "replicates": 2}, {"name": "control_prompt", "kind": "control_prompt", "replicates": 1}], "tags": ["xss", "<b>bold</b>"]}')
seed=$(submit '{"preset": "seed-protocol", "backends": ["tiny"], "n_predict": 12, "tags": ["seed"]}')
search=$(submit '{"preset": "threshold", "backends": ["tiny"], "n_predict": 8, "conditions": [{"name": "t", "kind": "threshold_search",
  "concurrency": 2, "search": {"reference": 4, "min_trials": 1, "max_trials": 2}}, {"name": "k", "kind": "control_prompt"}]}')
sweep=$(submit '{"preset": "sweep", "n_predict": 8, "sweep": {"models": ["tiny-q4"], "parallel": [1, 2], "probe_width": 2, "probe_bursts": 2}}')
kvu=$(submit '{"backends": ["tiny-kvu"], "prompts": ["The history of the printing press begins", "Once upon a time"], "n_predict": 12,
  "conditions": [{"name": "concurrent_c4", "kind": "concurrent", "concurrency": 4, "replicates": 2, "decode_steps": true},
  {"name": "plain_c4", "kind": "concurrent", "concurrency": 4, "replicates": 2}, {"name": "k", "kind": "control_prompt"}]}')
load=$(submit '{"backends": ["tiny"], "prompts": ["The history of the printing press begins", "Once upon a time"], "n_predict": 8,
  "conditions": [{"name": "load_c", "kind": "load", "load": {"arrival": "concurrency", "levels": [1, 2], "duration_s": 2, "probes": 2,
  "prompt_tokens": [8, 32], "output_tokens": 8}}, {"name": "k", "kind": "control_prompt"}]}')
certify=$(submit '{"preset": "certify-batch-invariant", "backends": ["tiny"], "n_predict": 8, "certify": {"budget_requests": 90}}')
spec_hash=$(curl -sf "${auth[@]}" "$daemon/v1/audits/$s1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["spec_hash"])')
echo "seeded: series $s1 $s2 $s3, xss $xss, seed protocol $seed, threshold search $search, sweep $sweep"

cd "$repo/tests/console"
if [[ -n ${CONSOLE_TEST_HOLD:-} ]]; then  # for working on the console: keep the seeded daemon up
  echo "holding: DAEMON_URL=$daemon TOKEN=$token SERIES_AUDITS=$s1,$s2,$s3 XSS_AUDIT=$xss SEED_AUDIT=$seed SPEC_HASH=$spec_hash ARTIFACTS=$artifacts"
  sleep "$CONSOLE_TEST_HOLD"
fi
DAEMON_URL=$daemon TOKEN=$token ARTIFACTS=$artifacts SERIES_AUDITS="$s1,$s2,$s3" XSS_AUDIT=$xss SEED_AUDIT=$seed \
  SEARCH_AUDIT=$search SWEEP_AUDIT=$sweep KVU_AUDIT=$kvu LOAD_AUDIT=$load CERTIFY_AUDIT=$certify \
  SPEC_HASH=$spec_hash node console.test.mjs
npx --no-install redocly lint --format stylish "$daemon/openapi.json" >"$state/lint.txt" 2>&1 || { cat "$state/lint.txt" >&2; fail "redocly lint"; }
grep -q "Your API description is valid" "$state/lint.txt" || { cat "$state/lint.txt" >&2; fail "redocly lint reported problems"; }
echo "console test passed (screenshots in $artifacts)"
