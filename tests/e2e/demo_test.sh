#!/usr/bin/env bash
# e2e: the README's first command, as a new user runs it. The full demo (two generated models,
# two real llama-servers, logitauditd, the seed protocol through the CLI) must print the
# findings table with its controls and predictions and leave no process behind; then the
# --keep / reuse / --stop cycle on the quick configuration.
# On the random models (--random): generated deterministically in a second, where the trained
# default would train for a minute (once per machine, outside the test command's budget). The
# test asserts the report's consistency with its own evidence, which holds on either kind;
# scripts/train-model.sh has its own test (train_model_test.sh).
# Usage: demo_test.sh REPO BUILD_DIR
set -euo pipefail
repo=$1
export LOGITAUDIT_BUILD_DIR=$2
state=$(mktemp -d /tmp/logitaudit-demo-XXXXXX)
export LOGITAUDIT_DEMO_STATE=$state
cd "$repo"
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "expected '$2' in $1"; }; }
cleanup() { bash scripts/demo.sh --stop >/dev/null 2>&1 || true; rm -rf "$state"; }
trap cleanup EXIT

before=$(pgrep -x llama-server | sort || true)
bash scripts/demo.sh --random >"$state/out.txt" 2>"$state/err.txt" || { cat "$state/err.txt" >&2; fail "demo exited $?"; }
expect "$state/out.txt" "Pooled over 2 backend(s):"
# What the run measured is the machine's (solo repeats and bursts on this CPU and ggml variant):
# the test asserts that the report says it consistently, never what it was. The solo-repeat row
# and prediction P1 (solo repeats are bit-identical) must agree; a prediction whose evidence did
# not happen (a burst that did not batch on a busy machine) is UNDECIDED, never missing.
expect "$state/out.txt" "tiny-random:"
expect "$state/out.txt" "small-random:"
# The seed protocol plans three positive controls: each row says it diverged, or that it had no
# room to (ineffective on a peaked distribution, not counted); none is identical and counted.
# (A control whose logits diverged may keep its tokens: the model's greedy text, not the comparator.)
[[ $(grep -cE -- "<- control: (diverged|logits diverged, tokens identical|.*ineffective, not counted)" "$state/out.txt") -ge 3 ]] ||
  { cat "$state/out.txt" >&2; fail "three controls in the pooled table, each diverged or ineffective"; }
grep -q -- "CONTROL IDENTICAL" "$state/out.txt" && { cat "$state/out.txt" >&2; fail "a counted control was identical"; }
for p in P1 P2 P3 P4; do grep -qE "^ $p (HELD|FAILED|UNDECIDED) " "$state/out.txt" || fail "prediction $p not evaluated"; done
repeat_row() {  # FILE -> "identical compared" of the pooled solo-repeat row's logit column
  sed -nE 's/^ repeat_greedy +([0-9]+)\/([0-9]+) \(.*/\1 \2/p' "$1" | head -1
}
read -r same compared <<<"$(repeat_row "$state/out.txt")"
[[ -n ${compared:-} && $compared -gt 0 ]] || { cat "$state/out.txt" >&2; fail "no pooled repeat_greedy row with compared streams"; }
p1=$([[ $same == "$compared" ]] && echo HELD || echo FAILED)
expect "$state/out.txt" " P1 $p1"
# The report opens with its verdict: at most seven lines before the first blank one, the first
# on solo repeats with the pooled table's own count, the controls named, the last what was left
# undecided; and it says "identical" of solo repeats exactly when the table does.
verdict=$(sed '/^$/q' "$state/out.txt" | sed '$d')
[[ $(wc -l <<<"$verdict") -le 7 ]] || fail "a verdict of more than seven lines: $verdict"
# Its groups' counts ("identical on tiny (30/30 ...), moved on small (28/30 ...)") sum to the row.
solo_sum=$(head -1 <<<"$verdict" | grep -oE '[0-9]+/[0-9]+ logit-identical' | awk -F'[/ ]' '{k+=$1; n+=$2} END {print k "/" n}')
[[ $solo_sum == "$same/$compared" ]] || fail "the verdict's solo line gives $solo_sum, the table $same/$compared: $verdict"
if [[ $same == "$compared" ]]; then
  head -1 <<<"$verdict" | grep -qE "^Solo: +identical" || fail "the table's solo repeats are identical, the verdict says otherwise: $verdict"
else
  head -1 <<<"$verdict" | grep -q "moved" || fail "the table's solo repeats moved, the verdict does not say so: $verdict"
fi
grep -qE "^Comparator: +sharp: [0-9]+/[0-9]+ positive controls diverged" <<<"$verdict" || fail "no comparator line: $verdict"
tail -1 <<<"$verdict" | grep -qE "^Undecided: " || fail "the verdict does not end with what was undecided: $verdict"
expect "$state/err.txt" "done 140/140 (100%)  failed 0"
ls "$state"/*.pid >/dev/null 2>&1 && fail "pid files left after a run without --keep"
for log in "$state"/llama-*.log "$state"/logitauditd.log; do
  [[ -f $log ]] || fail "no $log"
done
pgrep -f -- "--db $state/logitaudit.db" >/dev/null && fail "logitauditd still running"
after=$(pgrep -x llama-server | sort || true)
[[ -z $(comm -13 <(echo "$before") <(echo "$after")) ]] || fail "llama-server processes left behind"

# --keep: the processes stay, the CLI reaches the daemon at the printed URL, a second run
# reuses them, --stop ends them.
bash scripts/demo.sh --random --quick --keep >"$state/out2.txt" 2>"$state/err2.txt" || { cat "$state/err2.txt" >&2; fail "--keep run"; }
expect "$state/err2.txt" "kept running"
url=$(cat "$state/logitauditd.url")
pids=$(cat "$state"/*.pid)
for p in $pids; do kill -0 "$p" || fail "kept process $p is gone"; done
LOGITAUDIT_SERVER=$url "$LOGITAUDIT_BUILD_DIR/cli/logitaudit" list --json >"$state/list.json"
python3 - "$state/list.json" <<'PY'
import json, sys
audits = json.load(open(sys.argv[1]))["audits"]
assert [a["status"] for a in audits] == ["done", "done"], audits
assert "quick" in audits[0]["tags"] and "demo" in audits[1]["tags"], audits
PY
bash scripts/demo.sh --random --quick --keep >"$state/out3.txt" 2>"$state/err3.txt" || { cat "$state/err3.txt" >&2; fail "reuse run"; }
expect "$state/err3.txt" "reusing the kept llama-server(s) and logitauditd at $url"
read -r same compared <<<"$(repeat_row "$state/out3.txt")"
[[ -n ${compared:-} && $compared -gt 0 ]] || { cat "$state/out3.txt" >&2; fail "no repeat_greedy row in the reuse run"; }
[[ $(cat "$state"/*.pid | sort) == $(echo "$pids" | sort) ]] || fail "the reuse run started new processes"
bash scripts/demo.sh --stop 2>/dev/null
for p in $pids; do
  kill -0 "$p" 2>/dev/null && ! grep -qs '^State:.*Z' "/proc/$p/status" && fail "process $p survived --stop"
done
echo "demo test passed"
