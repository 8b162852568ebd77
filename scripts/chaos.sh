#!/usr/bin/env bash
# The chaos suite: each fault of production injected into real processes (a real llama-server
# on the generated tiny model, logitauditd, a private PostgreSQL cluster, a small file system
# for SQLite), and one table of what happened: the fault, what the user sees (the exact
# words), the time to detect it, the time to recover, streams lost and doubled (both must be
# 0), and what `logitaudit verify` says of the database afterwards.
#
# Streams lost: planned requests with no stored row at the end (a run recorded as failed or not
# run is stored, with its reason). Doubled: stored rows beyond one per (group, request).
# Usage: scripts/chaos.sh [--only NAME,NAME...] [--out FILE]
#   names: hung sigterm restart slow reset 5xx malformed pg-halt pg-restart disk-full read-only
#          kill-9 clock
#   --out FILE  the table in Markdown (default .cache/chaos/table.md); it is printed too
# Needs root for the small file systems (mount -t tmpfs); a row it cannot run says so.
# About 6 minutes on 2 cores (the PostgreSQL halt alone is 75 s).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
only="" out=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --only) only=${2:?--only needs names}; shift 2 ;;
    --out) out=${2:?--out needs a file}; shift 2 ;;
    *) sed -n 2,16p "$0" >&2; exit 2 ;;
  esac
done
build=${LOGITAUDIT_BUILD_DIR:-build}
state=$repo/.cache/chaos
out=${out:-$state/table.md}
say() { echo "chaos: $*" >&2; }
rm -rf "$state/run" && mkdir -p "$state/run" "$state/out" "$state/models"
# shellcheck source=scripts/findings-lib.sh
source scripts/findings-lib.sh
bash scripts/get-llama-server.sh >/dev/null
build_tools
tiny=$(model tiny Q4_K_M)
llama=${LOGITAUDIT_LLAMA_SERVER:-$repo/.cache/bin/llama-server}
pg_script=$repo/scripts/postgres-cluster.sh
proxy=$repo/scripts/chaos-proxy.py
rows=()
mounts=()
clusters=()
cleanup() {
  stop_started
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || true; done
  for c in "${clusters[@]}"; do bash "$pg_script" stop "$c" >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

wanted() { [[ -z $only || ,$only, == *,$1,* ]]; }
now() { date +%s.%N; }
secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f} s')" "$1" "$2"; }
row() { rows+=("| $1 | $2 | $3 | $4 | $5 | $6 | $7 |"); say "$1: $2 | detect $3 | recover $4 | lost $5 | doubled $6 | verify $7"; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {'d': d}))" "$1"; }

serve_llama() {  # PORT NP [FLAGS...]: a llama-server on the tiny model; its pid in $served_pid
  local port=$1 np=$2
  shift 2
  "$llama" -m "$tiny" --port "$port" -np "$np" -c $((np * 512)) -t 2 --metrics --threads-http 16 "$@" \
    >"$state/run/llama-$port.log" 2>&1 &
  served_pid=$!
  pids+=("$served_pid")
  for _ in $(seq 1 600); do curl -sf -m 1 "http://127.0.0.1:$port/health" >/dev/null && return 0; sleep 0.1; done
  say "llama-server on $port did not start"; tail -5 "$state/run/llama-$port.log" >&2; return 1
}
start_proxy() {  # UPSTREAM LISTEN FAULT [FROM] [COUNT]
  python3 "$proxy" "$@" >"$state/run/proxy-$2.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do curl -sf -m 1 "http://127.0.0.1:$2/health" >/dev/null && return 0; sleep 0.05; done
}
daemon_up() {  # NAME DB PORT [ARGS...]: logitauditd; its pid in $daemon_pid, its log $state/run/NAME.log
  local name=$1 db=$2 port=$3
  shift 3
  "$build/daemon/logitauditd" --db "$db" --listen "127.0.0.1:$port" "$@" >>"$state/run/$name.log" 2>&1 &
  daemon_pid=$!
  pids+=("$daemon_pid")
  for _ in $(seq 1 300); do curl -sf -m 2 "http://127.0.0.1:$port/readyz" >/dev/null && return 0; sleep 0.1; done
  say "logitauditd $name did not become ready"; tail -5 "$state/run/$name.log" >&2; return 1
}
spec() {  # N_PREDICT: the seed protocol (70 requests: baselines, repeats, bursts, the controls, the observer)
  echo '{"preset":"seed-protocol","backends":["b"],"n_predict":'"$1"'}'
}
submit() {  # PORT SPEC: the audit's id
  curl -sf -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$1/v1/audits" -d "$2" | json 'd["id"]'
}
wait_end() {  # PORT ID: the audit's JSON once it has ended (or after 10 minutes)
  local j
  for _ in $(seq 1 20); do
    j=$(curl -s -m 40 "http://127.0.0.1:$1/v1/audits/$2?wait=30" || true)
    case $(json 'd.get("status", "")' <<<"$j" 2>/dev/null || true) in
      queued | running | "") ;;
      *) echo "$j"; return ;;
    esac
    sleep 0.2
  done
  echo "$j"
}
done_at_least() {  # PORT ID N: waits until N requests of the audit are done
  for _ in $(seq 1 20); do
    local d
    d=$(curl -s -m 70 "http://127.0.0.1:$1/v1/audits/$2?wait=60&done=$(($3 - 1))" | json 'd["progress"]["done"]' || echo 0)
    [[ $d -ge $3 ]] && return 0
  done
}
counts() {  # PORT ID: "LOST DOUBLED" from the stored runs against the plan
  curl -s "http://127.0.0.1:$1/v1/audits/$2/runs" | python3 -c '
import json, sys
runs = json.load(sys.stdin)["runs"]
total = int(sys.argv[1])
pairs = {(r["group"], r["request"]) for r in runs}
print(max(0, total - len(pairs)), len(runs) - len(pairs))' "$(curl -s "http://127.0.0.1:$1/v1/audits/$2" | json 'd["progress"]["total"]')"
}
verify() {  # DB: "passed" or the first problem
  local v
  if v=$("$cli" verify "$1" 2>&1); then echo "passed"; else echo "FAILED: $(grep -m1 -i mismatch <<<"$v" | cut -c1-120)"; fi
}
words() { tr '\n\t' '  ' <<<"$1" | tr -s ' ' | cut -c1-"${2:-170}" | sed 's/|/\\|/g; s/ *$//'; }
log_time() {  # FILE PATTERN: the Unix time of the first log line matching PATTERN
  local line
  line=$(grep -m1 -- "$2" "$1" || true)
  [[ -z $line ]] && { echo ""; return; }
  date -d "$(sed -E 's/^\[([^]]+)\].*/\1/' <<<"$line")" +%s.%N
}

backend_row() {  # NAME FAULT FROM COUNT N_PREDICT TIMEOUT DESCRIPTION: a proxy fault on a real server
  local name=$1 fault=$2 from=$3 n=$4 np=$5 timeout=$6 what=$7
  local up ppt dport db id end t0 t_end detect error status lc
  up=$(free_port) ppt=$(free_port) dport=$(free_port) db=$state/run/$name.db
  serve_llama "$up" 4
  start_proxy "$up" "$ppt" "$fault" "$from" "$n"
  daemon_up "$name" "$db" "$dport" --backend "b=http://127.0.0.1:$ppt" --backend-timeout "$timeout"
  t0=$(now)
  id=$(submit "$dport" "$(spec "$np")")
  end=$(wait_end "$dport" "$id")
  t_end=$(now)
  status=$(json 'd["status"]' <<<"$end")
  error=$(json 'd.get("error") or ""' <<<"$end")
  local fault_at
  fault_at=$(grep -m1 -o '^[0-9.]*' "$state/run/proxy-$ppt.log" || echo "$t0")
  detect="-"
  case $fault in
    hang) detect=$(secs "$fault_at" "$(log_time "$state/run/$name.log" " hung: ")") ;;
    reset | status503) detect=$(secs "$fault_at" "$(log_time "$state/run/$name.log" "retrying")") ;;
    malformed | truncated) detect=$(secs "$fault_at" "$t_end") ;;
  esac
  lc=$(counts "$dport" "$id")
  local warned
  warned=$(grep -m1 -o 'group [0-9]* attempt 1 failed .*' "$state/run/$name.log" | cut -c1-230 || true)
  row "$what" "$(words "${warned:+warning: $warned; then }$status: ${error:-no error}" 300)" "$detect" "ended $(secs "$fault_at" "$t_end") after it" \
    "${lc% *}" "${lc#* }" "$(verify "$db")"
  stop_started; pids=()
}

if wanted hung; then
  say "a hung backend: /health answers, completions from the 20th on never do"
  backend_row hung hang 20 0 16 10 "hung backend: a proxy answers \`/health\` and holds every completion from the 20th on (\`--backend-timeout 10\`)"
fi
if wanted slow; then
  say "a slow backend: every streamed piece held 1 s"
  backend_row slow drip 1 0 4 20 "slow backend: a proxy holds every streamed piece 1 s (4 tokens)"
fi
if wanted reset; then
  say "connection reset mid-stream"
  backend_row reset reset 30 2 16 20 "connection reset mid-answer (completions 30 and 31)"
fi
if wanted 5xx; then
  say "HTTP 503"
  backend_row 5xx status503 30 3 16 20 "HTTP 503 (completions 30 to 32)"
fi
if wanted malformed; then
  say "malformed and truncated JSON"
  backend_row malformed malformed 30 1 16 20 "malformed JSON (\`<html>not json</html>\` as a 200, completion 30)"
  backend_row truncated truncated 30 1 16 20 "truncated JSON (a 200 cut mid-object, completion 30)"
fi

if wanted sigterm; then
  say "a real llama-server sent SIGTERM while its slots generate"
  up=$(free_port) dport=$(free_port) db=$state/run/sigterm.db
  serve_llama "$up" 8
  llama_pid=$served_pid
  daemon_up sigterm "$db" "$dport" --backend "b=http://127.0.0.1:$up" --backend-timeout 10
  id=$(submit "$dport" "$(spec 64)")
  done_at_least "$dport" "$id" 4
  t0=$(now)
  kill -TERM "$llama_pid"
  sleep 6
  alive=no health=no
  kill -0 "$llama_pid" 2>/dev/null && alive=yes
  curl -sf -m 2 "http://127.0.0.1:$up/health" >/dev/null && health=yes
  end=$(wait_end "$dport" "$id")
  t_end=$(now)
  lc=$(counts "$dport" "$id")
  row "real llama-server (tiny, \`-np 8\`) sent SIGTERM mid-generation; 6 s later alive: $alive, \`/health\` ok: $health" \
    "$(words "$(json 'd["status"]' <<<"$end"): $(json 'd.get("error") or ""' <<<"$end")")" \
    "ended $(secs "$t0" "$t_end") after SIGTERM" "-" "${lc% *}" "${lc#* }" "$(verify "$db")"
  stop_started; pids=()
fi

if wanted restart; then
  say "a backend killed and restarted on its port 2 s later"
  up=$(free_port) dport=$(free_port) db=$state/run/restart.db
  serve_llama "$up" 4
  daemon_up restart "$db" "$dport" --backend "b=http://127.0.0.1:$up" --backend-timeout 30
  id=$(submit "$dport" "$(spec 32)")
  done_at_least "$dport" "$id" 12
  t0=$(now)
  kill -9 "$served_pid"
  sleep 2
  t_up=$(now)
  serve_llama "$up" 4
  end=$(wait_end "$dport" "$id")
  t_end=$(now)
  lc=$(counts "$dport" "$id")
  row "llama-server SIGKILLed mid-audit, restarted on its port 2 s later" \
    "$(words "warning: $(grep -m1 -o 'group [0-9]* attempt 1 failed .*' "$state/run/restart.log" | cut -c1-170 || true); then $(json 'd["status"]' <<<"$end"): $(json 'd.get("error") or "no error"' <<<"$end")" 300)" \
    "$(secs "$t0" "$(log_time "$state/run/restart.log" "retrying")")" "audit ended $(secs "$t_up" "$t_end") after the restart" \
    "${lc% *}" "${lc#* }" "$(verify "$db")"
  stop_started; pids=()
fi

if wanted kill-9; then
  say "logitauditd SIGKILLed mid-audit and started again"
  up=$(free_port) dport=$(free_port) db=$state/run/kill9.db
  serve_llama "$up" 4
  daemon_up kill9 "$db" "$dport" --backend "b=http://127.0.0.1:$up"
  id=$(submit "$dport" "$(spec 32)")
  done_at_least "$dport" "$id" 12
  kill -9 "$daemon_pid"
  wait "$daemon_pid" 2>/dev/null || true
  t0=$(now)
  daemon_up kill9 "$db" "$dport" --backend "b=http://127.0.0.1:$up"
  t_ready=$(now)
  end=$(wait_end "$dport" "$id")
  t_end=$(now)
  lc=$(counts "$dport" "$id")
  row "logitauditd SIGKILLed mid-audit (12 or more of 70 requests done), started again" \
    "$(words "$(grep -m1 -o 'audit [0-9]* was left running; [a-z ]*' "$state/run/kill9.log"); then $(json 'd["status"]' <<<"$end")")" \
    "ready $(secs "$t0" "$t_ready") after the start" "audit ended $(secs "$t0" "$t_end") after the start" \
    "${lc% *}" "${lc#* }" "$(verify "$db")"
  stop_started; pids=()
fi

schedule_spec() { echo '{"cron":"* * * * *","spec":'"$(spec 4)"'}'; }
fires() { curl -s -m 5 "http://127.0.0.1:$1/v1/schedules/$2/history" | json 'len(d["runs"])' 2>/dev/null || echo "?"; }
until_true() {  # SECONDS COMMAND...: polls COMMAND every 0.2 s
  local limit=$1
  shift
  for _ in $(seq 1 $((limit * 5))); do "$@" && return 0; sleep 0.2; done
  return 1
}
not_ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' -m 5 "http://127.0.0.1:$1/readyz") == 503 ]]; }
ready() { [[ $(curl -s -o /dev/null -w '%{http_code}' -m 5 "http://127.0.0.1:$1/readyz") == 200 ]]; }
fires_are() { [[ $(fires "$1" "$2") == "$3" ]]; }
set_clock() { echo "$2" >"$1.next" && mv "$1.next" "$1"; }

pg_outage() {  # NAME KIND (halt: SIGSTOP for 75 s; restart: stopped and started 5 s later)
  local name=$1 kind=$2 st url dport clock sid t0 t_detect t_back t_ready t_fire words_seen minute=1800000000
  st=$state/run/$name.pg
  url=$(bash "$pg_script" start "$st" --durable)
  clusters+=("$st")
  local pgdir
  pgdir=$(sed -n 2p "$st")
  local fake_up
  fake_up=$(free_port)
  serve_llama "$fake_up" 4
  dport=$(free_port) clock=$state/run/$name.clock
  set_clock "$clock" $((minute + 30))
  daemon_up "$name" "$url" "$dport" --backend "b=http://127.0.0.1:$fake_up" --clock-file "$clock"
  sid=$(curl -sf -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$dport/v1/schedules" -d "$(schedule_spec)" | json 'd["id"]')
  set_clock "$clock" $((minute + 61))
  until_true 60 fires_are "$dport" "$sid" 1 || true
  t0=$(now)
  if [[ $kind == halt ]]; then
    local pm
    pm=$(head -1 "$pgdir/data/postmaster.pid")
    kill -STOP "$pm"; pkill -STOP -P "$pm" || true
  else
    bash "$pg_script" halt "$st"
  fi
  set_clock "$clock" $((minute + 121))
  until_true 90 not_ready "$dport" || true
  t_detect=$(now)
  words_seen=$(curl -s -m 5 "http://127.0.0.1:$dport/readyz" | json 'd["error"]["message"]' 2>/dev/null || echo "?")
  set_clock "$clock" $((minute + 181))
  if [[ $kind == halt ]]; then
    sleep $((75 - ${t_detect%.*} + ${t0%.*}))
    local pm
    pm=$(head -1 "$pgdir/data/postmaster.pid")
    pkill -CONT -P "$pm" || true; kill -CONT "$pm"
  else
    sleep 5
    bash "$pg_script" resume "$st"
  fi
  t_back=$(now)
  until_true 120 ready "$dport" || true
  t_ready=$(now)
  until_true 120 fires_are "$dport" "$sid" 2 || true
  t_fire=$(now)
  sleep 3
  local n_late late_tag
  n_late=$(fires "$dport" "$sid")
  late_tag=$(curl -s "http://127.0.0.1:$dport/v1/audits?limit=1" | json '[t for t in d["audits"][0]["tags"] if t.startswith("fired_late")]' 2>/dev/null || echo "?")
  set_clock "$clock" $((minute + 241))
  until_true 60 fires_are "$dport" "$sid" 3 || true
  local n_after last lc
  n_after=$(fires "$dport" "$sid")
  last=$(curl -s "http://127.0.0.1:$dport/v1/schedules/$sid/history" | json 'd["runs"][0]["audit"]')
  wait_end "$dport" "$last" >/dev/null
  lc=$(counts "$dport" "$last")
  local desc="PostgreSQL halted (SIGSTOP) 75 s while a schedule fires every minute of an injected clock (two minutes pass in the outage)"
  [[ $kind == restart ]] && desc="PostgreSQL stopped (as a crash would) and started again 5 s later, a schedule firing every minute as above"
  row "$desc" "$(words "/readyz 503: $words_seen" 150); after: $n_late fires (the late one tagged $late_tag), then $n_after" \
    "$(secs "$t0" "$t_detect")" "ready $(secs "$t_back" "$t_ready"), late fire $(secs "$t_back" "$t_fire") after the database returned" \
    "${lc% *}" "${lc#* }" "$(verify "$url")"
  stop_started; pids=()
}
if wanted pg-halt; then say "PostgreSQL halted for 75 s"; pg_outage pg-halt halt; fi
if wanted pg-restart; then say "PostgreSQL restarted"; pg_outage pg-restart restart; fi

if wanted clock; then
  say "the wall clock stepped forward and back while a schedule runs"
  up=$(free_port) dport=$(free_port) clock=$state/run/clock.clock db=$state/run/clock.db minute=1800000000
  serve_llama "$up" 4
  set_clock "$clock" $((minute + 30))
  daemon_up clock "$db" "$dport" --backend "b=http://127.0.0.1:$up" --clock-file "$clock"
  sid=$(curl -sf -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$dport/v1/schedules" -d "$(schedule_spec)" | json 'd["id"]')
  set_clock "$clock" $((minute + 61)); until_true 60 fires_are "$dport" "$sid" 1 || true
  t0=$(now)
  set_clock "$clock" $((minute + 3 * 3600 + 10))  # three hours forward: 180 fires missed
  until_true 60 fires_are "$dport" "$sid" 2 || true
  t1=$(now)
  sleep 3
  after_forward=$(fires "$dport" "$sid")
  set_clock "$clock" $((minute + 3600 + 10))  # two hours back: nothing is due until the clock catches up
  sleep 4
  after_back=$(fires "$dport" "$sid")
  set_clock "$clock" $((minute + 3 * 3600 + 70)); until_true 60 fires_are "$dport" "$sid" 3 || true
  final=$(fires "$dport" "$sid")
  last=$(curl -s "http://127.0.0.1:$dport/v1/schedules/$sid/history" | json 'd["runs"][0]["audit"]')
  wait_end "$dport" "$last" >/dev/null
  lc=$(counts "$dport" "$last")
  row "the scheduler's clock stepped 3 h forward, then 2 h back, then on past the next minute" \
    "$(words "fires: 1, then $after_forward after the step forward ($(grep -m1 -o 'runs [0-9]* s late[^;]*' "$state/run/clock.log" || echo '?')), $after_back after the step back, $final at the next minute")" \
    "$(secs "$t0" "$t1")" "-" "${lc% *}" "${lc#* }" "$(verify "$db")"
  stop_started; pids=()
fi

sqlite_fs() {  # NAME KIND (full: a 32 MiB tmpfs filled mid-audit; ro: remounted read-only between two starts)
  local name=$1 kind=$2 mnt=$state/run/$1.fs up dport first before after api msg t0 t_end
  mkdir -p "$mnt"
  if ! mount -t tmpfs -o size=32m tmpfs "$mnt" 2>/dev/null; then
    row "SQLite on a small file system ($kind)" "not run: this machine refuses mount -t tmpfs (it needs root)" "-" "-" "-" "-" "-"
    return
  fi
  mounts+=("$mnt")
  up=$(free_port) dport=$(free_port)
  serve_llama "$up" 4
  daemon_up "$name" "$mnt/audit.db" "$dport" --backend "b=http://127.0.0.1:$up"
  first=$(submit "$dport" "$(spec 8)")
  wait_end "$dport" "$first" >/dev/null
  before=$(curl -s "http://127.0.0.1:$dport/v1/audits/$first/report?format=markdown" | sha256sum | cut -c1-16)
  local first_runs
  first_runs=$(curl -s "http://127.0.0.1:$dport/v1/audits/$first/runs" | json 'len(d["runs"])')
  if [[ $kind == full ]]; then
    local id end lc
    id=$(submit "$dport" "$(spec 16)")
    done_at_least "$dport" "$id" 8
    t0=$(now)
    dd if=/dev/zero of="$mnt/filler" bs=16k 2>/dev/null || true  # until the file system is full
    end=$(wait_end "$dport" "$id")
    t_end=$(now)
    msg="$(json 'd["status"]' <<<"$end"): $(json 'd.get("error") or ""' <<<"$end")"
    after=$(curl -s "http://127.0.0.1:$dport/v1/audits/$first/report?format=markdown" | sha256sum | cut -c1-16)
    api=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$dport/v1/audits")
    local refused
    refused=$(curl -s -X POST -H 'Content-Type: application/json' "http://127.0.0.1:$dport/v1/audits" -d "$(spec 8)" | cut -c1-140)
    rm -f "$mnt/filler"
    local t_free again
    t_free=$(now)
    again=$(submit "$dport" "$(spec 8)")
    again=$(json 'd["status"]' <<<"$(wait_end "$dport" "$again")")
    lc=$(counts "$dport" "$id")
    local first_after unstored
    first_after=$(curl -s "http://127.0.0.1:$dport/v1/audits/$first/runs" | json 'len(d["runs"])')
    unstored=${lc% *}
    # Lost: what was stored before the fault and is not after it (the audit the disk stopped
    # could not store its remaining measurements: that is said, not lost).
    row "SQLite's disk full: the database on a 32 MiB tmpfs, filled by another file while an audit runs" \
      "$(words "$msg ($unstored of its 70 requests not stored); GET /v1/audits $api; a new submission: $refused; the earlier report $([[ $before == "$after" ]] && echo unchanged || echo CHANGED); once space is freed a new audit ends $again" 460)" \
      "$(secs "$t0" "$t_end")" "a new audit $again $(secs "$t_free" "$(now)") after the space was freed" "$((first_runs - first_after))" "${lc#* }" "$(verify "$mnt/audit.db")"
  else
    # A file system cannot be remounted read-only under a database open for writing, so the
    # daemon is stopped, the file system made read-only, and the daemon started on it.
    kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
    mount -o remount,ro "$mnt"
    t0=$(now)
    local code=0
    timeout 20 "$build/daemon/logitauditd" --db "$mnt/audit.db" --listen "127.0.0.1:$dport" --backend "b=http://127.0.0.1:$up" \
      >"$state/run/$name.ro.log" 2>&1 || code=$?
    t_end=$(now)
    msg="exit $code: $(grep -v '^\[.*\] \[info\]' "$state/run/$name.ro.log" | head -2 | tr '\n' ' ' | cut -c1-200)"
    mount -o remount,rw "$mnt"
    daemon_up "$name" "$mnt/audit.db" "$dport" --backend "b=http://127.0.0.1:$up"
    after=$(curl -s "http://127.0.0.1:$dport/v1/audits/$first/report?format=markdown" | sha256sum | cut -c1-16)
    row "SQLite's file system read-only (remounted between two starts; a file system is never remounted under a database open for writing)" \
      "$(words "$msg; read-write again, the earlier report $([[ $before == "$after" ]] && echo unchanged || echo CHANGED)" 320)" \
      "$(secs "$t0" "$t_end")" "-" "0" "0" "$(verify "$mnt/audit.db")"
  fi
  stop_started; pids=()
  umount "$mnt" 2>/dev/null || true
}
if wanted disk-full; then say "SQLite's disk full"; sqlite_fs disk-full full; fi
if wanted read-only; then say "SQLite's file system read-only"; sqlite_fs read-only ro; fi

{
  echo "| fault | what the user sees | detected | recovered | streams lost | streams doubled | verify |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  printf '%s\n' "${rows[@]}"
} | tee "$out"
say "table in $out; logs in $state/run"
