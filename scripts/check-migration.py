#!/usr/bin/env python3
"""The migration matrix's solo cells, recomputed outside the product: a llama-server started by
hand on each device (cpu, blas, vulkan, rpc:2 through the provisioned wrappers of
scripts/get-llama-server.sh --backends) with the flags of the sweep preset's servers, the same
solo request sent to each twice, the streams compared pair by pair here. It prints whether each
server repeats itself, each pair's identity, first difference and largest |logprob difference|
next to the product's stored cell, and, given the daemon and the audit, whether each hand stream
is the product's stored baseline bit for bit. Exit 1 when anything disagrees.

Usage: scripts/check-migration.py MODEL.gguf REPORT.json PROMPT N_PREDICT TOP_K PREFIX [DAEMON_URL AUDIT]
  REPORT.json  the sweep's JSON report (logitaudit report ID --json)
  PREFIX       the sweep's configuration name before ",dev=" (tiny-Q4_K_M)
docs/findings-backends.md has this machine's run."""
import json, os, socket, subprocess, sys, time, urllib.request

repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B = repo + "/.cache/bin"
model = sys.argv[1]          # a GGUF
report = json.load(open(sys.argv[2]))  # the product's JSON report of the sweep
prompt, n_predict, top_k = sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
prefix = sys.argv[6]         # the sweep's configuration prefix, "tiny-Q4_K_M"

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

procs = []
def start(args, env, log):
    e = dict(os.environ); e.update(env)
    p = subprocess.Popen(args, env=e, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    procs.append(p); return p

def serve(name, extra, env):
    port = free_port()
    start([B + "/llama-server", "-m", model, "--host", "127.0.0.1", "--port", str(port), "-np", "8", "-t", "2",
           "-c", "8192", "--no-webui", "-fa", "off", "-b", "2048", "-ub", "512"] + extra, env, f"/tmp/hand-{name}.log")
    for _ in range(600):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1); break
        except Exception: time.sleep(0.1)
    return f"http://127.0.0.1:{port}"

def complete(url):
    body = json.dumps({"prompt": prompt, "n_predict": n_predict, "temperature": 0, "n_probs": top_k,
                       "cache_prompt": False, "stream": False, "id_slot": 0}).encode()
    r = json.load(urllib.request.urlopen(urllib.request.Request(url + "/completion", body, {"Content-Type": "application/json"}), timeout=600))
    return [(t["id"], t["logprob"], [(x["id"], x["logprob"]) for x in t["top_logprobs"]]) for t in r["completion_probabilities"]]

try:
    rpc = []
    for i in range(2):
        port = free_port()
        start([B + "/ggml-rpc-server", "-H", "127.0.0.1", "-p", str(port), "-t", "2"], {"LOGITAUDIT_GGML_BACKENDS": ""}, f"/tmp/hand-rpc{i}.log")
        rpc.append(f"127.0.0.1:{port}")
    time.sleep(1)
    servers = {
        "cpu": serve("cpu", ["-dev", "none"], {"LOGITAUDIT_GGML_BACKENDS": ""}),
        "blas": serve("blas", ["-dev", "none"], {"LOGITAUDIT_GGML_BACKENDS": "blas", "OPENBLAS_NUM_THREADS": "2"}),
        "vulkan": serve("vulkan", ["-dev", "Vulkan0", "-ngl", "999", "-fit", "off"], {"LOGITAUDIT_GGML_BACKENDS": "vulkan"}),
        "rpc:2": serve("rpc", ["--rpc", ",".join(rpc), "-ngl", "999", "-fit", "off"], {"LOGITAUDIT_GGML_BACKENDS": "rpc"}),
    }
    streams = {k: complete(u) for k, u in servers.items()}
    again = {k: complete(u) for k, u in servers.items()}
finally:
    for p in procs: p.terminate()
    for p in procs: p.wait()

for k in streams: print(f"{k}: repeats itself solo bit for bit: {streams[k] == again[k]}")
stored_ok = True
if len(sys.argv) > 8:  # the daemon's URL and the audit: each hand stream against the product's stored baseline
    url, audit = sys.argv[7], sys.argv[8]
    runs = json.load(urllib.request.urlopen(f"{url}/v1/audits/{audit}/runs?condition=baseline"))["runs"]
    for k in streams:
        r = next(r for r in runs if r["backend"] == f"{prefix},dev={k}" and r["prompt"] == prompt)
        st = json.load(urllib.request.urlopen(f"{url}/v1/audits/{audit}/runs/{r['id']}/stream"))["tokens"]
        mine = [(t["id"], t["logprob"], [(x["id"], x["logprob"]) for x in t["top"]]) for t in st]
        stored_ok &= mine == streams[k]
        print(f"{k}: the product's stored baseline equals the hand stream bit for bit: {mine == streams[k]}"
              + ("" if mine == streams[k] else f" (first difference at {next((i for i,(a,b) in enumerate(zip(mine, streams[k])) if a!=b), -1)})"))

def compare(a, b):
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), -1 if len(a) == len(b) else min(len(a), len(b)))
    aligned = next((i for i, (x, y) in enumerate(zip(a, b)) if x[0] != y[0]), min(len(a), len(b)))
    delta = max((abs(a[i][1] - b[i][1]) for i in range(aligned)), default=0.0)
    return a == b, [x[0] for x in a] == [y[0] for y in b], first, delta

cells = {}
for m in report["migration"]:
    for c in m["cells"]:
        if c["a"] != c["b"]: cells[(c["a"], c["b"])] = c["solo"]
names = list(servers)
ok = True
for i, a in enumerate(names):
    for b in names[i + 1:]:
        same, tokens, first, delta = compare(streams[a], streams[b])
        key = (f"{prefix},dev={a}", f"{prefix},dev={b}")
        stored = cells.get(key) or cells.get(key[::-1])
        agree = stored is not None and stored["n"] == 1 and (stored["logit_identical"] == 1) == same and \
            (stored["token_identical"] == 1) == tokens and stored["first_difference"] == first and abs(stored["max_abs_delta"] - delta) < 1e-12
        ok &= agree
        print(f"{a:7} | {b:7}: by hand identical={same} tokens={tokens} first={first} delta={delta:.6g}; "
              f"product {stored and (stored['logit_identical'], stored['token_identical'], stored['first_difference'], round(stored['max_abs_delta'], 6))}: {'AGREE' if agree else 'DISAGREE'}")
ok &= all(streams[k] == again[k] for k in streams) and stored_ok
print("all agree" if ok else "SOME DISAGREE")
sys.exit(0 if ok else 1)
