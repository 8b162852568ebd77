#!/usr/bin/env bash
# The shipped systemd unit parses cleanly: systemd-analyze verify prints nothing for it
# (it exits 0 even on unknown values, so any output is a failure). Skips (77) without systemd.
# Usage: systemd_unit_test.sh UNIT LOGITAUDITD
set -euo pipefail
command -v systemd-analyze >/dev/null || { echo "systemd-analyze not installed"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
sed "s|/usr/local/bin/logitauditd|$2|" "$1" >"$d/logitauditd.service"
out=$(systemd-analyze verify "$d/logitauditd.service" 2>&1) || { echo "$out"; exit 1; }
if [[ -n $out ]]; then echo "$out"; exit 1; fi
grep -q '^ExecStart=/usr/local/bin/logitauditd --config /etc/logitaudit/logitauditd.json$' "$1"
echo "unit verified"
