#!/usr/bin/env bash
# Installs exactly the Debian 12 packages that logitaudit's build and tests need.
# Idempotent: when everything is present it changes nothing and returns at once.
# Usage: scripts/bootstrap.sh [--test | --demo]
#   --test  also what only the test command uses: Debian's chromium for the console's browser
#           tests, and the test-only npm tools of tests/console (npm ci, from its lockfile)
#   --demo  only what scripts/demo.sh builds and runs (no test, fuzz, benchmark or unit tooling)
set -euo pipefail
tests=0
demo=0
[[ ${1:-} == --test ]] && tests=1
[[ ${1:-} == --demo ]] && demo=1

packages=(
  g++ cmake ninja-build pkg-config  # toolchain
  libboost1.81-dev                  # Asio + Beast (libboost-dev is 1.74: too old)
  nlohmann-json3-dev libsqlite3-dev libxxhash-dev libspdlog-dev libcli11-dev
  libssl-dev                        # https backends, sha256 of model files, HMAC-SHA256 of webhook payloads
  libpq-dev                         # the PostgreSQL store (fleets)
  python3                           # the independent verifier and the Python baseline clients
  curl                              # health checks in scripts/demo.sh
)
[[ $demo -eq 1 ]] || packages+=(
  libgtest-dev                      # GoogleTest
  clang libclang-rt-14-dev          # libFuzzer targets (scripts/fuzz.sh)
  lld                               # scripts/test.sh's links: a seventh of ld's time
  systemd                           # systemd-analyze verify of daemon/logitauditd.service
  wrk                               # the HTTP load baseline of bench/run.sh
  prometheus                        # promtool: the tests check /metrics with Prometheus' own parser
  libxml2-utils                     # xmllint: the tests check the JUnit report against its schema
)
# The console's browser tests (no browser download); a private PostgreSQL cluster; a TLS
# terminator in front of llama-server for the https tests.
[[ $tests -eq 1 ]] && packages+=(chromium postgresql stunnel4)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$p")
done
npm_tools() {  # the console tests' npm packages, exactly as the lockfile says
  [[ $tests -eq 1 ]] || return 0
  local dir
  dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/console" && pwd)
  [[ -f $dir/node_modules/.package-lock.json && ! $dir/package-lock.json -nt $dir/node_modules/.package-lock.json ]] && return 0
  command -v npm >/dev/null || { echo "bootstrap: npm (Node.js 20) is needed for the console tests" >&2; exit 1; }
  echo "bootstrap: npm ci in tests/console" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || { echo "bootstrap: npm ci failed in $dir" >&2; exit 1; }
}
if [[ ${#missing[@]} -eq 0 ]]; then npm_tools; exit 0; fi

echo "bootstrap: installing ${missing[*]}" >&2
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq || { echo "bootstrap: apt-get update failed: is a Debian mirror reachable?" >&2; exit 1; }
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
  || { echo "bootstrap: apt-get install ${missing[*]} failed" >&2; exit 1; }
npm_tools
