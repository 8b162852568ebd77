#!/usr/bin/env bash
# The console test's navigations, read from its source: the wait on a page being 'ready' and
# every change of the hash live in its one helper, navigate() (and open(), which calls it), which
# waits for a render that began after the action. A wait on 'ready' alone returns at once on the
# page before the click, which is ready too: the test then reads a page still loading (CI saw
# an empty audit list after a click on 'older'). console.test.mjs also checks this at run time:
# a check that started a render no navigate() waited for fails.
# Usage: console_navigation_test.sh tests/console/console.test.mjs
set -euo pipefail
python3 - "$1" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
lines = src.splitlines()

def body(name):
    """The line range of `async function NAME(...) {` up to its closing brace at column 0."""
    for i, l in enumerate(lines):
        if re.match(rf"async function {name}\(", l):
            for j in range(i + 1, len(lines)):
                if lines[j] == "}":
                    return range(i, j + 1)
    return None

helpers = {n: body(n) for n in ("navigate", "open")}
bad = [f"no helper {n}()" for n, r in helpers.items() if r is None]
inside = lambda i, n: helpers[n] is not None and i in helpers[n]
rules = [
    (r"dataset\.state\s*===?\s*'ready'", "navigate", "waits on 'ready' outside navigate()"),
    (r"waitForFunction\(", "navigate", "waits for a page state outside navigate()"),
    (r"location\.hash\s*=(?!=)", "open", "sets the hash outside open()"),
    (r"waitForNavigation|waitForURL", None, "waits for a URL, not for a render of the console"),
]
for i, l in enumerate(lines):
    code = l.split("//")[0]
    for pattern, helper, what in rules:
        if re.search(pattern, code) and not (helper and inside(i, helper)):
            bad.append(f"line {i + 1}: {what}: {l.strip()}")
calls = len(re.findall(r"\bnavigate\(|\bopen\(", src))
if calls < 10:
    bad.append(f"only {calls} navigations through the helpers: is this still the console test?")
print(f"{calls} navigations through navigate()/open()")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
