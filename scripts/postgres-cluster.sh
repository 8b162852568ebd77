#!/usr/bin/env bash
# A private PostgreSQL cluster for the tests (and for trying the PostgreSQL store by hand):
# initdb in a new temporary folder, as the unprivileged `postgres` user when run as root, on a
# free loopback port, trust authentication for the user `la`. Nothing of the system's own
# PostgreSQL is used or touched.
# Usage: scripts/postgres-cluster.sh start STATE   prints the admin URL; STATE (a file) keeps
#                                                  the URL and the cluster's folder
#        scripts/postgres-cluster.sh stop STATE    stops the cluster and deletes its folder
set -euo pipefail
cmd=${1:-} state=${2:-}
[[ ($cmd == start || $cmd == stop) && -n $state ]] || { sed -n 2,9p "$0" >&2; exit 2; }
bin=$(pg_config --bindir 2>/dev/null || true)
[[ -x $bin/initdb ]] || bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -x $bin/initdb ]] || { echo "postgres-cluster: initdb not found: install Debian's postgresql" >&2; exit 1; }
as_owner() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

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
# Small and fast: no durability (a test cluster), enough connections for a fleet of daemons.
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w start \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
  >/dev/null || { cat "$dir/log" >&2; rm -rf "$dir"; exit 1; }
url="postgresql://la@127.0.0.1:$port/postgres"
mkdir -p "$(dirname "$state")"
printf '%s\n%s\n' "$url" "$dir" >"$state"
echo "$url"
