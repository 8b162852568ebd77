#!/usr/bin/env bash
# bench/run.sh step 9: where the launch-spread and arrival-lateness tail under API load comes
# from. One logitauditd per scheduling of its audits' thread (measurement_priority 0: ordinary;
# 10: SCHED_FIFO; 10 as an unprivileged user: refused, so the short slice), each against the
# fake backend: a 64-wide burst audit idle, then beside 50 wrk connections of API reads another
# one and a load audit (constant 500 requests/s for 8 s). Prints one JSON line per scheduling
# and writes them to OUT_JSON as one object, by scheduling.
# Usage: bench/measuring_thread.sh BUILD_DIR OUT_JSON
set -uo pipefail
build=$1 out=$2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
tmp=$(mktemp -d /tmp/logitaudit-measuring-XXXXXX)
chmod 755 "$tmp"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
"$build/bench/fake_server" --delay-ms 20 >"$tmp/fake.url" &
pids+=($!)
for _ in $(seq 100); do [[ -s $tmp/fake.url ]] && break; sleep 0.05; done
fake=$(head -1 "$tmp/fake.url")
burst='{"preset":"seed-protocol","backends":["f"],"n_predict":8,"prompts":["a b","c d"],"conditions":[{"name":"concurrent_c64","kind":"concurrent","concurrency":64,"replicates":10},{"name":"k","kind":"control_prompt"}],"predictions":[]}'
load='{"preset":"seed-protocol","backends":["f"],"n_predict":8,"prompts":["a b","c d"],"conditions":[{"name":"l","kind":"load","load":{"arrival":"constant","levels":[500],"duration_s":8,"probes":2,"prompt_tokens":{"values":[8]},"output_tokens":{"values":[4]},"max_in_flight":256}},{"name":"k","kind":"control_prompt"}],"predictions":[]}'
: >"$tmp/lines"
one() {  # NAME PRIORITY [RUNAS...]
  local name=$1 prio=$2; shift 2
  local d=$tmp/$name p u
  mkdir -p "$d" && chmod 777 "$d"
  echo "{\"measurement_priority\": $prio}" >"$d/conf.json"
  p=$(port); u=http://127.0.0.1:$p
  "$@" "$build/daemon/logitauditd" --config "$d/conf.json" --listen "127.0.0.1:$p" --db "$d/a.db" --backend "f=$fake" >"$d/log" 2>&1 &
  local dp=$!; pids+=($dp)
  for _ in $(seq 100); do curl -sf "$u/readyz" >/dev/null && break; sleep 0.1; done
  submit() { curl -sf -XPOST "$u/v1/audits" -H 'Content-Type: application/json' -d "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
  finish() { for _ in $(seq 3000); do s=$(curl -sf "$u/v1/audits/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])'); [[ $s == queued || $s == running ]] || return 0; sleep 0.1; done; }
  local idle; idle=$(submit "$burst"); finish "$idle"
  cat >"$d/poll.lua" <<LUA
local paths = {"/v1/audits/$idle", "/v1/audits/$idle/report", "/v1/audits/$idle/runs", "/v1/audits/$idle/bursts", "/v1/audits?limit=50", "/metrics"}
local i = 0
request = function() i = i + 1; return wrk.format("GET", paths[i % #paths + 1]) end
LUA
  wrk -t1 -c50 -d25s --latency -s "$d/poll.lua" "$u" >"$d/wrk.txt" 2>&1 &
  local wp=$!
  sleep 1
  local loaded; loaded=$(submit "$burst"); finish "$loaded"
  local level; level=$(submit "$load"); finish "$level"
  wait "$wp"
  curl -sf "$u/v1/audits/$idle/bursts" >"$d/idle.json"
  curl -sf "$u/v1/audits/$loaded/bursts" >"$d/loaded.json"
  curl -sf "$u/v1/audits/$level/report" >"$d/level.json"
  curl -sf "$u/v1/audits/$level/fingerprints" >"$d/fp.json"
  kill "$dp"; wait "$dp" 2>/dev/null
  python3 - "$name" "$d" >>"$tmp/lines" <<'PY'
import json, subprocess, sys
name, d = sys.argv[1:3]
run = lambda *a: json.loads(subprocess.check_output(["python3", "bench/report.py", *a]))
def find(o, key):
    if isinstance(o, dict):
        if key in o: return o[key]
        o = list(o.values())
    if isinstance(o, list):
        for v in o:
            r = find(v, key)
            if r is not None: return r
    return None
level = json.load(open(f"{d}/level.json"))
late = find(level, "arrival_lateness_us") or {}
fp = json.load(open(f"{d}/fp.json"))
print(json.dumps({"scheduling": name, "thread": find(fp, "measurement_thread"),
                  "burst_idle": run("spreads", f"{d}/idle.json"), "burst_api_load": run("spreads", f"{d}/loaded.json"),
                  "arrival_lateness_us": {k: round(late[k], 1) for k in ("p50", "p90", "p99") if k in late},
                  "achieved_rps": find(level, "achieved_rps"), "api": run("wrk", f"{d}/wrk.txt")}))
PY
}
one ordinary 0
one fifo 10
nobody=$(id -u nobody 2>/dev/null || echo 65534)
one unprivileged 10 setpriv --reuid="$nobody" --regid="$nobody" --clear-groups
cat "$tmp/lines"
python3 -c 'import json,sys; rows=[json.loads(l) for l in open(sys.argv[1])]; json.dump({r["scheduling"]: r for r in rows}, open(sys.argv[2], "w"), indent=2)' "$tmp/lines" "$out"
