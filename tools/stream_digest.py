#!/usr/bin/env python3
"""Independent recomputation of logitaudit's stream digests (docs/protocol.md).

Shares no code with the C++ program: it builds the canonical encoding from a server's raw
JSON (or reads a stored encoding) and hashes it with libxxhash's XXH3-128 through ctypes.

  stream_digest.py FILE...            raw llama.cpp /completion JSON, its SSE stream, or an
                                      OpenAI /v1/completions JSON (shape detected)
  stream_digest.py --encoded FILE...  stored canonical encodings (binary)
  stream_digest.py --db FILE.db       every stream of a logitaudit database: recompute both
                                      digests from the stored encoding, report mismatches
  stream_digest.py --bundle FILE      an evidence bundle: its content digest (XXH3-128 of the
                                      body line's bytes), then both digests of every stream in it

Prints one line per file: token digest, logit digest, token count, keying, file.
"""
import ctypes
import ctypes.util
import json
import struct
import sys


class _XXH128(ctypes.Structure):
    _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]


def _load_xxhash():
    for name in ("libxxhash.so.0", ctypes.util.find_library("xxhash") or ""):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.XXH3_128bits.restype = _XXH128
        lib.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        lib.XXH3_64bits.restype = ctypes.c_uint64
        lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        return lib
    sys.exit("stream_digest: libxxhash not found (Debian package libxxhash0)")


XXH = _load_xxhash()


def xxh128_hex(data: bytes) -> str:
    h = XXH.XXH3_128bits(data, len(data))
    # Canonical form: big-endian high 64 bits, then low 64 bits.
    return struct.pack(">QQ", h.high64, h.low64).hex()


def text_key(text: str) -> int:
    b = text.encode("utf-8", errors="surrogatepass")
    return struct.unpack("<q", struct.pack("<Q", XXH.XXH3_64bits(b, len(b))))[0]


def tokens_from_native(obj):
    probs = obj.get("completion_probabilities")
    if not isinstance(probs, list):
        raise ValueError("no completion_probabilities")
    return [(p["id"], p["logprob"], [(t["id"], t["logprob"]) for t in p["top_logprobs"]]) for p in probs], 0


def tokens_from_sse(text):
    out = []
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            continue
        ev = json.loads(payload)
        out.extend(tokens_from_native(ev)[0] if "completion_probabilities" in ev else [])
        if ev.get("stop") is True:
            return out, 0
    raise ValueError("event stream has no final event")


def tokens_from_openai(obj):
    lp = obj["choices"][0]["logprobs"]
    if "content" in lp:
        items = lp["content"]
        keyed = all("id" in i and all("id" in t for t in i.get("top_logprobs", [])) for i in items)
        if keyed:
            return [(i["id"], i["logprob"], [(t["id"], t["logprob"]) for t in i.get("top_logprobs", [])]) for i in items], 0
        rows = [(i["token"], i["logprob"], [(t["token"], t["logprob"]) for t in i.get("top_logprobs", [])]) for i in items]
    else:
        tops = lp.get("top_logprobs") or [None] * len(lp["tokens"])
        ids = [t[9:] if t.startswith("token_id:") and t[9:].isdigit() else None for t in lp["tokens"]]
        rows = [(tok, p, list((top or {}).items())) for tok, p, top in zip(lp["tokens"], lp["token_logprobs"], tops)]
        if all(i is not None for i in ids) and all(k.startswith("token_id:") for r in rows for k, _ in r[2]):
            conv = [(int(t[9:]), p, [(int(k[9:]), v) for k, v in top]) for t, p, top in rows]
            return [(t, p, sorted(top, key=lambda e: (-e[1], e[0]))) for t, p, top in conv], 0
    conv = [(text_key(t), p, [(text_key(k), v) for k, v in top]) for t, p, top in rows]
    return [(t, p, sorted(top, key=lambda e: (-e[1], e[0]))) for t, p, top in conv], 1


def key_bytes(keying, k):
    return struct.pack("<i", k) if keying == 0 else struct.pack("<q", k)


def encode(tokens, keying):
    out = bytearray(b"LAS1") + struct.pack("<BI", keying, len(tokens))
    for k, lp, top in tokens:
        out += key_bytes(keying, k) + struct.pack("<d", lp) + struct.pack("<H", len(top))
        for tk, tlp in top:
            out += key_bytes(keying, tk) + struct.pack("<d", tlp)
    return bytes(out)


def token_section(tokens, keying):
    out = bytearray(b"LAT1") + struct.pack("<BI", keying, len(tokens))
    for k, _, _ in tokens:
        out += key_bytes(keying, k)
    return bytes(out)


def decode(data):
    if data[:4] != b"LAS1":
        raise ValueError("not a canonical stream encoding (magic)")
    keying, n = struct.unpack_from("<BI", data, 4)
    ksize, kfmt = (4, "<i") if keying == 0 else (8, "<q")
    pos, tokens = 9, []
    for _ in range(n):
        (k,) = struct.unpack_from(kfmt, data, pos)
        (lp,) = struct.unpack_from("<d", data, pos + ksize)
        (m,) = struct.unpack_from("<H", data, pos + ksize + 8)
        pos += ksize + 10
        top = []
        for _ in range(m):
            (tk,) = struct.unpack_from(kfmt, data, pos)
            (tlp,) = struct.unpack_from("<d", data, pos + ksize)
            top.append((tk, tlp))
            pos += ksize + 8
        tokens.append((k, lp, top))
    if pos != len(data):
        raise ValueError("trailing bytes after the last token")
    return tokens, keying


def digests_of_file(path, encoded):
    raw = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    if encoded:
        tokens, keying = decode(raw)
        return xxh128_hex(token_section(tokens, keying)), xxh128_hex(raw), len(tokens), keying
    text = raw.decode("utf-8")
    if text.lstrip().startswith("data:"):
        tokens, keying = tokens_from_sse(text)
    else:
        obj = json.loads(text)
        tokens, keying = tokens_from_openai(obj) if "choices" in obj else tokens_from_native(obj)
    return xxh128_hex(token_section(tokens, keying)), xxh128_hex(encode(tokens, keying)), len(tokens), keying


def check_database(path):
    import sqlite3
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    columns = [c[1] for c in con.execute("PRAGMA table_info(streams)")]
    pruned_col = "s.pruned_at" if "pruned_at" in columns else "''"
    rows = con.execute("SELECT r.job_id, r.id, r.group_index, r.request_index, s.token_digest, s.logit_digest, "
                       f"s.encoding, {pruned_col} FROM streams s JOIN runs r ON r.id = s.run_id ORDER BY r.id")
    checked = bad = pruned = 0
    for job, run, group, request, tok, logit, enc, pruned_at in rows:
        if pruned_at and not enc:
            pruned += 1  # the retention policy removed its bytes; its digests stay
            continue
        checked += 1
        try:
            tokens, keying = decode(bytes(enc))
            t, l = xxh128_hex(token_section(tokens, keying)), xxh128_hex(bytes(enc))
        except (ValueError, struct.error) as e:
            t = l = f"undecodable ({e})"
        if t != bytes(tok).hex() or l != bytes(logit).hex():
            bad += 1
            print(f"MISMATCH job {job} run {run} (group {group} request {request}): stored "
                  f"{bytes(tok).hex()}/{bytes(logit).hex()}, recomputed {t}/{l}")
    print(f"{checked} streams checked, {bad} mismatches" + (f", {pruned} pruned" if pruned else ""))
    return 1 if bad else 0


def check_bundle(path):
    import base64
    data = open(path, "rb").read()
    nl = data.find(b"\n")
    if nl < 0:
        print(f"{path}: no header line")
        return 1
    head = json.loads(data[:nl])
    if head.get("format") != "logitaudit-bundle":
        print(f"{path}: not a logitaudit bundle")
        return 1
    body = data[nl + 1:]
    if body.endswith(b"\n"):
        body = body[:-1]
    bad = 0
    digest = xxh128_hex(body)
    if digest != head.get("content_digest"):
        bad += 1
        print(f"MISMATCH content digest: the body hashes to {digest}, the header says {head.get('content_digest')}")
    checked = pruned = 0
    for audit in json.loads(body)["audits"]:
        for row in audit["tables"].get("streams", []):
            if row.get("pruned_at") and not row["encoding"]["blob"]:
                pruned += 1  # the retention policy removed its bytes; its digests stay
                continue
            checked += 1
            enc = base64.b64decode(row["encoding"]["blob"])
            tok = base64.b64decode(row["token_digest"]["blob"]).hex()
            logit = base64.b64decode(row["logit_digest"]["blob"]).hex()
            try:
                tokens, keying = decode(enc)
                t, l = xxh128_hex(token_section(tokens, keying)), xxh128_hex(enc)
            except (ValueError, struct.error) as e:
                t = l = f"undecodable ({e})"
            if t != tok or l != logit:
                bad += 1
                print(f"MISMATCH audit {audit['id']} run {row['run_id']}: stored {tok}/{logit}, recomputed {t}/{l}")
    print(f"bundle version {head.get('version')}: content digest {'ok' if digest == head.get('content_digest') else 'MISMATCH'}; "
          f"{checked} streams checked, {bad} mismatches" + (f", {pruned} pruned" if pruned else ""))
    return 1 if bad else 0


def main(argv):
    if argv[:1] == ["--db"] and len(argv) == 2:
        return check_database(argv[1])
    if argv[:1] == ["--bundle"] and len(argv) == 2:
        return check_bundle(argv[1])
    encoded = "--encoded" in argv
    files = [a for a in argv if a != "--encoded"]
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    status = 0
    for f in files:
        try:
            tok, logit, n, keying = digests_of_file(f, encoded)
            print(f"{tok} {logit} {n} {'id' if keying == 0 else 'text'} {f}")
        except (ValueError, KeyError, TypeError, IndexError, struct.error, json.JSONDecodeError) as e:
            print(f"stream_digest: {f}: {e}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
