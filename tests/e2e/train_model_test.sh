#!/usr/bin/env bash
# e2e: scripts/train-model.sh with the real llama-finetune, llama-quantize, llama-perplexity and
# llama-server, on a model small enough to train in seconds (n_embd 64, 2 layers, 300 tokens:
# generated deterministically; the trained presets take minutes and are not the test command's).
# What it asserts is what the script's own files say, never what training gave on this CPU:
#   - the metadata in the GGUF names the inputs of the manifest (corpus sha256, recipe, weights);
#   - a second run is served from the cache, untouched;
#   - --check trains again and says "same" exactly when the two sha256 it prints are equal;
#   - the record comparison: the recorded bytes are "reproduced"; other bytes from another CPU
#     variant "DIFFER" and name both variants; no record says so;
#   - bad input is refused with a message naming the argument, and writes nothing.
# Usage: train_model_test.sh REPO MAKE_MODEL
set -euo pipefail
repo=$1
make_model=$2
work=$(mktemp -d /tmp/logitaudit-train-XXXXXX)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() { grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "expected '$2' in $1"; }; }
export LOGITAUDIT_CACHE=$work/cache LOGITAUDIT_MAKE_MODEL=$make_model LOGITAUDIT_TRAINED_RECORD=$work/record.txt
mkdir -p "$work/cache"
# The provisioned tools, shared with the suite's other tests (scripts/test.sh provisions them).
ln -s "$repo/.cache/bin" "$work/cache/bin"
ln -s "$repo/.cache/llama.cpp" "$work/cache/llama.cpp"
[[ -x $repo/.cache/bin/llama-finetune ]] || fail "no llama-finetune: run scripts/get-llama-server.sh --training"

"$make_model" --n-embd 64 --n-layer 2 --n-head 2 --n-head-kv 1 --n-ff 128 --n-vocab 300 --logit-scale 1 \
  --seed 3 --quantize none --out "$work/base.gguf" >/dev/null
L=/usr/share/common-licenses
train=(bash "$repo/scripts/train-model.sh" --base "$work/base.gguf" --corpus "$L/CC0-1.0" --heldout "$L/Artistic"
       --epochs 1 --quantize Q8_0)

# Bad input: refused, named, nothing written.
bad() {  # EXPECTED-MESSAGE ARG...
  local msg=$1
  shift
  if "${train[@]}" "$@" >"$work/bad.out" 2>"$work/bad.err"; then fail "accepted: $*"; fi
  expect "$work/bad.err" "$msg"
}
bad "--epochs must be an integer from 1 to 100" --epochs 0
bad "--lr must be a number between 0 and 1" --lr fast
bad "--lr must be a number between 0 and 1" --lr 0
bad "--corpus: '/nonexistent' is not a readable file" --corpus /nonexistent
bad "--preset must be tiny or small" --preset huge
bad "--check, --force and --cached-only exclude one another" --check --force
bad "--quantize must be a llama-quantize type" --quantize 'Q4;rm'
[[ ! -d $work/cache/models ]] || fail "a refused run wrote $(ls -R "$work/cache/models")"

# First run: trains, writes the metadata, measures.
"${train[@]}" >"$work/1.out" 2>"$work/1.err" || { cat "$work/1.err" >&2; fail "training failed"; }
model=$(tail -1 "$work/1.out")
[[ -f $model ]] || fail "no model at '$model'"
dir=$(dirname "$model")
expect "$work/1.err" "provisioning: no record in $work/record.txt"
manifest=$dir/manifest.json
python3 - "$manifest" "$model" "$dir/trained.F32.gguf" "$model.measured.json" <<'PY'
import hashlib, json, struct, sys
m = json.load(open(sys.argv[1]))
measured = json.load(open(sys.argv[4]))

def metadata(path):  # the GGUF's key/value pairs
    f = open(path, "rb")
    assert f.read(4) == b"GGUF"
    version, n_tensors, n_kv = struct.unpack("<IQQ", f.read(20))
    def s():
        (n,) = struct.unpack("<Q", f.read(8))
        return f.read(n).decode()
    sizes = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
    def value(t):
        if t == 8:
            return s()
        if t == 9:
            (et,) = struct.unpack("<I", f.read(4))
            (n,) = struct.unpack("<Q", f.read(8))
            return [value(et) for _ in range(n)]
        fmt = "<" + sizes[t]
        return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
    kv = {}
    for _ in range(n_kv):
        k = s()
        (t,) = struct.unpack("<I", f.read(4))
        kv[k] = value(t)
    return kv

sha = lambda p: hashlib.sha256(open(p, "rb").read()).hexdigest()
for path in (sys.argv[2], sys.argv[3]):
    kv = metadata(path)
    for field in ("key", "corpus_sha256", "base_sha256", "weights_sha256", "cpu_variant", "tools"):
        assert kv["logitaudit.training." + field] == m[field], (path, field, kv)
    assert kv["logitaudit.training.recipe"] == m["recipe"], kv
    assert "CC0-1.0" in kv["logitaudit.training.corpus"], kv
    assert abs(kv["logitaudit.training.val_loss"] - m["val_loss"]) < 1e-3, (kv, m)
assert sha(sys.argv[3]) == m["f32_sha256"], "the F32 file is not the manifest's"
assert sha(sys.argv[2]) == measured["sha256"], "the measured file is not the model"
assert m["cpu_variant"] not in ("", "unknown"), "the CPU variant that trained it was not read"
assert m["recipe"].startswith("llama-finetune -c 256 -b 256 -ub 256 -lr 1e-4 -epochs 1"), m["recipe"]
for kind in ("trained", "random"):
    assert measured["perplexity"][kind] > 1, measured
    g = measured["margins"][kind]
    assert g["positions"] > 0 and g["p10"] <= g["median"] <= g["p90"], g
print("metadata, manifest and measurements agree:", m["key"], m["weights_sha256"][:16])
PY
# The summary printed is the measured file's.
ppl=$(python3 -c 'import json,sys; print("%.2f" % json.load(open(sys.argv[1]))["perplexity"]["trained"])' "$model.measured.json")
expect "$work/1.err" "perplexity on Artistic"
expect "$work/1.err" ": $ppl"

# Second run: the cache, the same file.
before=$(stat -c '%Y %s' "$model")
"${train[@]}" >"$work/2.out" 2>"$work/2.err" || { cat "$work/2.err" >&2; fail "the cached run failed"; }
expect "$work/2.err" "cached: $dir"
[[ $(tail -1 "$work/2.out") == "$model" && $(stat -c '%Y %s' "$model") == "$before" ]] || fail "the cached run changed the model"
grep -q "training " "$work/2.err" && fail "the cached run trained"
"${train[@]}" --cached-only >"$work/3.out" 2>/dev/null || fail "--cached-only did not find the cached model"
[[ $(tail -1 "$work/3.out") == "$model" ]] || fail "--cached-only printed another path"

# --check: trains again and compares; its verdict agrees with the two sha256 it prints.
"${train[@]}" --check >"$work/4.out" 2>"$work/4.err" || { cat "$work/4.err" >&2; fail "--check failed"; }
line=$(grep "^train-model: check:" "$work/4.err") || { cat "$work/4.err" >&2; fail "no check verdict"; }
new=$(sed -n 's/.*sha256 \([0-9a-f]\{64\}\).*/\1/p' <<<"$line")
cached=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["weights_sha256"])' "$manifest")
if [[ $line == *"are the cached bytes"* ]]; then
  [[ $new == "$cached" ]] || fail "check says same, but $new != $cached"
else
  [[ $line == *DIFFER* && $line == *"cached $cached"* && $new != "$cached" ]] || fail "check verdict and its sha256 disagree: $line"
fi
[[ $(stat -c '%Y %s' "$model") == "$before" ]] || fail "--check replaced the cached model"
# ... even when the cache has no file of the asked quantisation: it compares, and writes nothing.
f32_before=$(stat -c '%Y %s' "$dir/trained.F32.gguf")
"${train[@]}" --check --quantize none >/dev/null 2>"$work/4b.err" || { cat "$work/4b.err" >&2; fail "--check --quantize none failed"; }
[[ $(stat -c '%Y %s' "$dir/trained.F32.gguf") == "$f32_before" && ! -e $dir/$(basename "$model" .Q8_0.gguf).F32.gguf ]] ||
  fail "--check wrote into the cache"

# The record: the manifest's own bytes are "reproduced"; other bytes from another variant DIFFER.
key=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["key"])' "$manifest")
variant=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cpu_variant"])' "$manifest")
label=$(basename "$work/base.gguf" .gguf)
fields=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["base_sha256"], m["corpus_sha256"])' "$manifest")
echo "$key $label $fields $new $variant" >"$work/record.txt"
"${train[@]}" --check >"$work/5.out" 2>"$work/5.err" || fail "--check against the record failed"
line=$(grep "^train-model: provisioning:" "$work/5.err")
new5=$(grep "^train-model: check:" "$work/5.err" | sed -n 's/.*sha256 \([0-9a-f]\{64\}\).*/\1/p')
if [[ $new5 == "$new" ]]; then
  [[ $line == *"reproduced: the weights are the recorded bytes"* ]] || fail "same bytes, not reproduced: $line"
else
  [[ $line == *DIFFER* ]] || fail "other bytes, not DIFFER: $line"
fi
other=$([[ $variant == haswell ]] && echo sse42 || echo haswell)
echo "$key $label $fields $(printf '0%.0s' {1..64}) $other" >"$work/record.txt"
"${train[@]}" --check >"$work/6.out" 2>"$work/6.err" || fail "--check against another variant's record failed"
expect "$work/6.err" "the weights DIFFER from the record"
expect "$work/6.err" "ggml runs its $variant CPU kernels and the record's ran $other"
echo "train model test passed"
