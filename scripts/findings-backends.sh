#!/usr/bin/env bash
# This machine's compute-backend findings, written by logitaudit itself: the section of
# docs/findings-backends.md for the machine it runs on, made from the product's own reports.
#   - for the tiny and the small generated model, each in Q4_K_M, Q8_0 and F32: a sweep over
#     every device this host can run (GET /v1/backends, host.devices: cpu, blas, vulkan, rpc:2),
#     at -np 8, without and then with -kvu. Its migration matrix is each pair of devices on the
#     same model (solo and under load), its diagonal each device's own batch invariance, its
#     frontier each configuration's tokens/s;
#   - the tiny Q4_K_M model on every ggml CPU variant this host can run: the same matrix
#     between CPU generations.
# The section names the machine, the ggml variant, the llama-server build, Mesa's lavapipe and
# its LLVM (as the Vulkan device describes itself) and the models (their sha256), read from the
# audits' own fingerprints. Everything it starts it stops. About 25 minutes on 2 cores.
#
# Usage: scripts/findings-backends.sh [--write] [--threads N] [--from-saved]
#   --write       put the section into docs/findings-backends.md (replacing this machine's earlier
#                 one); without it, it is printed
#   --threads N   llama-server -t (default: the number of cores)
#   --from-saved  measure nothing: write the section from the reports the last run saved
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
usage() { echo "usage: scripts/findings-backends.sh [--write] [--threads N] [--from-saved]" >&2; exit 2; }
write=0 saved=0
threads=$(nproc)
while [[ $# -gt 0 ]]; do
  case $1 in
    --write) write=1 ;;
    --from-saved) saved=1 ;;
    --threads) [[ $# -ge 2 ]] || usage; threads=$2; shift ;;
    *) usage ;;
  esac
  shift
done
build=${LOGITAUDIT_BUILD_DIR:-build}
state=${LOGITAUDIT_FINDINGS_STATE:-.cache/findings-backends}
say() { echo "findings-backends: $*" >&2; }
source scripts/findings-lib.sh
runs=(tiny-kvu-false tiny-kvu-true small-kvu-false small-kvu-true variants)
if [[ $saved == 1 ]]; then
  for r in "${runs[@]}"; do [[ -f $state/out/$r.md ]] || { say "no saved $state/out/$r.md: run it without --from-saved"; exit 1; }; done
  devices=$(cat "$state/out/devices") variants=$(cat "$state/out/variants")
else
  bash scripts/bootstrap.sh
  bash scripts/get-llama-server.sh --backends
  build_tools
  rm -rf "$state/logs" "$state/out"
  mkdir -p "$state/models" "$state/out"
  models=""
  for size in tiny small; do
    for q in Q4_K_M Q8_0 none; do
      name=$size-$([[ $q == none ]] && echo F32 || echo "$q")
      models+="${models:+, }{\"name\": \"$name\", \"path\": \"$(model "$size" "$q")\"}"
    done
  done
  port=$(free_port)
  cat >"$state/logitauditd.json" <<JSON
{"database": "$state/findings.db", "listen": "127.0.0.1:$port",
 "managed": {"models": [$models], "log_dir": "$state/logs"},
 "limits": {"max_sweep_configurations": 64}}
JSON
  rm -f "$state/findings.db"*
  start_daemon "$state/logitauditd.json" "$port"
  host=$("$cli" backends --json)
  # The devices, with rpc:N as rpc:2 (a model split over two ggml-rpc-servers).
  devices=$(python3 -c 'import json,sys; d=json.load(sys.stdin)["host"]["devices"]; print(",".join("rpc:2" if v=="rpc:N" else v for v in d if not v[-1].isdigit()))' <<<"$host")
  variants=$(python3 -c 'import json,sys; print(",".join(json.load(sys.stdin)["host"]["ggml_cpu_variants"]))' <<<"$host")
  echo "$devices" >"$state/out/devices"
  echo "$variants" >"$state/out/variants"
  say "devices: $devices; CPU variants: $variants"
  for size in tiny small; do
    for kvu in false true; do
      audit "$size-kvu-$kvu" --preset sweep --n-predict 32 --sweep "models=$size-Q4_K_M,$size-Q8_0,$size-F32" \
        --sweep parallel=8 --sweep "kv_unified=$kvu" --sweep "threads=$threads" --sweep "device=$devices"
    done
  done
  audit variants --preset sweep --n-predict 32 --sweep models=tiny-Q4_K_M --sweep parallel=8 --sweep "threads=$threads" \
    --sweep "cpu_variant=$variants"
fi

say "writing the section"
python3 - "$state/out" "$write" "$threads" "$devices" "$variants" "${LOGITAUDIT_CACHE:-.cache}/llama.cpp/root" <<'PY'
import datetime, gzip, json, os, re, sys

out, write, threads, devices, variants, root = sys.argv[1], sys.argv[2] == "1", sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
def version(package):
    """A provisioned package's version, from the first line of its Debian changelog in the root."""
    try:
        with gzip.open(os.path.join(root, "usr/share/doc", package, "changelog.Debian.gz"), "rt") as f:
            return re.search(r"\((.*?)\)", f.readline()).group(1)
    except (OSError, AttributeError):
        return "?"
def load(name): return json.load(open(os.path.join(out, name)))
def text(name): return open(os.path.join(out, name)).read()

fps = [f for f in load("tiny-kvu-false.fingerprints.json")["fingerprints"] if f["phase"] == "before"]
everything = [f for n in ("tiny-kvu-false", "small-kvu-false") for f in load(n + ".fingerprints.json")["fingerprints"] if f["phase"] == "before"]
cpu = next(f for f in fps if "dev=" not in f["backend"] or "dev=cpu" in f["backend"])
machine = cpu["machine"]
model = machine.get("cpu_model", "unknown CPU")
variant = machine.get("ggml_cpu_variant", "unknown")
vulkan = next((f["machine"].get("offload_devices", "") for f in fps if "dev=vulkan" in f["backend"]), "")
key = re.sub(r"[^a-z0-9]+", "-", f"{model} {variant} backends".lower()).strip("-")
today = datetime.date.today().isoformat()
shas = {f["backend"].split(",")[0]: f.get("model_sha256", "?")[:16] for f in everything}

def section(md, start):
    """Every block of a Markdown report under a heading that starts with `start`."""
    blocks, lines, keep = [], [], False
    for line in md.splitlines():
        if line.startswith("### "):
            if keep: blocks.append("\n".join(lines).strip())
            keep, lines = line[4:].startswith(start), []
            if keep: lines.append("#### " + line[4:])
            continue
        if keep: lines.append(line)
    if keep: blocks.append("\n".join(lines).strip())
    return "\n\n".join(blocks)

def verdict(md):
    return "\n".join(l for l in md.splitlines()[:7] if l.startswith("- **"))

ids = ", ".join(open(os.path.join(out, n + ".id")).read().strip()
                for n in ("tiny-kvu-false", "tiny-kvu-true", "small-kvu-false", "small-kvu-true", "variants"))
setup = "\n".join([
    "| | |", "| --- | --- |",
    f"| machine | {machine.get('logical_cores', '?')} cores of `{model}`, features `{machine.get('cpu_features', '')}`, kernel {machine.get('kernel', '?')} |",
    f"| ggml CPU variant | `{variant}` (ggml's own choice for `cpu`, `blas` and the RPC servers' CPU backend) |",
    f"| server | llama.cpp `llama-server` {cpu.get('build_info', '?')} from Debian sid, ggml {version('libggml0')} and its backends (`libggml0-backend-*`), `-np 8 -t {threads}` |",
    f"| devices | {devices}; Vulkan is `{vulkan or 'not listed'}` (Mesa {version('mesa-vulkan-drivers')}'s lavapipe, as the device describes itself); BLAS is OpenBLAS {version('libopenblas0-pthread')} (pthread); rpc:2 is two local `ggml-rpc-server` processes |",
    f"| models | the generated models (seed 7): " + ", ".join(f"{k} `{v}`" for k, v in sorted(shas.items())) + " |",
    f"| written by | `scripts/findings-backends.sh` on {today}, from audits {ids} of its own database |",
])
heading = f"## {model}, ggml `{variant}`: generated {today}"
begin, end = f"<!-- findings-backends.sh: {key} -->", f"<!-- findings-backends.sh: end {key} -->"

parts = [begin, heading, setup]
for size in ("tiny", "small"):
    for kvu in ("false", "true"):
        md = text(f"{size}-kvu-{kvu}.md")
        parts += [f"### The {size} model, every device, `-np 8`{' -kvu' if kvu == 'true' else ''}",
                  f"`logitaudit submit --preset sweep --n-predict 32 --sweep models={size}-Q4_K_M,{size}-Q8_0,{size}-F32 "
                  f"--sweep parallel=8 --sweep kv_unified={kvu} --sweep threads={threads} --sweep device={devices}`",
                  verdict(md), section(md, "Migration matrix"), section(md, "Frontier")]
md = text("variants.md")
parts += ["### The tiny Q4_K_M model on every ggml CPU variant this host can run (`-np 8`)",
          f"`logitaudit submit --preset sweep --n-predict 32 --sweep models=tiny-Q4_K_M --sweep parallel=8 --sweep threads={threads} --sweep cpu_variant={variants}`",
          verdict(md), section(md, "Migration matrix")]
parts.append(end)
body = "\n\n".join(p for p in parts if p)

if not write:
    print(body)
    sys.exit(0)
path = "docs/findings-backends.md"
doc = open(path).read()
if begin in doc:
    doc = doc[:doc.index(begin)] + body + doc[doc.index(end) + len(end):]
else:  # before the first machine's section: the newest first
    at = doc.index("\n## ") + 1 if "\n## " in doc else len(doc)
    doc = doc[:at] + body + "\n\n" + doc[at:]
open(path, "w").write(doc)
print(f"findings-backends: wrote {path} ({key})", file=sys.stderr)
PY
