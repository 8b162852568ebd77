#!/usr/bin/env bash
# e2e: the README's tour, run exactly as written (the block between the tour markers), in a
# fresh directory that sees the repository's build/ and .cache/ — a new user copying and
# pasting. Every command must succeed; then the database and the processes are checked.
# Usage: readme_tour_test.sh REPO BUILD_DIR
set -euo pipefail
repo=$1
build=$(cd "$2" && pwd)
work=$(mktemp -d /tmp/logitaudit-tour-XXXXXX)
fail() { echo "FAIL: $*" >&2; exit 1; }
cleanup() {
  pkill -f -- "--backend tiny=http://127.0.0.1:8081" 2>/dev/null || true
  pkill -f -- "llama-server -m .cache/models/tiny.gguf --port 8081" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
for port in 8081 8700; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then fail "port $port is taken; the tour needs it"; fi
done
ln -s "$build" "$work/build"
ln -s "$repo/.cache" "$work/.cache"
awk '/<!-- tour:begin -->/{on=1; next} /<!-- tour:end -->/{on=0} on && !/^```/' "$repo/README.md" >"$work/tour.sh"
[[ $(wc -l <"$work/tour.sh") -gt 10 ]] || fail "no tour block in README.md"
cd "$work"
# -e: any failing command fails the test; the transcript is kept for the log.
if ! bash -e -x tour.sh >transcript.txt 2>&1; then
  tail -60 transcript.txt >&2
  tail -20 logitauditd.log llama.log >&2 || true
  fail "the tour stopped at a failing command"
fi
grep -q "control: diverged" transcript.txt || fail "submit --wait printed no findings table"
grep -q "| repeat_greedy |" transcript.txt || fail "the markdown report is missing"
grep -q "^verified 2 job(s): 140 streams" transcript.txt || { tail -20 transcript.txt >&2; fail "verify did not verify both audits"; }
grep -q "^MISMATCH" transcript.txt && fail "verify found a mismatch"
# The tour's last line signals the daemon; it exits once its job queue is idle, which takes as
# long as the machine needs: wait for the exit (up to a minute) rather than a fixed second.
for _ in $(seq 1 600); do
  pgrep -f -- "--backend tiny=http://127.0.0.1:8081" >/dev/null || break
  sleep 0.1
done
pgrep -f -- "--backend tiny=http://127.0.0.1:8081" >/dev/null && fail "kill %1 %2 left the daemon running (a minute later)"
echo "tour passed"
