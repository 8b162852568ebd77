#!/usr/bin/env python3
"""Baseline burst clients in plain Python (standard library only), for bench/burst.

  py_burst.py threads URL C     one thread per request, warm connections, one Barrier
  py_burst.py asyncio URL C     asyncio raw streams, warm connections, one Event

Sends one burst of C identical POST /completion requests and prints the client-side
launch spread in ns (last write minus first write, time.monotonic_ns = CLOCK_MONOTONIC).
"""
import asyncio
import http.client
import sys
import threading
import time
from urllib.parse import urlparse

BODY = b'{"prompt":"burst","n_predict":8,"n_probs":5,"temperature":0.0,"cache_prompt":false,"stream":false}'


def request_bytes(host, port):
    return (b"POST /completion HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % (host.encode(), port, len(BODY))) + BODY


def threads_burst(host, port, c):
    conns = []
    for _ in range(c):
        conn = http.client.HTTPConnection(host, port, timeout=30)
        conn.connect()
        conns.append(conn)
    barrier = threading.Barrier(c)
    writes = [0] * c

    def member(i):
        barrier.wait()
        writes[i] = time.monotonic_ns()
        conns[i].request("POST", "/completion", body=BODY, headers={"Content-Type": "application/json"})
        conns[i].getresponse().read()

    ts = [threading.Thread(target=member, args=(i,)) for i in range(c)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return max(writes) - min(writes)


async def asyncio_burst(host, port, c):
    streams = [await asyncio.open_connection(host, port) for _ in range(c)]
    go = asyncio.Event()
    writes = [0] * c
    wire = request_bytes(host, port)

    async def member(i):
        reader, writer = streams[i]
        await go.wait()
        writes[i] = time.monotonic_ns()
        writer.write(wire)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        writer.close()

    tasks = [asyncio.create_task(member(i)) for i in range(c)]
    await asyncio.sleep(0)
    go.set()
    await asyncio.gather(*tasks)
    return max(writes) - min(writes)


def main():
    kind, url, c = sys.argv[1], urlparse(sys.argv[2]), int(sys.argv[3])
    if kind == "threads":
        spread = threads_burst(url.hostname, url.port, c)
    else:
        spread = asyncio.run(asyncio_burst(url.hostname, url.port, c))
    print(spread)


if __name__ == "__main__":
    main()
