#!/usr/bin/env python3
"""An independent check of an advice's figures (docs/advise.md): output throughput of a running
llama-server as `vllm bench serve --max-concurrency C` defines it, measured with Python's
standard library alone and none of logitaudit's code.

N requests, at most C in flight (each worker sends its next as soon as its last one ended), each
a prompt of P random token ids of the model's vocabulary (so that no prompt cache serves it) asking for O tokens with
ignore_eos, streamed. Output throughput = the tokens streamed back / the time from the first
send to the last completion. Run it against each configuration of an advice, in the same hour
as the advice; the cost is 1 - its figure over the fastest configuration's.

  scripts/remeasure-throughput.py http://127.0.0.1:8080 --concurrency 4 --prompt-tokens 64 \\
      --output-tokens 64 --requests 200
"""
import argparse
import http.client
import json
import random
import threading
import time
import urllib.parse


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("url", help="the llama-server, e.g. http://127.0.0.1:8080")
    p.add_argument("--concurrency", type=int, default=4, help="requests in flight at most (the advice's slots)")
    p.add_argument("--prompt-tokens", type=int, default=64)
    p.add_argument("--output-tokens", type=int, default=64)
    p.add_argument("--requests", type=int, default=200, help="requests measured")
    p.add_argument("--warmup", type=int, default=8, help="requests sent first and not measured")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    u = urllib.parse.urlparse(a.url)
    # Ordinary token ids of the model's vocabulary (its size from /v1/models, as llama-server gives it).
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.request("GET", "/v1/models")
    models = json.loads(conn.getresponse().read())
    n_vocab = models["data"][0].get("meta", {}).get("n_vocab", 2000)
    rng = random.Random(a.seed)
    total = a.warmup + a.requests
    prompts = [[rng.randrange(300, min(2000, n_vocab)) for _ in range(a.prompt_tokens)] for _ in range(total)]
    lock = threading.Lock()
    state = {"next": 0, "tokens": 0, "first_send": None, "last_done": 0.0, "failed": 0}

    def send(prompt):
        # A connection per request: llama-server closes one after a streamed answer.
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
        body = json.dumps({"prompt": prompt, "n_predict": a.output_tokens, "ignore_eos": True, "stream": True,
                           "temperature": 0, "n_probs": 1, "cache_prompt": True})
        conn.request("POST", "/completion", body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        if r.status != 200:
            r.read()
            return -1
        tokens = 0
        for line in r:
            line = line.strip()
            if not line.startswith(b"data: "):
                continue
            chunk = json.loads(line[6:])
            if not chunk.get("stop"):
                tokens += 1
        conn.close()
        return tokens

    def worker(warm):
        while True:
            with lock:
                i = state["next"]
                limit = a.warmup if warm else total
                if i >= limit:
                    return
                state["next"] += 1
            t0 = time.monotonic()
            if not warm:
                with lock:
                    state["first_send"] = t0 if state["first_send"] is None else min(state["first_send"], t0)
            try:
                n = send(prompts[i])
            except (OSError, http.client.HTTPException):
                n = -1
            with lock:
                if warm:
                    continue
                if n < 0:
                    state["failed"] += 1
                else:
                    state["tokens"] += n
                state["last_done"] = max(state["last_done"], time.monotonic())

    for warm in (True, False):
        threads = [threading.Thread(target=worker, args=(warm,)) for _ in range(a.concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    duration = state["last_done"] - state["first_send"]
    print(json.dumps({"output_throughput": state["tokens"] / duration, "request_throughput": a.requests / duration,
                      "duration_s": duration, "output_tokens": state["tokens"], "requests": a.requests,
                      "failed": state["failed"], "concurrency": a.concurrency}))


if __name__ == "__main__":
    main()
