#!/usr/bin/env bash
# Installs exactly the Debian 12 packages that logitaudit's build and tests need.
# Idempotent: when everything is present it changes nothing and returns at once.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config  # toolchain
  libboost1.81-dev                  # Asio + Beast (libboost-dev is 1.74: too old)
  nlohmann-json3-dev libsqlite3-dev libxxhash-dev libspdlog-dev libcli11-dev
  libssl-dev                        # sha256 of model files, HMAC-SHA256 of webhook payloads
  libgtest-dev                      # GoogleTest
  python3                           # the independent verifier and the Python baseline clients
  curl                              # health checks in scripts/demo.sh
  clang libclang-rt-14-dev          # libFuzzer targets (scripts/fuzz.sh)
  systemd                           # systemd-analyze verify of daemon/logitauditd.service
  wrk                               # the HTTP load baseline of bench/run.sh
  prometheus                        # promtool: the tests check /metrics with Prometheus' own parser
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "bootstrap: installing ${missing[*]}" >&2
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq || { echo "bootstrap: apt-get update failed: is a Debian mirror reachable?" >&2; exit 1; }
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
  || { echo "bootstrap: apt-get install ${missing[*]} failed" >&2; exit 1; }
