#!/usr/bin/env bash
# The suite's own scheduling, read back from CTest: every test that starts llama-servers holds
# the `llama_servers` lock (two at once on 2 cores made a 5 s test take 141 s: their threads
# spin against each other), has its own timeout, and needs the fixtures it uses. A property
# lost in CMake (a list passed to gtest_discover_tests) changes nothing visible but the clock.
# (The fault tests on fakes run beside them on purpose.)
# Usage: ctest_properties_test.sh BUILD_DIR
set -euo pipefail
cd "$1"
ctest --show-only=json-v1 | python3 -c '
import json, sys
tests = json.load(sys.stdin)["tests"]
bad = []
seen = 0
for t in tests:
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    labels = props.get("LABELS", [])
    name = t["name"]
    real_server_fault = name.startswith(("faults.a_llama_server_killed", "faults.a_backend_restarted"))
    if "faults" in labels and not props.get("TIMEOUT"):
        bad.append(f"{name}: no TIMEOUT of its own")
    if not ("e2e" in labels or real_server_fault) or name == "models.generate":
        continue
    seen += 1
    if "llama_servers" not in props.get("RESOURCE_LOCK", []):
        bad.append(f"{name}: no RESOURCE_LOCK llama_servers")
    if not props.get("TIMEOUT"):
        bad.append(f"{name}: no TIMEOUT of its own")
    needs = set(props.get("FIXTURES_REQUIRED", []))
    if name.startswith("fleet_e2e.") and not needs & {"postgres", "real_servers"}:
        bad.append(f"{name}: does not require the postgres fixture")
if seen < 28:
    bad.append(f"only {seen} tests with llama-servers listed: discovery failed?")
print(f"{seen} tests with llama-servers checked")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
'
