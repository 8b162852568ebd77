#!/usr/bin/env python3
"""A real HTTP receiver for the webhook tests: checks each delivery's HMAC-SHA256 signature
with the shared secret, answers 500 to the first --fail-first deliveries and 204 after, and
appends one JSON line per request to --log. Written independently of the C++ signer."""
import argparse
import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--secret", required=True)
parser.add_argument("--port-file", required=True)
parser.add_argument("--log", required=True)
parser.add_argument("--fail-first", type=int, default=0)
args = parser.parse_args()
lock = threading.Lock()
failures_left = [args.fail_first]


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        expected = "sha256=" + hmac.new(args.secret.encode(), body, hashlib.sha256).hexdigest()
        signed = hmac.compare_digest(expected, self.headers.get("X-Logitaudit-Signature", ""))
        with lock:
            status = 500 if failures_left[0] > 0 else 204
            failures_left[0] -= status == 500
            try:
                kind = json.loads(body).get("kind")
            except ValueError:
                kind = None
            with open(args.log, "a") as f:
                f.write(json.dumps({"path": self.path, "signature_ok": signed, "delivery": self.headers.get("X-Logitaudit-Delivery"),
                                    "kind": kind, "answered": status}) + "\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *a):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.replace(args.port_file + ".tmp", args.port_file)
server.serve_forever()
