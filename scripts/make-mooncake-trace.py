#!/usr/bin/env python3
"""A synthetic trace in Mooncake's format (AIPerf's mooncake_trace JSON Lines), shaped like a
production trace: requests arrive as a Poisson process; each belongs to one of a few
conversations whose opening blocks (a system prompt, earlier turns) it shares, then has blocks
of its own. A shared hash id means a shared prefix block, as in Mooncake's FAST'25 traces.
No trace is downloaded: this is what docs/load.md replays on the tiny model.

  scripts/make-mooncake-trace.py --requests 60 --rate 6 --block-size 16 > trace.jsonl
  logitaudit trace analyze trace.jsonl --block-size 16

Each line: {"timestamp": ms, "input_length": tokens, "output_length": tokens, "hash_ids": [...]}.
"""
import argparse
import json
import random


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=60)
    p.add_argument("--rate", type=float, default=6.0, help="mean requests/s (Poisson arrivals)")
    p.add_argument("--block-size", type=int, default=16, help="tokens of one hash id (Mooncake's own is 512)")
    p.add_argument("--conversations", type=int, default=4, help="groups of requests that share an opening")
    p.add_argument("--shared-blocks", type=int, default=3, help="blocks of each conversation's opening")
    p.add_argument("--own-blocks", type=int, nargs=2, default=[0, 3], metavar=("MIN", "MAX"),
                   help="each request's blocks of its own after the opening")
    p.add_argument("--fresh", type=float, default=0.2, help="share of requests that share nothing")
    p.add_argument("--output", type=int, nargs=2, default=[4, 24], metavar=("MIN", "MAX"), help="output_length range")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(a.seed)
    next_id = 0

    def fresh_ids(n):
        nonlocal next_id
        ids = list(range(next_id, next_id + n))
        next_id += n
        return ids

    openings = [fresh_ids(a.shared_blocks) for _ in range(a.conversations)]
    t = 0.0
    for _ in range(a.requests):
        if rng.random() < a.fresh:
            ids = fresh_ids(rng.randint(1, a.shared_blocks + a.own_blocks[1]))
        else:
            # A later turn of a conversation: its opening, then blocks of its own.
            ids = openings[rng.randrange(a.conversations)] + fresh_ids(rng.randint(*a.own_blocks))
        # The last block is often cut short, as in Mooncake's traces.
        length = len(ids) * a.block_size - rng.randrange(a.block_size // 2 + 1)
        print(json.dumps({"timestamp": round(t), "input_length": max(1, length),
                          "output_length": rng.randint(*a.output), "hash_ids": ids}))
        t += rng.expovariate(a.rate) * 1000


if __name__ == "__main__":
    main()
