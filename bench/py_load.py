#!/usr/bin/env python3
"""A baseline load generator in plain Python (standard library asyncio only), for bench/load.

  py_load.py URL RATE SECONDS

Sends constant arrivals at RATE requests/s for SECONDS: each a streamed POST /completion of
4 tokens on its own connection (asyncio raw streams), read to the end. Prints the achieved rate,
its ratio to the target and the lateness (issue minus schedule) p50/p99 in microseconds.
"""
import asyncio
import sys
import time
from urllib.parse import urlparse

BODY = b'{"prompt":[300,301,302,303,304,305,306,307],"n_predict":4,"n_probs":1,"temperature":0,"stream":true,"ignore_eos":true}'


async def one(host, port, late, errors):
    try:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"POST /completion HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n" % (host.encode(), port, len(BODY)) + BODY)
        await writer.drain()
        seen = b""
        while True:  # to the final event (the server may keep the connection open)
            piece = await reader.read(65536)
            if not piece:
                break
            seen = seen[-64:] + piece
            if b'"stop":true' in seen and seen.rstrip().endswith(b"0") or seen.endswith(b"0\r\n\r\n"):
                break
        writer.close()
    except OSError:
        errors.append(1)


async def main(url, rate, seconds):
    u = urlparse(url)
    loop = asyncio.get_running_loop()
    late, errors, tasks = [], [], []
    n = int(rate * seconds)
    t0 = time.monotonic() + 0.01
    for i in range(n):
        at = t0 + i / rate
        delay = at - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        late.append((time.monotonic() - at) * 1e6)
        tasks.append(loop.create_task(one(u.hostname, u.port, late, errors)))
    sent_window = time.monotonic() - t0
    await asyncio.gather(*tasks)
    late.sort()
    p = lambda q: late[min(len(late) - 1, int(q / 100 * (len(late) - 1)))]
    achieved = n / max(sent_window, seconds)
    print("achieved %.1f/s ratio %.4f late p50 %.0f us p99 %.0f us max %.0f us (%d failed)"
          % (achieved, achieved / rate, p(50), p(99), late[-1], len(errors)))


asyncio.run(main(sys.argv[1], float(sys.argv[2]), float(sys.argv[3])))
