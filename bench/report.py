#!/usr/bin/env python3
"""Helpers of bench/run.sh (standard library only).

  report.py spreads BURSTS_JSON               the launch spreads of an audit's bursts (us), from GET .../bursts
  report.py overhead DB                       the serial conditions' wall time / the server's own time
  report.py rss PID                           peak and current RSS of a process (MB)
  report.py wrk WRK_OUTPUT                    wrk --latency output as JSON (p50/p99 ms, rate, errors)
  report.py merge OUT.json PREVIOUS.json PARTS_DIR
                                              one results file, one table, the change against PREVIOUS
"""
import json
import os
import sqlite3
import statistics
import sys


def pct(values, p):
    v = sorted(values)
    if not v:
        return None
    k = max(0, min(len(v) - 1, -(-len(v) * p // 100) - 1))  # nearest rank
    return v[int(k)]


def spreads(path):
    s = [b["launch_spread_ns"] / 1e3 for b in json.load(open(path))["bursts"]]
    print(json.dumps({"bursts": len(s), "median_us": statistics.median(s) if s else None, "p99_us": pct(s, 99)}))


def overhead(db):
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT r.backend, r.write_ns, r.last_byte_ns, s.prompt_ms + s.predicted_ms FROM runs r "
        "JOIN groups g ON g.job_id = r.job_id AND g.group_index = r.group_index "
        "JOIN streams s ON s.run_id = r.id WHERE g.mode = 'serial' ORDER BY r.write_ns").fetchall()
    # Wall time of the serial part: each request's latency plus the gap before the next serial
    # request on the same backend (our parse, digest and storage), up to 50 ms (a gap that long
    # is a burst group in between, not overhead).
    latency = gaps = server = 0.0
    last_end = {}
    for backend, w, e, srv in rows:
        gap = (w - last_end[backend]) / 1e6 if backend in last_end else 0.0
        latency += (e - w) / 1e6
        gaps += gap if 0 <= gap < 50 else 0.0
        server += srv
        last_end[backend] = e
    wall = latency + gaps
    # Split: `gaps` is logitaudit's own time between a response and the next request (parse,
    # digests, storage, scheduling); latency - server is the server's time outside its own
    # timings (n_probs softmax and JSON) plus loopback.
    print(json.dumps({"serial_requests": len(rows), "wall_ms": round(wall, 1), "server_ms": round(server, 1),
                      "ratio": round(wall / server, 4) if server else None,
                      "client_gap_ms": round(gaps, 2), "client_ratio": round((server + gaps) / server, 4) if server else None,
                      "outside_server_timings_ms": round(latency - server, 1)}))


def rss(pid):
    out = {}
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(("VmHWM:", "VmRSS:")):
            out[line.split(":")[0]] = round(int(line.split()[1]) / 1024, 1)
    print(json.dumps({"peak_mb": out.get("VmHWM"), "rss_mb": out.get("VmRSS")}))


def wrk(path):
    text = open(path).read()
    out = {"requests": 0, "errors": 0}

    def ms(v):
        for unit, f in (("us", 1e-3), ("ms", 1.0), ("s", 1e3)):
            if v.endswith(unit):
                return round(float(v[: -len(unit)]) * f, 3)
        return None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("50%", "99%"):
            out["p%s_ms" % parts[0][:-1]] = ms(parts[1])
        elif line.strip().startswith("Requests/sec:"):
            out["rps"] = float(parts[1])
        elif "requests in" in line:
            out["requests"] = int(parts[0])
        elif line.strip().startswith("Socket errors:"):
            out["errors"] += sum(int(x.strip(",")) for x in parts if x.strip(",").isdigit())
        elif line.strip().startswith("Non-2xx or 3xx responses:"):
            out["errors"] += int(parts[-1])
    print(json.dumps(out))


ROWS = [
    ("spread C=8 logitaudit, chosen mode, med (us)", ["burst", "8", "logitaudit", "arrive_median_us"]),
    ("spread C=8 logitaudit last-byte med (us)", ["burst", "8", "logitaudit last-byte", "arrive_median_us"]),
    ("spread C=8 logitaudit whole writes med (us)", ["burst", "8", "logitaudit whole writes", "arrive_median_us"]),
    ("spread C=8 logitaudit ordinary scheduler med (us)", ["burst", "8", "logitaudit ordinary sched", "arrive_median_us"]),
    ("spread C=8 python asyncio med (us)", ["burst", "8", "python asyncio", "arrive_median_us"]),
    ("spread C=8 floor med (us)", ["burst", "8", "floor (server alone)", "arrive_median_us"]),
    ("spread C=8 ours / floor (goal <= 2)", ["burst", "8", "goal", "floor_ratio"]),
    ("spread C=64 logitaudit, chosen mode, med (us)", ["burst", "64", "logitaudit", "arrive_median_us"]),
    ("spread C=64 logitaudit last-byte med (us)", ["burst", "64", "logitaudit last-byte", "arrive_median_us"]),
    ("spread C=64 logitaudit whole writes med (us)", ["burst", "64", "logitaudit whole writes", "arrive_median_us"]),
    ("spread C=64 logitaudit ordinary scheduler med (us)", ["burst", "64", "logitaudit ordinary sched", "arrive_median_us"]),
    ("spread C=64 python asyncio med (us)", ["burst", "64", "python asyncio", "arrive_median_us"]),
    ("spread C=64 floor med (us)", ["burst", "64", "floor (server alone)", "arrive_median_us"]),
    ("spread C=64 ours / floor (goal <= 2)", ["burst", "64", "goal", "floor_ratio"]),
    ("spread C=256 logitaudit, chosen mode, med (us)", ["burst", "256", "logitaudit", "arrive_median_us"]),
    ("spread C=256 logitaudit last-byte med (us)", ["burst", "256", "logitaudit last-byte", "arrive_median_us"]),
    ("spread C=256 logitaudit whole writes med (us)", ["burst", "256", "logitaudit whole writes", "arrive_median_us"]),
    ("spread C=256 logitaudit ordinary scheduler med (us)", ["burst", "256", "logitaudit ordinary sched", "arrive_median_us"]),
    ("spread C=256 python asyncio med (us)", ["burst", "256", "python asyncio", "arrive_median_us"]),
    ("spread C=256 floor med (us)", ["burst", "256", "floor (server alone)", "arrive_median_us"]),
    ("spread C=256 ours / floor (goal <= 2)", ["burst", "256", "goal", "floor_ratio"]),
    ("spread C=64 python threads med (us)", ["burst", "64", "python threads", "arrive_median_us"]),
    ("spread C=64 curl med (us)", ["burst", "64", "curl --parallel", "arrive_median_us"]),
    ("spread C=64 raw 1-byte sends med (us)", ["burst", "64", "raw 1-byte sends", "arrive_median_us"]),
    ("throughput logitaudit (req/s)", ["throughput", "logitaudit_rps"]),
    ("throughput wrk (req/s)", ["throughput", "wrk_rps"]),
    ("throughput ratio (goal >= 0.5)", ["throughput", "ratio"]),
    ("real server: wall / server's own times", ["overhead", "ratio"]),
    ("real server: (server + our gaps) / server (<= 1.05)", ["overhead", "client_ratio"]),
    ("real server with --metrics: (server + our gaps) / server", ["overhead_counters", "client_ratio"]),
    ("streaming: plain bursts, tiny (tokens/s)", ["streaming", "plain_tokens_per_s"]),
    ("streaming: streamed bursts, tiny (tokens/s)", ["streaming", "streamed_tokens_per_s"]),
    ("streaming: streamed / plain (goal >= 0.95)", ["streaming", "ratio"]),
    ("history streams", ["history", "streams"]),
    ("report p50 (ms), 100 conns", ["history", "report", "p50_ms"]),
    ("report p99 (ms, goal < 20)", ["history", "report", "p99_ms"]),
    ("runs p50 (ms), 100 conns", ["history", "runs", "p50_ms"]),
    ("runs p99 (ms, goal < 10)", ["history", "runs", "p99_ms"]),
    ("history ingest SQLite (streams/s)", ["history", "ingest_sps"]),
    ("history ingest PostgreSQL (streams/s)", ["history", "postgresql", "ingest_sps"]),
    ("PostgreSQL report p50 (ms), 100 conns", ["history", "postgresql", "report", "p50_ms"]),
    ("PostgreSQL report p99 (ms)", ["history", "postgresql", "report", "p99_ms"]),
    ("PostgreSQL runs p50 (ms), 100 conns", ["history", "postgresql", "runs", "p50_ms"]),
    ("PostgreSQL runs p99 (ms)", ["history", "postgresql", "runs", "p99_ms"]),
    ("RSS idle (MB)", ["memory", "idle_mb"]),
    ("RSS peak, 256-wide burst (MB, goal <= 64)", ["memory", "burst_peak_mb"]),
    ("RSS serving 1M streams (MB)", ["memory", "history_mb"]),
    ("load: burst spread idle med (us)", ["load", "idle", "median_us"]),
    ("load: burst spread, 50 conns of API reads med (us)", ["load", "loaded", "median_us"]),
    ("load: spread loaded / idle (goal <= 1.5)", ["load", "ratio"]),
    ("load: audit wall time idle (s)", ["load", "idle_audit_s"]),
    ("load: audit wall time under API load (s)", ["load", "loaded_audit_s"]),
    ("load: API requests during the audit", ["load", "api", "requests"]),
    ("load: API errors", ["load", "api", "errors"]),
    ("console: audit page runs", ["console", "runs"]),
    ("console: audit page, tables + charts med (ms, goal < 300)", ["console", "audit_page_median_ms"]),
    ("console: audit page worst of 15 (ms)", ["console", "audit_page_max_ms"]),
    ("console: its API reads alone med (ms)", ["console", "api_reads_median_ms"]),
    ("console: served bytes gzip (goal < 153600)", ["console", "served_gzip_bytes"]),
]


def dig(d, path):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def merge(out, previous, parts):
    result = {}
    for name in sorted(os.listdir(parts)):
        if name.endswith(".json"):
            try:
                result[name[:-5]] = json.load(open(os.path.join(parts, name)))
            except ValueError:
                result[name[:-5]] = None
    prev = json.load(open(previous)) if previous and os.path.exists(previous) else {}
    json.dump(result, open(out, "w"), indent=2, sort_keys=True)
    print(f"{'figure':46} {'now':>12} {'previous':>12} {'change':>8}")
    for label, path in ROWS:
        now, before = dig(result, path), dig(prev, path)
        fmt = lambda v: "-" if v is None else (f"{v:.2f}" if isinstance(v, float) and abs(v) < 10 else f"{v:.0f}" if isinstance(v, (int, float)) else str(v))
        change = f"{(now - before) / before * 100:+.0f}%" if isinstance(now, (int, float)) and isinstance(before, (int, float)) and before else ""
        print(f"{label:46} {fmt(now):>12} {fmt(before):>12} {change:>8}")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "spreads":
        spreads(sys.argv[2])
    elif cmd == "overhead":
        overhead(sys.argv[2])
    elif cmd == "wrk":
        wrk(sys.argv[2])
    elif cmd == "rss":
        rss(sys.argv[2])
    elif cmd == "merge":
        merge(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
