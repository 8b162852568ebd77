#!/usr/bin/env python3
"""A fault-injecting HTTP proxy in front of a real llama-server, for scripts/chaos.sh.

Every request is forwarded as it came; the completions (POST /completion, /v1/completions)
are counted from 1, and the FAULT is applied to the ones it names. Everything else
(/health, /props, /metrics, /slots, /tokenize) passes through untouched, so a backend the
proxy hangs still looks healthy.

Usage: chaos-proxy.py UPSTREAM_PORT LISTEN_PORT FAULT [FROM] [COUNT]
  FAULT  hang       completions FROM.. are read and never answered
         drip       every streamed piece of completions FROM.. is held 1 s
         reset      completions FROM..FROM+COUNT-1 send half their answer, then RST
         status503  completions FROM..FROM+COUNT-1 get HTTP 503
         buffer     completions FROM.. are held whole and sent in one piece (a gateway that buffers
                    responses: every token of a stream arrives at once)
         late       completions FROM.. whose request is over 2,000 bytes (a long prompt) are forwarded
                    50 ms late (a gateway that queues large requests)
         malformed  completions FROM..FROM+COUNT-1 get a 200 whose body is not JSON
         truncated  completions FROM..FROM+COUNT-1 get a 200 cut in the middle of its JSON
         none       nothing
It prints one line per fault it applied, with the time: "<unix seconds> FAULT on completion N".
"""
import socket
import struct
import sys
import threading
import time

upstream_port, listen_port, fault = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
first = int(sys.argv[4]) if len(sys.argv) > 4 else 1
count = int(sys.argv[5]) if len(sys.argv) > 5 else 1 << 30
lock = threading.Lock()
completions = 0


def say(text):
    print(f"{time.time():.3f} {text}", flush=True)


def read_request(conn, buf):
    """One HTTP/1.1 request (head and Content-Length body) from conn; None at EOF."""
    while b"\r\n\r\n" not in buf[0]:
        data = conn.recv(65536)
        if not data:
            return None
        buf[0] += data
    head, rest = buf[0].split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while len(rest) < length:
        data = conn.recv(65536)
        if not data:
            return None
        rest += data
    buf[0] = rest[length:]
    return head + b"\r\n\r\n" + rest[:length]


class BufferedClient:
    """Stands in for the client while a response is held."""

    def __init__(self):
        self.data = b""

    def sendall(self, data):
        self.data += data


def pump_response(up, client, drip, hold=False):
    """Copies one response from up to client; returns False when either side closed. `hold`:
    the whole response is gathered, then sent at once."""
    if hold:
        held = BufferedClient()
        ok = pump_response(up, held, drip)
        client.sendall(held.data)
        return ok
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = up.recv(65536)
        if not data:
            return False
        buf += data
    head, body = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    chunked = any(l.lower().startswith(b"transfer-encoding:") and b"chunked" in l.lower() for l in lines)
    length = None
    for l in lines:
        if l.lower().startswith(b"content-length:"):
            length = int(l.split(b":", 1)[1])
    client.sendall(head + b"\r\n\r\n")
    if length is not None:
        while len(body) < length:
            data = up.recv(65536)
            if not data:
                return False
            body += data
        client.sendall(body[:length])
        return True
    if not chunked:  # until close
        client.sendall(body)
        while True:
            data = up.recv(65536)
            if not data:
                return False
            client.sendall(data)
    while True:  # chunked: forwarded chunk by chunk, each held `drip` seconds
        while b"\r\n" not in body:
            data = up.recv(65536)
            if not data:
                return False
            body += data
        size_line, body = body.split(b"\r\n", 1)
        size = int(size_line.split(b";")[0], 16)
        while len(body) < size + 2:
            data = up.recv(65536)
            if not data:
                return False
            body += data
        chunk, body = body[:size + 2], body[size + 2:]
        if drip and size > 0:
            time.sleep(drip)
        client.sendall(size_line + b"\r\n" + chunk)
        if size == 0:
            return True


def serve(client):
    global completions
    buf = [b""]
    up = None
    try:
        while True:
            req = read_request(client, buf)
            if req is None:
                return
            target = req.split(b" ", 2)[1]
            n = 0
            if req.startswith(b"POST") and target in (b"/completion", b"/v1/completions"):
                with lock:
                    completions += 1
                    n = completions
            hit = n >= first and (fault in ("hang", "drip", "buffer", "late") or n < first + count)
            if n and hit and fault == "hang":
                say(f"hang on completion {n}")
                while client.recv(65536):
                    pass
                return
            if n and hit and fault == "status503":
                say(f"status503 on completion {n}")
                body = b'{"error":{"code":503,"message":"injected by chaos-proxy"}}'
                client.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: "
                               + str(len(body)).encode() + b"\r\n\r\n" + body)
                continue
            if n and hit and fault in ("malformed", "truncated"):
                say(f"{fault} on completion {n}")
                body = b"<html>not json</html>" if fault == "malformed" else b'{"content":"x","completion_probabilities":[{"id":1,'
                client.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                               + str(len(body)).encode() + b"\r\n\r\n" + body)
                continue
            if n and hit and fault == "late" and len(req) > 2000:
                say(f"late on completion {n}")
                time.sleep(0.05)
            if up is None:
                up = socket.create_connection(("127.0.0.1", upstream_port))
            up.sendall(req)
            if n and hit and fault == "reset":
                say(f"reset on completion {n}")
                data = up.recv(256)
                client.sendall(data[: max(1, len(data) // 2)])
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()
                up.close()
                return
            if n and hit and fault == "drip" and n == first:
                say(f"drip from completion {n}")
            if n and hit and fault == "buffer" and n == first:
                say(f"buffer from completion {n}")
            if not pump_response(up, client, 1.0 if (n and hit and fault == "drip") else 0,
                                 hold=bool(n and hit and fault == "buffer")):
                return
    except OSError:
        return
    finally:
        for s in (client, up):
            try:
                if s:
                    s.close()
            except OSError:
                pass


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", listen_port))
listener.listen(256)
while True:
    c, _ = listener.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
