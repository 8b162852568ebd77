#!/usr/bin/env bash
# A private PostgreSQL cluster for the tests (and for trying the PostgreSQL store by hand):
# initdb in a new temporary folder, as the unprivileged `postgres` user when run as root, on a
# free loopback port, trust authentication for the user `la`. Nothing of the system's own
# PostgreSQL is used or touched.
# Usage: scripts/postgres-cluster.sh start STATE [--durable]
#                                                  prints the admin URL; STATE (a file) keeps
#                                                  the URL and the cluster's folder. Without
#                                                  --durable, commits are not flushed (fast,
#                                                  but a crash loses the last ones)
#        scripts/postgres-cluster.sh stop STATE    stops the cluster and deletes its folder
#        scripts/postgres-cluster.sh halt STATE    stops the server as a crash would, keeps its data
#        scripts/postgres-cluster.sh resume STATE  starts it again on the same port
set -euo pipefail
cmd=${1:-} state=${2:-} durable=${3:-}
[[ ($cmd == start || $cmd == stop || $cmd == halt || $cmd == resume) && -n $state ]] || { sed -n 2,14p "$0" >&2; exit 2; }
bin=$(pg_config --bindir 2>/dev/null || true)
[[ -x $bin/initdb ]] || bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -x $bin/initdb ]] || { echo "postgres-cluster: initdb not found: install Debian's postgresql" >&2; exit 1; }
as_owner() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

run_server() {  # DIR PORT DURABLE
  # Enough connections for a fleet of daemons; unless durable, fast: commits are not flushed.
  local fast="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
  [[ $3 == --durable ]] && fast=""
  as_owner "$bin/pg_ctl" -D "$1/data" -l "$1/log" -w start \
    -o "-p $2 -k $1 -c listen_addresses=127.0.0.1 -c max_connections=200 $fast" >/dev/null
}
if [[ $cmd == halt || $cmd == resume ]]; then
  dir=$(sed -n 2p "$state") port=$(sed -n 3p "$state") durable=$(sed -n 4p "$state")
  if [[ $cmd == halt ]]; then as_owner "$bin/pg_ctl" -D "$dir/data" stop -m immediate -w >/dev/null
  else run_server "$dir" "$port" "$durable" || { tail -5 "$dir/log" >&2; exit 1; }; fi
  exit 0
fi
if [[ $cmd == stop ]]; then
  [[ -f $state ]] || exit 0
  dir=$(sed -n 2p "$state")
  [[ -d $dir/data ]] && as_owner "$bin/pg_ctl" -D "$dir/data" stop -m immediate -w >/dev/null 2>&1 || true
  [[ -n $dir && -d $dir ]] && rm -rf "$dir"
  rm -f "$state"
  exit 0
fi

dir=$(mktemp -d /tmp/logitaudit-pg.XXXXXX)
chmod 755 "$dir"
[[ $(id -u) -eq 0 ]] && chown postgres "$dir"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_owner "$bin/initdb" -D "$dir/data" -A trust -U la -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; rm -rf "$dir"; exit 1; }
run_server "$dir" "$port" "$durable" || { cat "$dir/log" >&2; rm -rf "$dir"; exit 1; }
url="postgresql://la@127.0.0.1:$port/postgres"
mkdir -p "$(dirname "$state")"
printf '%s\n%s\n%s\n%s\n' "$url" "$dir" "$port" "$durable" >"$state"
echo "$url"
