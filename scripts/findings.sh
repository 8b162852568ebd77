#!/usr/bin/env bash
# This machine's findings, written by logitaudit itself: the sections of docs/findings-cpu.md
# and docs/frontier-cpu.md for the machine it runs on, made from the product's own reports.
#   - the seed protocol on both generated models (tiny and small, Q4_K_M, -np 8, 32 tokens);
#   - the explain preset on the small model with -kvu;
#   - the frontier sweep over kv_unified for every quantisation (small: Q4_K_M, Q8_0, F32);
#   - the cpu_variant sweep over every ggml CPU variant this host can run (the daemon says
#     which: GET /v1/backends, host.ggml_cpu_variants).
# Each section names the machine, the CPU, the ggml variant, the llama-server build and the
# models (their sha256), all read from the audits' own fingerprints. Everything it starts it
# stops. About 10 minutes on 2 cores.
#
# Usage: scripts/findings.sh [--write] [--threads N]
#   --write      put the sections into docs/findings-cpu.md and docs/frontier-cpu.md (replacing
#                this machine's earlier generated ones); without it they are printed
#   --threads N  llama-server -t (default: the number of cores)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
write=0
threads=$(nproc)
while [[ $# -gt 0 ]]; do
  case $1 in
    --write) write=1 ;;
    --threads) [[ $# -ge 2 ]] || { echo "usage: scripts/findings.sh [--write] [--threads N]" >&2; exit 2; }; threads=$2; shift ;;
    *) echo "usage: scripts/findings.sh [--write] [--threads N]" >&2; exit 2 ;;
  esac
  shift
done
build=${LOGITAUDIT_BUILD_DIR:-build}
state=${LOGITAUDIT_FINDINGS_STATE:-.cache/findings}
say() { echo "findings: $*" >&2; }
source scripts/findings-lib.sh
bash scripts/bootstrap.sh
bash scripts/get-llama-server.sh
build_tools
server=${LOGITAUDIT_LLAMA_SERVER:-.cache/bin/llama-server}
rm -rf "$state/logs" "$state/out"
mkdir -p "$state/models" "$state/out"

tiny=$(model tiny Q4_K_M)
small=$(model small Q4_K_M)
small_q8=$(model small Q8_0)
small_f32=$(model small none)

# Not in a command substitution: its subshell would keep the pid from `pids`, and the server
# would outlive the script.
serve() {  # NAME MODEL [FLAGS...]: a llama-server on a free port; its URL in $served
  local name=$1 file=$2 port
  shift 2
  port=$(free_port)
  "$server" -m "$file" --host 127.0.0.1 --port "$port" -np 8 -t "$threads" -c 8192 --metrics --no-webui "$@" \
    >"$state/out/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 600); do curl -sf -m 2 "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
  curl -sf -m 2 "http://127.0.0.1:$port/health" >/dev/null || { say "llama-server $name did not start"; tail -5 "$state/out/$name.log" >&2; exit 1; }
  served="http://127.0.0.1:$port"
}
say "starting llama-server for tiny, small and small with -kvu"
serve tiny "$tiny"; tiny_url=$served
serve small "$small"; small_url=$served
serve small_kvu "$small" -kvu; kvu_url=$served

port=$(free_port)
cat >"$state/logitauditd.json" <<JSON
{"database": "$state/findings.db", "listen": "127.0.0.1:$port",
 "backends": [{"name": "tiny", "url": "$tiny_url", "model_path": "$tiny"},
              {"name": "small", "url": "$small_url", "model_path": "$small"},
              {"name": "small_kvu", "url": "$kvu_url", "model_path": "$small"}],
 "managed": {"models": [{"name": "Q4_K_M", "path": "$small"}, {"name": "Q8_0", "path": "$small_q8"},
                        {"name": "F32", "path": "$small_f32"}], "log_dir": "$state/logs"},
 "limits": {"max_sweep_configurations": 64}}
JSON
rm -f "$state/findings.db"*
start_daemon "$state/logitauditd.json" "$port"

variants=$("$cli" backends --json | python3 -c 'import json,sys; print(",".join(json.load(sys.stdin)["host"]["ggml_cpu_variants"]))')
[[ -n $variants ]] || { say "this host runs no ggml CPU variant of this build"; exit 1; }
audit seed --preset seed-protocol --backend tiny --backend small --n-predict 32
audit explain --preset explain --backend small_kvu
audit kvu --preset sweep --n-predict 32 --sweep models=Q4_K_M,Q8_0,F32 --sweep parallel=8 --sweep kv_unified=false,true \
  --sweep "threads=$threads"
audit variants --preset sweep --n-predict 32 --sweep models=Q4_K_M,Q8_0,F32 --sweep parallel=8 --sweep "threads=$threads" \
  --sweep "cpu_variant=$variants"

say "writing the sections"
python3 - "$state/out" "$write" "$threads" "$variants" <<'PY'
import datetime, json, os, re, sys

out, write, threads, variants = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4]
def load(name): return json.load(open(os.path.join(out, name)))
def text(name): return open(os.path.join(out, name)).read()

seed = load("seed.json")
fps = load("seed.fingerprints.json")["fingerprints"]
machine = seed["machines"]["tiny"]
first = {f["backend"]: f for f in fps if f["phase"] == "before"}
model = machine.get("cpu_model", "unknown CPU")
variant = machine.get("ggml_cpu_variant", "unknown")
key = re.sub(r"[^a-z0-9]+", "-", f"{model} {variant}".lower()).strip("-")
today = datetime.date.today().isoformat()
build = first["tiny"].get("build_info", "?")
sha = machine.get("server_executable_sha256", "")

def section(md, start, stop=None):
    """The lines of a Markdown report from the heading `start` up to the next heading."""
    lines, keep = [], False
    for line in md.splitlines():
        if line.startswith("### "):
            if keep: break
            keep = line.startswith(start)
        if keep: lines.append(line)
    return "\n".join(lines[1:]).strip()

def verdict(md):
    return "\n".join(l for l in md.splitlines()[:7] if l.startswith("- **"))

setup = "\n".join([
    "| | |", "| --- | --- |",
    f"| machine | {machine.get('logical_cores', '?')} cores of `{model}`, features `{machine.get('cpu_features', '')}`, kernel {machine.get('kernel', '?')} |",
    f"| ggml CPU variant | `{variant}` (ggml's own choice, read from the server process's loaded libraries; the sweeps' rows name others) |",
    f"| server | llama.cpp `llama-server` {build}" + (f", executable sha256 `{sha[:16]}`" if sha else "") + f", `-np 8 -t {threads} -c 8192 --metrics` |",
    f"| models | the generated tiny and small models (seed 7): tiny Q4_K_M `{first['tiny'].get('model_sha256', '?')[:16]}`, small Q4_K_M `{first['small'].get('model_sha256', '?')[:16]}`, and small in Q8_0 and F32 for the sweeps |",
    f"| written by | `scripts/findings.sh` on {today}, from audits {', '.join(open(os.path.join(out, n + '.id')).read().strip() for n in ('seed', 'explain', 'kvu', 'variants'))} of its own database |",
])
heading = f"## {model}, ggml `{variant}`: generated {today}"
begin, end = f"<!-- findings.sh: {key} -->", f"<!-- findings.sh: end {key} -->"

seed_md, explain_md = text("seed.md"), text("explain.md")
findings = "\n\n".join([
    begin, heading, setup,
    "### The seed protocol (`logitaudit submit --preset seed-protocol --backend tiny --backend small --n-predict 32`)",
    verdict(seed_md),
    section(seed_md, "### Pooled"), "tiny:\n\n" + section(seed_md, "### tiny"), "small:\n\n" + section(seed_md, "### small"),
    section(seed_md, "### Pre-registered predictions"),
    "### Why a stream moved: the explain preset on `-kvu` (the small model)",
    verdict(explain_md), section(explain_md, "### Pooled"), section(explain_md, "### Attribution"),
    end])

def frontier(name, title, command):
    md = text(name + ".md")
    # Of the findings, the frontier's own sentence: the rest repeat its table per configuration.
    said = [re.sub(r"^\d+\. ", "", l) for l in section(md, "### Findings").splitlines() if re.match(r"^\d+\. Frontier:", l)]
    return "\n\n".join([f"### {title}", f"`{command}`", verdict(md), section(md, "### Frontier")] + said)

front = "\n\n".join([
    begin, heading, setup,
    frontier("kvu", "The KV cache, for every quantisation (`-np 8`)",
             f"logitaudit submit --preset sweep --n-predict 32 --sweep models=Q4_K_M,Q8_0,F32 --sweep parallel=8 --sweep kv_unified=false,true --sweep threads={threads}"),
    frontier("variants", "Every ggml CPU variant this host can run (`-np 8`)",
             f"logitaudit submit --preset sweep --n-predict 32 --sweep models=Q4_K_M,Q8_0,F32 --sweep parallel=8 --sweep threads={threads} --sweep cpu_variant={variants}"),
    end])

if not write:
    print(findings + "\n\n" + front)
    sys.exit(0)
for path, body in (("docs/findings-cpu.md", findings), ("docs/frontier-cpu.md", front)):
    doc = open(path).read()
    if begin in doc:
        doc = doc[:doc.index(begin)] + body + doc[doc.index(end) + len(end):]
    else:  # before the first machine's section: the newest first
        at = doc.index("\n## ") + 1
        doc = doc[:at] + body + "\n\n" + doc[at:]
    open(path, "w").write(doc)
    print(f"findings: wrote {path} ({key})", file=sys.stderr)
PY
