#!/usr/bin/env bash
# The whole test suite on a fresh machine: dependencies, llama-server, build, every test.
# Usage: scripts/test.sh [extra ctest arguments, e.g. -L unit]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
build=${LOGITAUDIT_BUILD_DIR:-build}

bash scripts/bootstrap.sh
bash scripts/get-llama-server.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"
cd "$build"
ctest --output-on-failure -j 2 --timeout 900 "$@"
