#!/usr/bin/env bash
# Provisions llama-server and llama-quantize from Debian's own binary packages into
# .cache/llama.cpp/ and leaves wrappers in .cache/bin/ that behave like the real commands.
# Bookworm has no llama.cpp package; sid's binaries need sid's libc, so they run with sid's
# own loader from a private root. The system's apt configuration is never changed.
#
# --backends adds ggml's other backends to the same root (docs/llama-server.md: their cost):
# Vulkan with Mesa's lavapipe (a Vulkan device made of the CPU), BLAS with OpenBLAS, and RPC
# with its ggml-rpc-server (a third wrapper). Each is a library ggml loads only where the
# wrapper is asked for it (LOGITAUDIT_GGML_BACKENDS), so a plain llama-server stays CPU-only.
#
# --training adds sid's llama.cpp-examples and llama.cpp-tools-extra for llama-finetune and
# llama-perplexity (two more wrappers): scripts/train-model.sh trains the generated models with
# them (docs/models.md).
#
# Usage: scripts/get-llama-server.sh [--force] [--backends] [--training]
# Env:   LOGITAUDIT_CACHE  cache folder (default: <repo>/.cache)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${LOGITAUDIT_CACHE:-$repo/.cache}
root=$cache/llama.cpp/root
bin=$cache/bin
stamp=$cache/llama.cpp/.complete
backends_stamp=$cache/llama.cpp/.backends-complete
training_stamp=$cache/llama.cpp/.training-complete
packages=(llama.cpp-tools libllama0 libggml0 libc6 libstdc++6 libgcc-s1 libssl3t64 libgomp1)
# The other backends, with every package they need (apt resolves the rest). OpenBLAS (its
# pthread build) is the BLAS: the one Debian's backend recommends first and the one a user who
# wants BLAS runs; the reference BLAS (libblas3) comes along as a dependency and is not used.
backend_packages=(libggml0-backend-vulkan mesa-vulkan-drivers libvulkan1 libggml0-backend-blas libopenblas0-pthread
                  libggml0-backend-rpc llama.cpp-tools-extra)
# llama-finetune (llama.cpp-examples) and llama-perplexity (llama.cpp-tools-extra), CPU only.
training_packages=(llama.cpp-examples llama.cpp-tools-extra)
# Alternatives apt's recursion lists that the root does not need (other BLAS builds).
backend_skip='^(libblis4-.*|libopenblas0-openmp|libopenblas0-serial|debconf|cdebconf|libdebian-installer4)$'

force=0 want_backends=0 want_training=0
for arg in "$@"; do
  case $arg in
    --force) force=1 ;;
    --backends) want_backends=1 ;;
    --training) want_training=1 ;;
    *) echo "usage: scripts/get-llama-server.sh [--force] [--backends] [--training]" >&2; exit 2 ;;
  esac
done

die() { echo "get-llama-server: $*" >&2; exit 1; }
# Where the root holds a training tool: /usr/bin, or the examples' own folder.
training_program() {
  local p
  for p in "$root/usr/bin/$1" "$root/usr/libexec/x86_64-linux-gnu/llama/bin/$1"; do
    [[ -x $p ]] && { echo "$p"; return; }
  done
}

# The wrappers: sid's tool under sid's loader. ggml loads the backends beside its executable,
# which under the loader is the loader's folder; the root's own folder holds the CPU variants
# alone, so a plain run is ggml's CPU backend with the best variant for this CPU.
# - LOGITAUDIT_CPU_VARIANT=NAME: that CPU variant alone (libggml-cpu-NAME.so; docs/frontier-cpu.md).
# - LOGITAUDIT_GGML_BACKENDS="vulkan blas rpc" (any of them): those backends too, from --backends.
# Either runs the tool from a folder of its own, $root/run/VARIANT+BACKENDS, holding a copy of
# the loader and links to those libraries. For vulkan on a host with no Vulkan driver of its
# own (no ICD file in the system's folders) and no VK_ICD_FILENAMES or VK_DRIVER_FILES, the
# wrapper points the Vulkan loader at lavapipe and shows ggml that CPU-type device
# (GGML_VK_VISIBLE_DEVICES=0, which ggml hides otherwise); a host with a GPU driver keeps it.
# LOGITAUDIT_LLAMA_SERVER_ARGS="ARG ..." goes before llama-server's own arguments, so that the
# caller's win: scripts/test.sh sets "--poll 0" there (docs/reliability.md).
write_wrappers() {
  local L=$root/usr/lib/x86_64-linux-gnu
  mkdir -p "$bin"
  local tools=(llama-server llama-quantize)
  if [[ -f $backends_stamp ]]; then tools+=(ggml-rpc-server); else rm -f "$bin/ggml-rpc-server"; fi
  if [[ -f $training_stamp ]]; then tools+=(llama-finetune llama-perplexity); else rm -f "$bin/llama-finetune" "$bin/llama-perplexity"; fi
  for tool in "${tools[@]}"; do
    local program=$root/usr/bin/$tool
    [[ $tool == ggml-rpc-server ]] && program=$root/usr/libexec/x86_64-linux-gnu/llama/bin/$tool
    [[ $tool == llama-finetune || $tool == llama-perplexity ]] && program=$(training_program "$tool")
    [[ -x $program ]] || die "$tool not found in $program"
    local extra='' own=''
    [[ $tool == llama-server ]] && extra='${LOGITAUDIT_LLAMA_SERVER_ARGS:-} '
    [[ $tool == ggml-rpc-server ]] && own='rpc '  # it serves through the RPC backend's library
    # Written beside and renamed: a server starting meanwhile reads the old wrapper or the new
    # one, never half of one.
    cat > "$bin/.$tool.$$" <<WRAP
#!/bin/sh
# Runs Debian sid's $tool with sid's own loader and libraries (see scripts/get-llama-server.sh).
L='$L'
R='$root'
loader="\$L/ld-linux-x86-64.so.2"
path="\$L:\$L/ggml:\$L/llama"
variant="\${LOGITAUDIT_CPU_VARIANT:-}"
backends=\$(printf '%s\n' $own\${LOGITAUDIT_GGML_BACKENDS:-} | tr ',' '\n' | grep . | sort -u | tr '\n' ' ')
if [ -n "\$variant\$backends" ]; then
  if [ -n "\$variant" ]; then cpu="\$L/ggml/backends0/libggml-cpu-\$variant.so"; else cpu=\$(ls "\$L"/ggml/backends0/libggml-cpu-*.so); fi
  for lib in \$cpu; do
    [ -f "\$lib" ] || { echo "$tool: no ggml CPU variant '\$variant' in \$L/ggml/backends0" >&2; exit 2; }
  done
  libs="\$cpu"
  for b in \$backends; do
    case \$b in
      vulkan|blas|rpc) ;;
      *) echo "$tool: LOGITAUDIT_GGML_BACKENDS: '\$b' is not vulkan, blas or rpc" >&2; exit 2 ;;
    esac
    lib="\$L/ggml/backends0/libggml-\$b.so"
    [ -f "\$lib" ] || { echo "$tool: the ggml \$b backend is not provisioned: run scripts/get-llama-server.sh --backends" >&2; exit 2; }
    libs="\$libs \$lib"
    [ "\$b" = blas ] && path="\$path:\$L/openblas-pthread"
    if [ "\$b" = vulkan ] && [ -z "\${VK_ICD_FILENAMES:-}\${VK_DRIVER_FILES:-}" ] &&
       ! ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json /usr/local/share/vulkan/icd.d/*.json >/dev/null 2>&1; then
      export VK_ICD_FILENAMES="\$R/usr/share/vulkan/icd.d/lvp_icd.json" GGML_VK_VISIBLE_DEVICES="\${GGML_VK_VISIBLE_DEVICES:-0}"
    fi
  done
  V="\$R/run/\${variant:-all}"
  for b in \$backends; do V="\$V+\$b"; done
  if [ ! -x "\$V/ld-linux-x86-64.so.2" ]; then
    mkdir -p "\$V" && cp "\$loader" "\$V/.ld.\$\$" && mv -f "\$V/.ld.\$\$" "\$V/ld-linux-x86-64.so.2" || exit 2
  fi
  for lib in \$libs; do
    [ -e "\$V/\${lib##*/}" ] || ln -sf "\$lib" "\$V/\${lib##*/}"
  done
  loader="\$V/ld-linux-x86-64.so.2"
fi
exec "\$loader" --library-path "\$path" '$program' $extra"\$@"
WRAP
    chmod +x "$bin/.$tool.$$"
    mv -f "$bin/.$tool.$$" "$bin/$tool"
  done
}

# The mirror comes from the system's own sources; nothing is written into the system's config.
apt_setup() {
  command -v apt-get >/dev/null || die "apt-get not found: this script needs a Debian system"
  command -v dpkg-deb >/dev/null || die "dpkg-deb not found"
  local mirror=""
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
            -o Dir::State::Status=/dev/null -o APT::Architecture=amd64 -o Debug::NoLocking=1)
  echo "get-llama-server: reading sid's package list from the system's mirror" >&2
  apt-get "${apt_opts[@]}" -qq update >"$work/update.log" 2>&1 \
    || { tail -5 "$work/update.log" >&2; die "cannot reach the Debian registry (apt-get update failed)"; }
}

# Downloads $@ into $work/debs and unpacks each into the root.
unpack() {
  (cd "$work/debs" && apt-get "${apt_opts[@]}" -qq download "$@") >"$work/download.log" 2>&1 \
    || { tail -5 "$work/download.log" >&2; die "downloading $* failed"; }
  for p in "$@"; do
    deb=$(ls "$work/debs/${p}"_*.deb 2>/dev/null | head -1)
    [[ -n $deb ]] || die "package $p missing after download"
    dpkg-deb -x "$deb" "$root"
  done
}

if [[ $force == 1 ]]; then
  rm -rf "$cache/llama.cpp" "$bin/llama-server" "$bin/llama-quantize" "$bin/ggml-rpc-server" "$bin/llama-finetune" \
    "$bin/llama-perplexity"
fi
versions=$cache/llama.cpp/versions.txt  # "package version" of each package the root was made of
need_base=0
[[ -f $stamp && -x $bin/llama-server && -x $bin/llama-quantize ]] || need_base=1
need_backends=0
[[ $want_backends == 1 && ! -f $backends_stamp ]] && need_backends=1
need_training=0
[[ $want_training == 1 && ! -f $training_stamp ]] && need_training=1
apt_ready=0
if [[ $need_backends == 1 || $need_training == 1 ]] && [[ $need_base == 0 ]]; then
  # A backend needs the ggml it was built with: when sid's has moved since the root was made,
  # the root is made again from the same package list as its backends.
  apt_setup && apt_ready=1
  sid_version() { apt-cache "${apt_opts[@]}" show --no-all-versions "$1" 2>/dev/null | awk '/^Version:/ {print $2; exit}' || true; }
  now=$(sid_version libggml0)
  was=$(awk '$1 == "libggml0" {print $2}' "$versions" 2>/dev/null || true)
  if [[ $now != "$was" ]]; then
    echo "get-llama-server: sid's libggml0 is ${now:-not found}, the root's ${was:-unrecorded}: provisioning both again" >&2
    need_base=1
  elif [[ $need_training == 1 ]]; then
    # The training tools are built with llama.cpp's own libllama0: the same version as the root's.
    now=$(sid_version llama.cpp-examples)
    was=$(awk '$1 == "llama.cpp-tools" {print $2}' "$versions" 2>/dev/null || true)
    if [[ $now != "$was" ]]; then
      echo "get-llama-server: sid's llama.cpp-examples is ${now:-not found}, the root's llama.cpp ${was:-unrecorded}: provisioning both again" >&2
      need_base=1
    fi
  fi
fi
if [[ $need_base == 1 ]]; then
  [[ $apt_ready == 1 ]] || { apt_setup && apt_ready=1; }
  # What the root held before comes back with it.
  [[ -f $backends_stamp ]] && need_backends=1
  [[ -f $training_stamp ]] && need_training=1
  rm -rf "$root" "$backends_stamp" "$training_stamp" "$bin/ggml-rpc-server" "$bin/llama-finetune" "$bin/llama-perplexity"
  mkdir -p "$root"
  unpack "${packages[@]}"
  for deb in "$work"/debs/*.deb; do dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb"; done >"$versions"
  L=$root/usr/lib/x86_64-linux-gnu
  [[ -x $L/ld-linux-x86-64.so.2 ]] || die "sid's loader not found in libc6"
  [[ -x $root/usr/bin/llama-server ]] || die "llama-server not found in llama.cpp-tools"
  # ggml looks for its CPU backends next to the "executable", which under the loader is L.
  for so in "$L"/ggml/backends0/libggml-cpu-*.so; do
    [[ -e $so ]] && ln -sf "ggml/backends0/$(basename "$so")" "$L/$(basename "$so")"
  done
  write_wrappers
  "$bin/llama-server" --version >"$work/version.txt" 2>&1 || { cat "$work/version.txt" >&2; die "the provisioned llama-server does not run"; }
  touch "$stamp"
  echo "get-llama-server: $(grep -m1 -i version "$work/version.txt" || true) -> $bin/llama-server" >&2
  rm -f "$work"/debs/*.deb
fi

if [[ $need_backends == 1 ]]; then
  started=$SECONDS
  [[ $apt_ready == 1 ]] || { apt_setup && apt_ready=1; }
  # Every package the backends need, less those the root has and the alternatives it does not.
  mapfile -t closure < <(apt-cache "${apt_opts[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
      --no-breaks --no-replaces --no-enhances "${backend_packages[@]}" 2>/dev/null |
    grep -v '^[ <]' | sort -u | grep -Fvx -f <(printf '%s\n' "${packages[@]}") | grep -Ev "$backend_skip")
  [[ ${#closure[@]} -gt 0 ]] || die "apt found none of ${backend_packages[*]} in sid"
  unpack "${closure[@]}"
  L=$root/usr/lib/x86_64-linux-gnu
  for f in "$L/ggml/backends0/libggml-vulkan.so" "$L/ggml/backends0/libggml-blas.so" "$L/ggml/backends0/libggml-rpc.so" \
           "$L/openblas-pthread/libblas.so.3" "$root/usr/share/vulkan/icd.d/lvp_icd.json" \
           "$root/usr/libexec/x86_64-linux-gnu/llama/bin/ggml-rpc-server"; do
    [[ -e $f ]] || die "$f missing after unpacking the backends"
  done
  for deb in "$work"/debs/*.deb; do dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb"; done >>"$versions"
  bytes=$(du -cb "$work"/debs/*.deb | tail -1 | cut -f1)
  touch "$backends_stamp"
  write_wrappers
  LOGITAUDIT_GGML_BACKENDS="vulkan blas" "$bin/llama-server" --list-devices >"$work/devices.txt" 2>&1 || true
  echo "get-llama-server: backends: ${#closure[@]} packages, $((bytes / 1000000)) MB, $((SECONDS - started)) s;" \
       "devices: $(grep -E '^ +[A-Za-z]+[0-9]*:' "$work/devices.txt" | sed 's/^ *//' | paste -sd';' -)" >&2
  rm -f "$work"/debs/*.deb
fi

if [[ $need_training == 1 ]]; then
  started=$SECONDS
  [[ $apt_ready == 1 ]] || { apt_setup && apt_ready=1; }
  # The two packages alone: their libraries (libllama0, libggml0, libc6, ...) are the root's.
  unpack "${training_packages[@]}"
  for tool in llama-finetune llama-perplexity; do
    [[ -n $(training_program "$tool") ]] || die "$tool not found after unpacking ${training_packages[*]}"
  done
  touch "$training_stamp"
  write_wrappers
  "$bin/llama-finetune" --help >"$work/finetune.txt" 2>&1 || { rm -f "$training_stamp"; tail -5 "$work/finetune.txt" >&2; die "the provisioned llama-finetune does not run"; }
  for deb in "$work"/debs/*.deb; do dpkg-deb -W --showformat='${Package} ${Version}\n' "$deb"; done >>"$versions"
  bytes=$(du -cb "$work"/debs/*.deb | tail -1 | cut -f1)
  echo "get-llama-server: training tools: ${training_packages[*]}, $((bytes / 1000000)) MB, $((SECONDS - started)) s" >&2
  rm -f "$work"/debs/*.deb
fi
[[ $need_backends == 1 || $need_training == 1 ]] || write_wrappers  # cheap, and an older wrapper learns what this one knows
[[ -f $versions ]] && sort -u -o "$versions" "$versions"
[[ $apt_ready == 1 ]] && rm -rf "$work/lists" "$work/archives" "$work/debs"
exit 0
