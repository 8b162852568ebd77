#!/usr/bin/env bash
# Trains a generated model on text, so that its distributions look like a trained model's and not
# like random weights' (docs/models.md). No weights are downloaded: logitaudit-make-model writes the
# starting point (seeded, with a logit scale of 1: the default 10 starts so far from any text that
# the first loss is 37 nats), Debian sid's llama-finetune trains it on text that Debian itself ships
# (below), llama-quantize writes the training's inputs into the GGUF's metadata and quantises it,
# and llama-perplexity and logitaudit-make-model --measure-margin measure the result against the
# random model of the same shape.
#
# The text: licence texts from /usr/share/common-licenses (Debian's base-files, on every Debian
# system). Training reads the GPL-3, Apache-2.0 and MPL-2.0 texts; perplexity is measured on three
# other licences (Artistic, BSD, CC0-1.0), never trained on. Runs of white space become one space.
# Each text's own licence allows verbatim copies; the corpus and the trained weights are made on the
# user's machine from the user's own copy and are never redistributed by this project.
#
# Cached by its inputs: the starting model's sha256, the corpus's sha256, the recipe, and the
# versions of llama-finetune and ggml. Training is deterministic for one ggml CPU variant (the
# same file at -t 1 and -t 2 here) and differs between variants (their kernels round differently),
# so the script compares what it trained with the record in tools/trained-models.txt and says
# whether the weights are the same bytes, and if not, which input or which CPU variant differs.
#
# Usage: scripts/train-model.sh [--preset tiny|small] [--seed N] [--quantize TYPE|none]
#          [--epochs N] [--lr X] [--base FILE] [--corpus FILE,...] [--heldout FILE,...]
#          [--out FILE] [--check] [--force] [--cached-only]
#   --preset/--seed  the generated model to start from (default tiny, 7)
#   --base FILE      start from this F32 GGUF instead (a model logitaudit-make-model wrote)
#   --corpus/--heldout  the training and the perplexity texts (default: the licences above)
#   --epochs/--lr    the recipe (default: the preset's, measured: docs/models.md)
#   --out FILE       also copy the trained, quantised model there
#   --check          train again even when cached, compare the new weights with the cached and
#                    the record, and replace nothing
#   --force          train again and replace the cached model
#   --cached-only    never train: the cached model's path, or exit 3 when there is none
# Prints the trained model's path as its last line of standard output.
# Env: LOGITAUDIT_CACHE (default <repo>/.cache), LOGITAUDIT_MAKE_MODEL (the generator; default
#      <build>/tools/logitaudit-make-model, built when missing), LOGITAUDIT_BUILD_DIR (default build),
#      LOGITAUDIT_TRAINED_RECORD (the record compared with; default tools/trained-models.txt)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${LOGITAUDIT_CACHE:-$repo/.cache}
bin=$cache/bin
licences=/usr/share/common-licenses
say() { echo "train-model: $*" >&2; }
die() { say "$*"; exit 1; }
usage() {  # STATUS
  sed -n '/^# Usage:/,/^# Prints/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit "${1:-2}"
}

preset=tiny seed=7 quantize=Q4_K_M epochs='' lr='' base='' out='' check=0 force=0 cached_only=0
corpus_files=("$licences/GPL-3" "$licences/Apache-2.0" "$licences/MPL-2.0")
heldout_files=("$licences/Artistic" "$licences/BSD" "$licences/CC0-1.0")
while [[ $# -gt 0 ]]; do
  case $1 in
    --preset|--seed|--quantize|--epochs|--lr|--base|--corpus|--heldout|--out)
      [[ $# -ge 2 ]] || { say "$1 needs a value"; usage; }
      case $1 in
        --preset) preset=$2 ;;
        --seed) seed=$2 ;;
        --quantize) quantize=$2 ;;
        --epochs) epochs=$2 ;;
        --lr) lr=$2 ;;
        --base) base=$2 ;;
        --corpus) IFS=, read -r -a corpus_files <<<"$2" ;;
        --heldout) IFS=, read -r -a heldout_files <<<"$2" ;;
        --out) out=$2 ;;
      esac
      shift ;;
    --check) check=1 ;;
    --force) force=1 ;;
    --cached-only) cached_only=1 ;;
    -h|--help) usage 0 ;;
    *) say "unknown argument '$1'"; usage ;;
  esac
  shift
done

# The recipe, chosen by measurement on a 2-core AMD EPYC (docs/models.md: the sweep): AdamW at
# 1e-4 (1e-3 diverged within the first epoch, 3e-4 by the second), 256-token sequences; more
# than one epoch decays the rate to a tenth by their end (tiny: 2.99 nats of validation loss
# after three, 3.63 after one; at a constant rate the third was worse than the second). tiny:
# one epoch (52 s), as the demo trains it on its first run and must keep to its 5 minutes;
# small: three (17 min, never trained by the demo; one epoch left its held-out perplexity at
# 419, three at 173).
case $preset in
  tiny) : "${epochs:=1}" "${lr:=1e-4}" ;;
  small) : "${epochs:=3}" "${lr:=1e-4}" ;;
  *) die "--preset must be tiny or small (got '$preset')" ;;
esac
[[ $seed =~ ^[0-9]+$ ]] || die "--seed must be a non-negative integer (got '$seed')"
[[ $epochs =~ ^[1-9][0-9]*$ && $epochs -le 100 ]] || die "--epochs must be an integer from 1 to 100 (got '$epochs')"
[[ $lr =~ ^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$ ]] && python3 -c 'import sys; sys.exit(not 0 < float(sys.argv[1]) < 1)' "$lr" ||
  die "--lr must be a number between 0 and 1 such as 1e-4 (got '$lr')"
[[ $quantize =~ ^[A-Za-z0-9_]+$ ]] || die "--quantize must be a llama-quantize type such as Q4_K_M, or none (got '$quantize')"
[[ -z $base || -f $base ]] || die "--base: no such file '$base'"
for f in "${corpus_files[@]}"; do [[ -f $f && -r $f ]] || die "--corpus: '$f' is not a readable file"; done
for f in "${heldout_files[@]}"; do [[ -f $f && -r $f ]] || die "--heldout: '$f' is not a readable file"; done
[[ ${#corpus_files[@]} -gt 0 ]] || die "--corpus needs a file"
[[ ${#heldout_files[@]} -gt 0 ]] || die "--heldout needs a file"
[[ $((check + force + cached_only)) -le 1 ]] || die "--check, --force and --cached-only exclude one another"
ctx=256
recipe="-c $ctx -b $ctx -ub $ctx -lr $lr -epochs $epochs -opt adamw -val-split 0.05"
if [[ $epochs -gt 1 ]]; then
  recipe+=" -lr-min $(python3 -c "import sys; print('%g' % (float(sys.argv[1]) / 10))" "$lr") -decay-epochs $epochs"
fi

# The tools: llama-finetune and llama-perplexity beside llama-server, and the model generator.
if [[ ! -x $bin/llama-finetune || ! -x $bin/llama-perplexity ]]; then
  [[ $cached_only == 0 ]] || { say "llama-finetune is not provisioned, so nothing is cached"; exit 3; }
  bash "$repo/scripts/get-llama-server.sh" --training
fi
make_model=${LOGITAUDIT_MAKE_MODEL:-}
if [[ -z $make_model ]]; then
  build=${LOGITAUDIT_BUILD_DIR:-$repo/build}
  make_model=$build/tools/logitaudit-make-model
  if [[ ! -x $make_model ]]; then
    say "building logitaudit-make-model"
    [[ -f $build/CMakeCache.txt ]] ||
      cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O0 -g0" \
        -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 -DBUILD_TESTING=OFF >/dev/null
    cmake --build "$build" -j "$(nproc)" --target logitaudit-make-model >/dev/null
  fi
fi
[[ -x $make_model ]] || die "no logitaudit-make-model at $make_model"
versions=$cache/llama.cpp/versions.txt
tool_versions="llama.cpp-examples $(awk '$1 == "llama.cpp-examples" {print $2}' "$versions") libggml0 $(awk '$1 == "libggml0" {print $2}' "$versions")"

work=$(mktemp -d "${TMPDIR:-/tmp}/train-model.XXXXXX")
pid=''
# A run that ends early (an error, Ctrl-C) stops its llama-finetune and leaves no half file.
trap '[[ -z $pid ]] || kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The corpus: each text as Debian ships it, white space squeezed. Which package shipped it, and
# its version, goes into the description (base-files changes between Debian releases).
squeeze() { cat "$@" | tr -s '[:space:]' ' '; }
describe() {  # FILE...: "GPL-3 Apache-2.0 (base-files 12.4+deb12u11)"
  local names='' pkgs='' f p
  for f in "$@"; do
    names+="${names:+ }$(basename "$f")"
    p=$(dpkg -S "$(realpath "$f")" 2>/dev/null | cut -d: -f1 | head -1 || true)
    [[ -n $p ]] && p="$p $(dpkg-query -W -f='${Version}' "$p" 2>/dev/null || true)"
    [[ -n $p && $pkgs != *"$p"* ]] && pkgs+="${pkgs:+, }$p"
  done
  echo "$names (${pkgs:-not from a Debian package})"
}
squeeze "${corpus_files[@]}" >"$work/corpus.txt"
squeeze "${heldout_files[@]}" >"$work/heldout.txt"
corpus_sha=$(sha256sum "$work/corpus.txt" | cut -c1-64)
heldout_sha=$(sha256sum "$work/heldout.txt" | cut -c1-64)
corpus_desc=$(describe "${corpus_files[@]}")
heldout_desc=$(describe "${heldout_files[@]}")

# The starting point.
if [[ -n $base ]]; then
  cp "$base" "$work/base.gguf"
  origin="--base $(basename "$base")"
  label=$(basename "$base" .gguf | tr -c 'A-Za-z0-9._\n-' '_')
else
  "$make_model" --preset "$preset" --seed "$seed" --logit-scale 1 --quantize none --out "$work/base.gguf" >/dev/null
  origin="logitaudit-make-model --preset $preset --seed $seed --logit-scale 1"
  label=$preset-s$seed
fi
base_sha=$(sha256sum "$work/base.gguf" | cut -c1-64)
# llama.cpp keeps a metadata string override in 128 bytes: say so before training, not after.
[[ ${#label} -le 96 && ${#recipe} -le 110 ]] || die "the model's name or the recipe is too long for the GGUF's metadata"

key=$(printf 'logitaudit-train 1\nbase %s\ncorpus %s\nrecipe %s\ntools %s\n' "$base_sha" "$corpus_sha" "$recipe" "$tool_versions" |
  sha256sum | cut -c1-16)
dir=$cache/models/trained/$label-$key
qname=$([[ $quantize == none || $quantize == F32 || $quantize == f32 ]] && echo F32 || echo "$quantize")
model=$dir/$label-trained.$qname.gguf
mkdir -p "$dir"
exec 9>"$dir/.lock"
if [[ $cached_only == 1 ]]; then
  # Never wait: a model another run is training is not cached yet.
  flock -n 9 || { say "$label ($key) is being trained by another run: not cached yet"; exit 3; }
else
  flock 9 || die "cannot lock $dir"  # one training of these inputs at a time; a second waits and finds it cached
fi

# A manifest's field, or nothing when the manifest is missing or unreadable.
manifest_field() {  # FILE FIELD
  python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1]))[sys.argv[2]])
except Exception: pass' "$1" "$2" 2>/dev/null || true
}
# What the cache holds, if its weights are still the bytes the manifest names.
cached_weights=''
if [[ -f $dir/manifest.json && -f $dir/trained.F32.gguf ]]; then
  cached_weights=$(manifest_field "$dir/manifest.json" weights_sha256)
  if [[ -z $cached_weights || $(sha256sum "$dir/trained.F32.gguf" | cut -c1-64) != $(manifest_field "$dir/manifest.json" f32_sha256) ]]; then
    say "the cached $dir/trained.F32.gguf is not the file its manifest names"
    cached_weights=''
  fi
fi
if [[ $cached_only == 1 && -z $cached_weights ]]; then
  say "no trained $label model is cached for these inputs ($key)"
  exit 3
fi

# Trains into $work/weights.gguf; sets variant, train_loss, val_loss, seconds.
train() {
  say "training $label on $corpus_desc: llama-finetune $recipe (this machine's cores: $(nproc))"
  local started=$SECONDS
  # 9>&-: the lock is this script's, not the trainer's, which a signal may outlive by a moment.
  "$bin/llama-finetune" -m "$work/base.gguf" -f "$work/corpus.txt" $recipe -t "$(nproc)" -o "$work/weights.gguf" \
    >"$work/train.log" 2>&1 9>&- &
  pid=$!
  # The CPU variant ggml chose, from the process's map once training runs: while it picks, ggml
  # opens every variant the CPU can run to score it.
  variant=''
  while kill -0 "$pid" 2>/dev/null; do
    if grep -q 'train: \[' "$work/train.log" 2>/dev/null; then
      variant=$(grep -o 'libggml-cpu-[a-z0-9_]*\.so' "/proc/$pid/maps" 2>/dev/null | sort -u | sed 's/libggml-cpu-//; s/\.so//' |
        paste -sd+ - || true)
      break
    fi
    sleep 0.2
  done
  wait "$pid" || { local rc=$?; pid=''; tail -20 "$work/train.log" >&2; die "llama-finetune failed (exit $rc; its log: above)"; }
  pid=''
  [[ -f $work/weights.gguf ]] || die "llama-finetune wrote no model"
  seconds=$((SECONDS - started))
  # The last epoch's running mean over the training batches, and over the validation split.
  train_loss=$(tr '\r' '\n' <"$work/train.log" | grep '^train:' | tail -1 | sed -n 's/.*loss=\([0-9.]*\).*/\1/p' || true)
  val_loss=$(tr '\r' '\n' <"$work/train.log" | grep '^val:' | tail -1 | sed -n 's/.*loss=\([0-9.]*\).*/\1/p' || true)
  [[ -n $train_loss && -n $val_loss ]] || say "llama-finetune printed no final loss (its log: $dir/train.log); recorded as 0"
  say "trained in $seconds s with ggml's ${variant:-unknown} CPU kernels: loss ${train_loss:-?} (training), ${val_loss:-?} (validation)"
}

# Compares weights (sha256) with the record of these inputs; prints what it finds.
record=${LOGITAUDIT_TRAINED_RECORD:-$repo/tools/trained-models.txt}
compare_with_record() {  # WEIGHTS_SHA VARIANT
  local line
  line=$(awk -v k="$key" '$1 == k' "$record" 2>/dev/null | head -1 || true)
  if [[ -z $line ]]; then
    local closest
    closest=$(awk -v l="$label" '$2 == l' "$record" 2>/dev/null | head -1 || true)
    if [[ -z $closest ]]; then
      say "provisioning: no record in $record for $label; nothing to compare with"
    else
      local rec_base rec_corpus rec_recipe differ=()
      read -r _ _ rec_base rec_corpus _ _ rec_recipe _ <<<"$closest"
      [[ $rec_base == "$base_sha" ]] || differ+=("the starting model")
      [[ $rec_corpus == "$corpus_sha" ]] || differ+=("the corpus ($corpus_desc)")
      [[ $rec_recipe == "${recipe// /_}" ]] || differ+=("the recipe")
      [[ ${#differ[@]} -gt 0 ]] || differ+=("the tools ($tool_versions)")
      say "provisioning: $record records $label from other inputs (they differ in $(printf '%s, ' "${differ[@]}" | sed 's/, $//'));" \
          "nothing to compare bytes with"
    fi
    return
  fi
  local rec_weights rec_variant
  read -r _ _ _ _ rec_weights rec_variant _ <<<"$line"
  if [[ $1 == "$rec_weights" ]]; then
    say "provisioning: reproduced: the weights are the recorded bytes (sha256 $1, ggml's $2 CPU kernels)"
  elif [[ $2 != "$rec_variant" ]]; then
    say "provisioning: the weights DIFFER from the record (sha256 $1, not $rec_weights): same inputs, but this" \
        "machine's ggml runs its $2 CPU kernels and the record's ran $rec_variant; their sums round differently," \
        "and training compounds the difference over every step. The model is as valid; its sha256 is this machine's."
  else
    say "provisioning: the weights DIFFER from the record (sha256 $1, not $rec_weights) with the same inputs and" \
        "the same ggml CPU variant ($2): not expected (training was bit-reproducible here); the model is kept, the" \
        "difference is worth reporting"
  fi
}

if [[ -n $cached_weights && $force == 0 && $check == 0 ]]; then
  say "cached: $dir (inputs $key)"
else
  train
  weights_sha=$(sha256sum "$work/weights.gguf" | cut -c1-64)
  compare_with_record "$weights_sha" "${variant:-unknown}"
  if [[ $check == 1 && -n $cached_weights ]]; then
    # --check compares and replaces nothing, whatever the cache holds.
    if [[ $weights_sha == "$cached_weights" ]]; then
      say "check: the new weights are the cached bytes (sha256 $weights_sha)"
    else
      say "check: the new weights DIFFER from the cached (sha256 $weights_sha, cached $cached_weights); the cache is kept"
    fi
    [[ -f $model ]] && echo "$model"
    exit 0
  fi
  # The metadata: what the weights were made from (values of at most 127 characters).
  kv=(--override-kv "general.name=str:logitaudit-$label-trained"
      --override-kv "logitaudit.training.key=str:$key"
      --override-kv "logitaudit.training.base_sha256=str:$base_sha"
      --override-kv "logitaudit.training.base=str:${origin:0:127}"
      --override-kv "logitaudit.training.corpus=str:${corpus_desc:0:127}"
      --override-kv "logitaudit.training.corpus_sha256=str:$corpus_sha"
      --override-kv "logitaudit.training.recipe=str:llama-finetune $recipe"
      --override-kv "logitaudit.training.tools=str:${tool_versions:0:127}"
      --override-kv "logitaudit.training.cpu_variant=str:${variant:-unknown}"
      --override-kv "logitaudit.training.weights_sha256=str:$weights_sha"
      --override-kv "logitaudit.training.train_loss=float:${train_loss:-0}"
      --override-kv "logitaudit.training.val_loss=float:${val_loss:-0}")
  "$bin/llama-quantize" "${kv[@]}" "$work/weights.gguf" "$work/trained.F32.gguf" COPY >"$work/copy.log" 2>&1 ||
    { tail -5 "$work/copy.log" >&2; die "llama-quantize could not write the metadata"; }
  # The manifest, written by Python from the environment (no value is pasted into code).
  LABEL=$label KEY=$key ORIGIN=$origin BASE_SHA=$base_sha CORPUS=$corpus_desc CORPUS_SHA=$corpus_sha \
  RECIPE="llama-finetune $recipe" TOOLS=$tool_versions VARIANT=${variant:-unknown} SECONDS_TAKEN=$seconds \
  TRAIN_LOSS=${train_loss:-nan} VAL_LOSS=${val_loss:-nan} WEIGHTS_SHA=$weights_sha \
  F32_SHA=$(sha256sum "$work/trained.F32.gguf" | cut -c1-64) python3 - "$work/manifest.json" <<'PY'
import json, os, sys
e = os.environ
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "")
json.dump({"label": e["LABEL"], "key": e["KEY"], "base": e["ORIGIN"], "base_sha256": e["BASE_SHA"],
           "corpus": e["CORPUS"], "corpus_sha256": e["CORPUS_SHA"], "recipe": e["RECIPE"], "tools": e["TOOLS"],
           "cpu_variant": e["VARIANT"], "cpu": cpu, "threads": os.cpu_count(), "seconds": int(e["SECONDS_TAKEN"]),
           "train_loss": float(e["TRAIN_LOSS"]), "val_loss": float(e["VAL_LOSS"]),
           "weights_sha256": e["WEIGHTS_SHA"], "f32_sha256": e["F32_SHA"]},
          open(sys.argv[1], "w"), indent=1)
PY
  # Replaced as a whole: the old manifest goes first, so that a cut-short run leaves no manifest
  # naming files that are not there (and the next run trains again).
  rm -f "$dir/manifest.json" "$dir"/*.gguf "$dir"/*.measured.json
  mv "$work/train.log" "$dir/train.log"
  mv "$work/trained.F32.gguf" "$dir/trained.F32.gguf"
  mv "$work/manifest.json" "$dir/manifest.json"
fi

# The quantised model (cached beside the F32 one; quantisation is deterministic).
if [[ ! -f $model ]]; then
  if [[ $qname == F32 ]]; then
    cp "$dir/trained.F32.gguf" "$model.tmp"
  else
    "$bin/llama-quantize" "$dir/trained.F32.gguf" "$model.tmp" "$quantize" 1 >"$work/quantize.log" 2>&1 ||
      { tail -5 "$work/quantize.log" >&2; rm -f "$model.tmp"; die "llama-quantize $quantize failed"; }
  fi
  mv "$model.tmp" "$model"
fi

# The measurements, once per quantised file and held-out text: perplexity and the margins,
# each beside the random model of the same shape and quantisation (the default logit scale).
measured=$model.measured.json
if [[ $(manifest_field "$measured" heldout_sha256) != "$heldout_sha" || $(manifest_field "$measured" sha256) != $(sha256sum "$model" | cut -c1-64) ]]; then
  random=$work/random.gguf
  if [[ -n $base ]]; then
    if [[ $qname == F32 ]]; then
      cp "$base" "$random"
    else
      "$bin/llama-quantize" "$base" "$random" "$quantize" 1 >"$work/quantize.log" 2>&1 ||
        { tail -5 "$work/quantize.log" >&2; die "llama-quantize $quantize failed on the starting model"; }
    fi
  else
    "$make_model" --preset "$preset" --seed "$seed" --quantize "$([[ $qname == F32 ]] && echo none || echo "$quantize")" \
      --out "$random" >/dev/null
  fi
  # Perplexity on the held-out text into PPL and PPL_ERR (a function, not a subshell: its
  # failure ends the script). The running estimate after the last chunk is the final one; its
  # error comes from the "Final estimate" line, which llama.cpp's log thread does not always
  # write before the process exits.
  ppl() {  # MODEL
    "$bin/llama-perplexity" -m "$1" -f "$work/heldout.txt" -c "$ctx" -b "$ctx" -t "$(nproc)" >"$work/ppl.out" 2>"$work/ppl.log" ||
      { tail -5 "$work/ppl.log" >&2; die "llama-perplexity failed on $1"; }
    PPL=$(grep -o '\[[0-9]*\][0-9.]*' "$work/ppl.out" | tail -1 | sed 's/.*\]//' || true)
    PPL_ERR=$(sed -n 's/.*Final estimate: PPL = [0-9.]* +\/- \([0-9.]*\).*/\1/p' "$work/ppl.log" | tail -1 || true)
    [[ -n $PPL ]] || { tail -5 "$work/ppl.log" >&2; die "llama-perplexity printed no estimate for $1 (is the held-out text shorter than $((2 * ctx)) tokens?)"; }
  }
  say "measuring perplexity on $heldout_desc and the greedy margins"
  ppl "$model"
  ppl_trained=$PPL ppl_trained_err=$PPL_ERR
  ppl "$random"
  ppl_random=$PPL ppl_random_err=$PPL_ERR
  margins_trained=$("$make_model" --model "$model" --measure-margin --json) || die "the trained model's margins could not be measured"
  margins_random=$("$make_model" --model "$random" --measure-margin --json) || die "the random model's margins could not be measured"
  MODEL_NAME=$(basename "$model") MODEL_SHA=$(sha256sum "$model" | cut -c1-64) HELDOUT=$heldout_desc HELDOUT_SHA=$heldout_sha \
  CTX=$ctx PPL_T=$ppl_trained PPL_T_ERR=$ppl_trained_err PPL_R=$ppl_random PPL_R_ERR=$ppl_random_err \
  MARGINS_T=$margins_trained MARGINS_R=$margins_random python3 - "$work/measured.json" <<'PY'
import json, os, sys
e = os.environ
number = lambda v: float(v) if v else None
json.dump({"model": e["MODEL_NAME"], "sha256": e["MODEL_SHA"], "heldout": e["HELDOUT"],
           "heldout_sha256": e["HELDOUT_SHA"], "context": int(e["CTX"]),
           "perplexity": {"trained": number(e["PPL_T"]), "trained_err": number(e["PPL_T_ERR"]),
                          "random": number(e["PPL_R"]), "random_err": number(e["PPL_R_ERR"])},
           "margins": {"trained": json.loads(e["MARGINS_T"]), "random": json.loads(e["MARGINS_R"])}},
          open(sys.argv[1], "w"), indent=1)
PY
  mv "$work/measured.json" "$measured"
fi
python3 - "$dir/manifest.json" "$measured" >&2 <<'PY'
import json, sys
m, x = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print(f"train-model: {x['model']} sha256 {x['sha256'][:16]}...: trained from {m['base']} on {m['corpus']}"
      f" ({m['recipe']}; ggml {m['cpu_variant']}); validation loss {m['val_loss']:.3f}")
p = x["perplexity"]
err = "" if p["trained_err"] is None else f" +/- {p['trained_err']:.2f}"
print(f"train-model: perplexity on {x['heldout']}: {p['trained']:.2f}{err}"
      f" (the random model: {p['random']:.2f})")
print(f"train-model: its line for tools/trained-models.txt: {m['key']} {m['label']} {m['base_sha256']} {m['corpus_sha256']}"
      f" {m['weights_sha256']} {m['cpu_variant']} {m['recipe'].replace('llama-finetune ', '').replace(' ', '_')}")
for kind in ("trained", "random"):
    g = x["margins"][kind]
    print(f"train-model: greedy margins ({kind}): p10 {g['p10']:.3f}, median {g['median']:.3f}, p90 {g['p90']:.3f}"
          f" nats; below 0.1 nats {100 * g['below_0_1']:.1f}%, below 1 {100 * g['below_1']:.1f}%")
PY
if [[ -n $out ]]; then
  mkdir -p "$(dirname "$out")" && cp "$model" "$out.tmp" && mv "$out.tmp" "$out" || die "--out: cannot write '$out'"
fi
echo "$model"
