# What the scripts that write a machine's findings share (scripts/findings.sh,
# scripts/findings-backends.sh): the tools built, a generated model, a daemon on a free port and
# one audit's reports saved. Sourced, never run; the caller sets $build, $state and say().

cli=$build/cli/logitaudit
pids=()  # what the caller's script started: stopped when it exits
stop_started() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap stop_started EXIT

build_tools() {  # the CLI, the daemon and the model generator, in $build
  if [[ ! -x $build/cli/logitaudit || ! -x $build/daemon/logitauditd || ! -x $build/tools/logitaudit-make-model ]]; then
    [[ -f $build/CMakeCache.txt ]] || cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >/dev/null
  fi
  cmake --build "$build" -j "$(nproc)" --target logitaudit logitauditd logitaudit-make-model >/dev/null
}

model() {  # PRESET QUANT (Q4_K_M, Q8_0 or none): the generated model's path, made once
  local name=$1-$([[ $2 == none ]] && echo F32 || echo "$2") f
  f=$state/models/$name.gguf
  if [[ ! -f $f ]]; then
    say "generating the $1 model in ${2/none/F32}"
    "$build/tools/logitaudit-make-model" --preset "$1" --seed 7 --quantize "$2" --out "$f" >&2
  fi
  realpath "$f"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_daemon() {  # CONFIG PORT: logitauditd on a fresh database; the CLI pointed at it
  local config=$1 port=$2
  "$build/daemon/logitauditd" --config "$config" >"$state/out/logitauditd.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 300); do curl -sf -m 2 "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
  export LOGITAUDIT_SERVER=http://127.0.0.1:$port
}

audit() {  # NAME SUBMIT-ARGS...: the audit's report as JSON and Markdown under $state/out
  local name=$1 id
  shift
  say "$name: logitaudit submit $*"
  # exit 1 is a finding (a control that came out identical), not a failure of this script
  "$cli" submit "$@" --quiet --wait --json >"$state/out/$name.submit.json" || [[ $? -eq 1 ]]
  id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["audit"]["id"])' "$state/out/$name.submit.json")
  "$cli" report "$id" --json >"$state/out/$name.json" || true
  "$cli" report "$id" --format markdown >"$state/out/$name.md" || true
  curl -sf "$LOGITAUDIT_SERVER/v1/audits/$id/fingerprints" >"$state/out/$name.fingerprints.json"
  echo "$id" >"$state/out/$name.id"
}
