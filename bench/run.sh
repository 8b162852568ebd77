#!/usr/bin/env bash
# The benchmarks, side by side with their baselines, in one command: builds in Release, runs
# every figure below, prints one table with the change against the previous results, and
# writes bench/results/latest.json (the previous one is kept as bench/results/previous.json).
#
#   1. arrival spread at the server, C = 8/64/256: logitaudit vs Python threads, asyncio,
#      curl --parallel, and the floor the fake server itself adds       (bench_burst)
#   2. throughput with all the work (parse, digests, SQLite) vs wrk     (bench_throughput)
#   3. overhead on a real llama-server (tiny): serial wall time / the server's own time, on a
#      server without counters and on one with them (--metrics: one more read after each solo
#      request, the evidence that it ran alone); and what streaming costs: tokens/s of streamed bursts against plain ones, alternately  (bench_streaming)
#   4. the API over a database of 1,000,000 streams: the rate they were stored at, and report and
#      runs p50/p99 with 100 connections (wrk), on SQLite and then on PostgreSQL
#   5. logitauditd's memory: idle, during a 256-wide burst, serving the 1M-stream database
#   6. load: 50 connections of API reads (list, status, report, runs, bursts, metrics) while a
#      64-wide burst audit runs; that audit's launch spread and wall time then and when idle
#   7. the web console: the audit page of the seed protocol on two real llama-servers (130 runs)
#      in chromium, navigation to tables and charts drawn, beside its API reads alone; the
#      bytes everything the console serves takes, plain and gzip-compressed
#   8. the load generator: constant arrivals at 100 to 2,000 requests/s against the in-process
#      fake backend (achieved and served rate, arrival lateness p50/p99, memory), beside a
#      standard-library asyncio generator on the same schedule               (bench_load)
#   9. the measuring thread under API load: the daemon with its audits' thread ordinary, at
#      SCHED_FIFO, and refused it (an unprivileged user: the short slice); a 64-wide burst's
#      launch spread and a 500 requests/s load level's arrival lateness beside 50 wrk
#      connections of API reads                                        (bench/measuring_thread.sh)
#
# Usage: bench/run.sh [--quick]   (--quick: fewer bursts, 100,000 streams; for a smoke run)
#   BENCH_STEPS="4 6" bench/run.sh runs only those steps (the table shows what ran)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
quick=0
[[ ${1:-} == --quick ]] && quick=1
bursts=20; history=1000000; seconds=10
[[ $quick -eq 1 ]] && { bursts=5; history=100000; seconds=3; }
build=${LOGITAUDIT_BENCH_BUILD_DIR:-build-release}
results=bench/results
tmp=$(mktemp -d /tmp/logitaudit-bench-XXXXXX)
parts=$tmp/parts
mkdir -p "$results" "$parts"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
say() { echo "bench: $*" >&2; }
failed=()  # steps whose benchmark failed: the table is still printed, and the run exits 1
failure() { say "$*"; failed+=("$*"); }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_url() {  # URL [LOG]
  for _ in $(seq 1 600); do curl -sf "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done
  say "$1 did not answer"
  [[ -n ${2:-} ]] && tail -20 "$2" >&2
  exit 1
}
want() { [[ " ${BENCH_STEPS:-1 2 3 4 5 6 7 8 9} " == *" $1 "* ]]; }  # BENCH_STEPS="4 6" runs only those
rss() { python3 bench/report.py rss "$1"; }
# Starts logitauditd on DB with extra args; sets $daemon_pid and $daemon_url.
start_daemon() {
  local db=$1; shift
  local p; p=$(port)
  "$build/daemon/logitauditd" --listen "127.0.0.1:$p" --db "$db" "$@" >"$tmp/daemon-$p.log" 2>&1 &
  daemon_pid=$!; pids+=("$daemon_pid")
  daemon_url=http://127.0.0.1:$p
  wait_url "$daemon_url/readyz" "$tmp/daemon-$p.log"
}
submit() { curl -sf -XPOST "$daemon_url/v1/audits" -H 'Content-Type: application/json' -d "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'; }
wait_audit() {
  for _ in $(seq 1 6000); do
    st=$(curl -sf "$daemon_url/v1/audits/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
    [[ $st == queued || $st == running ]] || { echo "$st"; return 0; }
    sleep 0.1
  done
  echo timeout
}

bash scripts/bootstrap.sh
bash scripts/get-llama-server.sh
say "building ($build, Release)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
# Every benchmark program (the `benchmarks` target, which the test command also compiles) and
# the programs the steps run.
cmake --build "$build" -j "$(nproc)" --target benchmarks logitauditd logitaudit logitaudit-make-model >/dev/null

python3 - "$parts/machine.json" <<'PY'
import json, os, platform, sys, datetime
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem = next((int(l.split()[1]) // 1024 for l in open("/proc/meminfo") if l.startswith("MemTotal")), 0)
json.dump({"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "cpu": cpu,
           "cores": os.cpu_count(), "memory_mb": mem, "kernel": platform.release()}, open(sys.argv[1], "w"))
PY

if want 1; then
  say "1/9 arrival spread ($bursts bursts per level)"
  "$build/bench/bench_burst" "$bursts" --json "$parts/burst.json" >&2
fi

if want 2; then
  say "2/9 throughput vs wrk"
  "$build/bench/bench_throughput" --seconds "$seconds" --json "$parts/throughput.json" >&2
fi

if want 3; then
  say "3/9 overhead on a real llama-server (tiny)"
  mkdir -p .cache/models
  [[ -f .cache/models/tiny.gguf ]] || "$build/tools/logitaudit-make-model" --preset tiny --seed 7 --out .cache/models/tiny.gguf >&2
  p=$(port)
  .cache/bin/llama-server -m .cache/models/tiny.gguf --host 127.0.0.1 --port "$p" -np 8 -t "$(nproc)" --no-webui \
    >"$tmp/llama.log" 2>&1 &
  llama_pid=$!; pids+=("$llama_pid")
  wait_url "http://127.0.0.1:$p/health" "$tmp/llama.log"
  "$build/cli/logitaudit" run --backend "tiny=http://127.0.0.1:$p" --db "$tmp/overhead.db" --format csv >/dev/null 2>&1 || true
  python3 bench/report.py overhead "$tmp/overhead.db" >"$parts/overhead.json"
  # What streaming costs (bursts stream so that their decode steps can be reconstructed):
  # plain and streamed bursts alternately, on the same server, in one run.
  "$build/bench/bench_streaming" --url "http://127.0.0.1:$p" --bursts "$bursts" --width 4 --n-predict 64 \
    --json "$parts/streaming.json" >&2 || failure "the streaming benchmark had failures"
  kill "$llama_pid"
  # The same on a server with counters: each solo request is followed by a read of them.
  p=$(port)
  .cache/bin/llama-server -m .cache/models/tiny.gguf --host 127.0.0.1 --port "$p" -np 8 -t "$(nproc)" --no-webui --metrics \
    >"$tmp/llama-metrics.log" 2>&1 &
  llama_pid=$!; pids+=("$llama_pid")
  wait_url "http://127.0.0.1:$p/health" "$tmp/llama-metrics.log"
  "$build/cli/logitaudit" run --backend "tiny=http://127.0.0.1:$p" --db "$tmp/overhead-counters.db" --format csv >/dev/null 2>&1 || true
  python3 bench/report.py overhead "$tmp/overhead-counters.db" >"$parts/overhead_counters.json"
  kill "$llama_pid"
  cat "$parts/overhead.json" "$parts/overhead_counters.json" >&2
fi

memory='{}'
if want 5 || want 6; then
  "$build/bench/fake_server" --delay-ms 20 >"$tmp/fake.url" &
  pids+=($!)
  for _ in $(seq 1 100); do [[ -s $tmp/fake.url ]] && break; sleep 0.05; done
  fake=$(head -1 "$tmp/fake.url")
  start_daemon "$tmp/empty.db" --backend "f=$fake"
  if want 5; then
    say "5/9 memory: idle, and during a 256-wide burst audit"
    idle_mb=$(rss "$daemon_pid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["rss_mb"])')
    id=$(submit '{"preset":"seed-protocol","backends":["f"],"n_predict":8,"prompts":["a b","c d"],"conditions":[{"name":"c256","kind":"concurrent","concurrency":256,"replicates":3},{"name":"k","kind":"control_prompt"}],"predictions":[]}')
    [[ $(wait_audit "$id") == done ]] || failure "the 256-wide audit did not finish cleanly"
    burst_mb=$(rss "$daemon_pid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["peak_mb"])')
    memory="{\"idle_mb\": $idle_mb, \"burst_peak_mb\": $burst_mb}"
  fi
  if want 6; then
    say "6/9 load: 50 connections of API reads during a 64-wide burst audit"
    spec64='{"preset":"seed-protocol","backends":["f"],"n_predict":8,"prompts":["a b","c d"],"conditions":[{"name":"concurrent_c64","kind":"concurrent","concurrency":64,"replicates":10},{"name":"k","kind":"control_prompt"}],"predictions":[]}'
    t0=$(date +%s.%N); idle_id=$(submit "$spec64"); wait_audit "$idle_id" >/dev/null; t1=$(date +%s.%N)
    curl -sf "$daemon_url/v1/audits/$idle_id/bursts" >"$tmp/idle_bursts.json"
    loaded_id=$(( idle_id + 1 ))
    # The heavy routes too: every run of an audit, its bursts, its report, the list, the metrics.
    cat >"$tmp/poll.lua" <<LUA
local paths = {"/v1/audits/$idle_id", "/v1/audits/$idle_id/report", "/v1/audits/$idle_id/runs",
               "/v1/audits/$idle_id/bursts", "/v1/audits?limit=50", "/metrics", "/v1/audits?status=running"}
local i = 0
request = function() i = i + 1; return wrk.format("GET", paths[i % #paths + 1]) end
LUA
    # One wrk thread: on two cores the other stays for the daemon and the fake backend.
    wrk -t1 -c50 -d$((seconds + 5))s --latency -s "$tmp/poll.lua" "$daemon_url" >"$tmp/load_wrk.txt" 2>&1 &
    wrk_pid=$!
    sleep 1
    t2=$(date +%s.%N)
    [[ $(submit "$spec64") == "$loaded_id" ]] || failure "unexpected audit id"
    wait_audit "$loaded_id" >/dev/null
    t3=$(date +%s.%N)
    wait "$wrk_pid" || true
    curl -sf "$daemon_url/v1/audits/$loaded_id/bursts" >"$tmp/loaded_bursts.json"
    python3 - "$parts/load.json" "$tmp" "$t0" "$t1" "$t2" "$t3" <<'PY'
import json, subprocess, sys
tmp = sys.argv[2]
t0, t1, t2, t3 = map(float, sys.argv[3:7])
run = lambda *a: json.loads(subprocess.check_output(["python3", "bench/report.py", *a]))
idle, loaded = run("spreads", f"{tmp}/idle_bursts.json"), run("spreads", f"{tmp}/loaded_bursts.json")
ratio = loaded["median_us"] / idle["median_us"] if idle["median_us"] and loaded["median_us"] else None
json.dump({"idle": idle, "loaded": loaded, "ratio": ratio, "idle_audit_s": round(t1 - t0, 2),
           "loaded_audit_s": round(t3 - t2, 2), "api": run("wrk", f"{tmp}/load_wrk.txt"), "connections": 50},
          open(sys.argv[1], "w"))
PY
    cat "$parts/load.json" >&2
  fi
  kill "$daemon_pid"
fi

if want 4; then
  say "4/9 the API over $history stored streams (100 connections), SQLite then PostgreSQL"
  "$build/bench/bench_history" "$tmp/history.db" "$history" >"$tmp/history.txt"
  cat "$tmp/history.txt" >&2
  last=$(tail -1 "$tmp/history.txt")
  start_daemon "$tmp/history.db"
  wrk -t2 -c100 -d${seconds}s --latency "$daemon_url/v1/audits/$last/report" >"$tmp/report_wrk.txt" 2>&1
  wrk -t2 -c100 -d${seconds}s --latency "$daemon_url/v1/audits/$last/runs" >"$tmp/runs_wrk.txt" 2>&1
  history_mb=$(rss "$daemon_pid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["peak_mb"])')
  # The same database on PostgreSQL: a private cluster with durable commits (as a real one).
  pg_url=$(bash scripts/postgres-cluster.sh start "$tmp/pg.state" --durable)
  pg_stop() { bash scripts/postgres-cluster.sh stop "$tmp/pg.state"; }
  trap 'pg_stop; cleanup' EXIT
  "$build/bench/bench_history" "$pg_url" "$history" >"$tmp/history_pg.txt"
  cat "$tmp/history_pg.txt" >&2
  last_pg=$(tail -1 "$tmp/history_pg.txt")
  start_daemon "$pg_url"
  wrk -t2 -c100 -d${seconds}s --latency "$daemon_url/v1/audits/$last_pg/report" >"$tmp/report_pg_wrk.txt" 2>&1
  wrk -t2 -c100 -d${seconds}s --latency "$daemon_url/v1/audits/$last_pg/runs" >"$tmp/runs_pg_wrk.txt" 2>&1
  python3 - "$parts/history.json" "$tmp" "$history" <<'PY'
import json, re, subprocess, sys
tmp = sys.argv[2]
run = lambda *a: json.loads(subprocess.check_output(["python3", "bench/report.py", *a]))
rate = lambda f: float(re.search(r"\(([0-9.]+) streams/s\)", open(f).read()).group(1))
json.dump({"streams": int(sys.argv[3]), "ingest_sps": rate(f"{tmp}/history.txt"),
           "report": run("wrk", f"{tmp}/report_wrk.txt"), "runs": run("wrk", f"{tmp}/runs_wrk.txt"),
           "postgresql": {"ingest_sps": rate(f"{tmp}/history_pg.txt"), "report": run("wrk", f"{tmp}/report_pg_wrk.txt"),
                          "runs": run("wrk", f"{tmp}/runs_pg_wrk.txt")},
           "connections": 100}, open(sys.argv[1], "w"))
PY
  cat "$parts/history.json" >&2
  memory=$(python3 -c 'import json,sys; m=json.loads(sys.argv[1]); m["history_mb"]=float(sys.argv[2]); print(json.dumps(m))' "$memory" "$history_mb")
fi
echo "$memory" >"$parts/memory.json"

[[ -f $results/latest.json ]] && cp "$results/latest.json" "$results/previous.json"
echo
if want 7; then
  say "7/9 the console's audit page (130 runs) in chromium"
  bash scripts/bootstrap.sh --test
  mkdir -p .cache/models
  declare -A llama_url
  for preset in tiny small; do
    [[ -f .cache/models/$preset.gguf ]] || "$build/tools/logitaudit-make-model" --preset "$preset" --seed 7 --out ".cache/models/$preset.gguf" >&2
    p=$(port)
    # One thread each: two servers on two cores do not fight over them (the audit runs both at once).
    .cache/bin/llama-server -m ".cache/models/$preset.gguf" --host 127.0.0.1 --port "$p" -np 8 -t 1 --metrics --no-webui \
      >"$tmp/llama-$preset.log" 2>&1 &
    pids+=($!)
    llama_url[$preset]=http://127.0.0.1:$p
    wait_url "http://127.0.0.1:$p/health" "$tmp/llama-$preset.log"
  done
  p=$(port)
  "$build/daemon/logitauditd" --listen "127.0.0.1:$p" --db "$tmp/console.db" --backend "tiny=${llama_url[tiny]}" \
    --backend "small=${llama_url[small]}" >"$tmp/console-daemon.log" 2>&1 &
  pids+=($!)
  wait_url "http://127.0.0.1:$p/readyz" "$tmp/console-daemon.log"
  LOGITAUDIT_SERVER=http://127.0.0.1:$p "$build/cli/logitaudit" submit --preset seed-protocol --backend tiny --backend small \
    --wait --format csv >/dev/null
  node bench/console_bench.mjs "http://127.0.0.1:$p" 1 >"$parts/console.json"
  cat "$parts/console.json" >&2
fi

if want 8; then
  say "8/9 the load generator vs a Python asyncio generator (constant arrivals, fake backend)"
  "$build/bench/bench_load" --rates 100,500,1000,2000 --seconds "$seconds" --python bench/py_load.py >&2 ||
    failure "the load generator benchmark failed"
fi

if want 9; then
  say "9/9 the measuring thread under API load: ordinary, SCHED_FIFO, unprivileged (short slice)"
  bash bench/measuring_thread.sh "$build" "$parts/measuring.json" >&2 || failure "the measuring-thread benchmark failed"
fi

python3 bench/report.py merge "$results/latest.json" "$results/previous.json" "$parts"
echo
echo "written: $results/latest.json (previous: $results/previous.json)"
if [[ ${#failed[@]} -gt 0 ]]; then
  printf 'bench: FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
