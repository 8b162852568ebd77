#!/usr/bin/env bash
# Provisions llama-server and llama-quantize from Debian's own binary packages into
# .cache/llama.cpp/ and leaves two wrappers in .cache/bin/ that behave like the real commands.
# Bookworm has no llama.cpp package; sid's binaries need sid's libc, so they run with sid's
# own loader from a private root. The system's apt configuration is never changed.
#
# Usage: scripts/get-llama-server.sh [--force]
# Env:   LOGITAUDIT_CACHE  cache folder (default: <repo>/.cache)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${LOGITAUDIT_CACHE:-$repo/.cache}
root=$cache/llama.cpp/root
bin=$cache/bin
stamp=$cache/llama.cpp/.complete
packages=(llama.cpp-tools libllama0 libggml0 libc6 libstdc++6 libgcc-s1 libssl3t64 libgomp1)

die() { echo "get-llama-server: $*" >&2; exit 1; }

# The wrappers: sid's tool under sid's loader. LOGITAUDIT_CPU_VARIANT=NAME runs it with ggml's
# CPU backend NAME alone (libggml-cpu-NAME.so): ggml loads the backends beside its executable,
# which under the loader is the loader's folder, so a folder per variant holds a copy of the
# loader and that one library (docs/frontier-cpu.md: other CPU generations on one host).
# LOGITAUDIT_LLAMA_SERVER_ARGS="ARG ..." goes before llama-server's own arguments, so that the
# caller's win: scripts/test.sh sets "--poll 0" there (docs/reliability.md).
write_wrappers() {
  local L=$root/usr/lib/x86_64-linux-gnu
  mkdir -p "$bin"
  for tool in llama-server llama-quantize; do
    [[ -x $root/usr/bin/$tool ]] || die "$tool not found in llama.cpp-tools"
    local extra=''
    [[ $tool == llama-server ]] && extra='${LOGITAUDIT_LLAMA_SERVER_ARGS:-} '
    cat > "$bin/$tool" <<WRAP
#!/bin/sh
# Runs Debian sid's $tool with sid's own loader and libraries (see scripts/get-llama-server.sh).
L='$L'
loader="\$L/ld-linux-x86-64.so.2"
if [ -n "\${LOGITAUDIT_CPU_VARIANT:-}" ]; then
  lib="\$L/ggml/backends0/libggml-cpu-\$LOGITAUDIT_CPU_VARIANT.so"
  [ -f "\$lib" ] || { echo "$tool: no ggml CPU variant '\$LOGITAUDIT_CPU_VARIANT' in \$L/ggml/backends0" >&2; exit 2; }
  V='$root/variants'/"\$LOGITAUDIT_CPU_VARIANT"
  if [ ! -x "\$V/ld-linux-x86-64.so.2" ]; then
    mkdir -p "\$V" && cp "\$loader" "\$V/.ld.\$\$" && mv -f "\$V/.ld.\$\$" "\$V/ld-linux-x86-64.so.2" || exit 2
  fi
  [ -e "\$V/libggml-cpu-\$LOGITAUDIT_CPU_VARIANT.so" ] || ln -sf "\$lib" "\$V/libggml-cpu-\$LOGITAUDIT_CPU_VARIANT.so"
  loader="\$V/ld-linux-x86-64.so.2"
fi
exec "\$loader" --library-path "\$L:\$L/ggml:\$L/llama" '$root/usr/bin/$tool' $extra"\$@"
WRAP
    chmod +x "$bin/$tool"
  done
}

if [[ ${1:-} != --force && -f $stamp && -x $bin/llama-server && -x $bin/llama-quantize ]]; then
  write_wrappers  # cheap, and an older wrapper learns what this one knows
  exit 0   # already provisioned: no network, no work
fi
[[ ${1:-} == --force ]] && rm -rf "$cache/llama.cpp" "$bin/llama-server" "$bin/llama-quantize"

command -v apt-get >/dev/null || die "apt-get not found: this script needs a Debian system"
command -v dpkg-deb >/dev/null || die "dpkg-deb not found"

# The mirror comes from the system's own sources; nothing is written into the system's config.
mirror=""
for f in /etc/apt/sources.list.d/*.sources; do
  [[ -f $f ]] || continue
  mirror=$(awk '/^URIs:/ {print $2; exit}' "$f")
  [[ -n $mirror ]] && break
done
if [[ -z $mirror && -f /etc/apt/sources.list ]]; then
  mirror=$(awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' /etc/apt/sources.list)
fi
[[ -n $mirror ]] || die "no Debian mirror found in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list"

work=$cache/llama.cpp/apt
rm -rf "$work"; mkdir -p "$work/lists/partial" "$work/debs" "$work/archives/partial"
echo "deb $mirror sid main" > "$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives"
          -o APT::Architecture=amd64 -o Debug::NoLocking=1)

echo "get-llama-server: reading sid's package list from the system's mirror" >&2
apt-get "${apt_opts[@]}" -qq update >"$work/update.log" 2>&1 \
  || { tail -5 "$work/update.log" >&2; die "cannot reach the Debian registry (apt-get update failed)"; }

(cd "$work/debs" && apt-get "${apt_opts[@]}" -qq download "${packages[@]}") >"$work/download.log" 2>&1 \
  || { tail -5 "$work/download.log" >&2; die "downloading ${packages[*]} failed"; }

rm -rf "$root"; mkdir -p "$root"
for p in "${packages[@]}"; do
  deb=$(ls "$work/debs/${p}"_*.deb 2>/dev/null | head -1)
  [[ -n $deb ]] || die "package $p missing after download"
  dpkg-deb -x "$deb" "$root"
done

L=$root/usr/lib/x86_64-linux-gnu
[[ -x $L/ld-linux-x86-64.so.2 ]] || die "sid's loader not found in libc6"
[[ -x $root/usr/bin/llama-server ]] || die "llama-server not found in llama.cpp-tools"
# ggml looks for its CPU backends next to the "executable", which under the loader is L.
for so in "$L"/ggml/backends0/libggml-cpu-*.so; do
  [[ -e $so ]] && ln -sf "ggml/backends0/$(basename "$so")" "$L/$(basename "$so")"
done

write_wrappers

"$bin/llama-server" --version >"$work/version.txt" 2>&1 || { cat "$work/version.txt" >&2; die "the provisioned llama-server does not run"; }
rm -rf "$work/lists" "$work/archives"
touch "$stamp"
echo "get-llama-server: $(grep -m1 -i version "$work/version.txt" || true) -> $bin/llama-server" >&2
