// GGUF v3 serialisation (little-endian, see docs/models.md) and the seeded weight generator.
#include "gguf_writer.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>

namespace logitaudit::tools {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF is written little-endian");

constexpr std::uint32_t kAlignment = 32;
enum : std::uint32_t { kTypeU32 = 4, kTypeI32 = 5, kTypeF32 = 6, kTypeBool = 7, kTypeString = 8,
                       kTypeArray = 9 };
constexpr std::uint32_t kTensorF32 = 0;
constexpr std::uint32_t kFirstByteToken = 3;  // after <unk>, <s>, </s>

// splitmix64: a tiny generator whose output is the same on every platform.
class random_source {
 public:
  explicit random_source(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Irwin-Hall(12) - 6: mean 0, variance 1, bell-shaped; only additions, so bit-stable.
  double normal() {
    double s = 0;
    for (int i = 0; i < 12; ++i) s += uniform();
    return s - 6.0;
  }

 private:
  std::uint64_t state_;
};

class gguf_file {
 public:
  void u32(std::uint32_t v) { raw(&v, 4); }
  void i32(std::int32_t v) { raw(&v, 4); }
  void u64(std::uint64_t v) { raw(&v, 8); }
  void f32(float v) { raw(&v, 4); }
  void str(const std::string& s) { u64(s.size()); raw(s.data(), s.size()); }
  void raw(const void* p, std::size_t n) {
    auto* b = static_cast<const char*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  void pad_to(std::size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
  }
  std::size_t size() const { return bytes_.size(); }
  const std::vector<char>& bytes() const { return bytes_; }

  // Metadata key/value helpers.
  // Metadata key/value helpers; each counts one key for the header.
  void kv_u32(const std::string& k, std::uint32_t v) { key(k, kTypeU32); u32(v); }
  void kv_f32(const std::string& k, float v) { key(k, kTypeF32); f32(v); }
  void kv_bool(const std::string& k, bool v) { key(k, kTypeBool); char c = v; raw(&c, 1); }
  void kv_str(const std::string& k, const std::string& v) { key(k, kTypeString); str(v); }
  void kv_array(const std::string& k, std::uint32_t element_type, std::uint64_t n) {
    key(k, kTypeArray);
    u32(element_type);
    u64(n);
  }
  std::uint64_t key_count() const { return keys_; }

 private:
  void key(const std::string& k, std::uint32_t type) {
    str(k);
    u32(type);
    ++keys_;
  }

  std::vector<char> bytes_;
  std::uint64_t keys_ = 0;
};

struct tensor {
  std::string name;
  std::vector<std::uint64_t> dims;  // innermost first, as GGUF stores them
  std::vector<float> data;
};

tensor filled(std::string name, std::vector<std::uint64_t> dims, float value) {
  std::uint64_t n = 1;
  for (auto d : dims) n *= d;
  return {std::move(name), std::move(dims), std::vector<float>(n, value)};
}

tensor gaussian(random_source& rng, std::string name, std::vector<std::uint64_t> dims,
                double stddev) {
  tensor t = filled(std::move(name), std::move(dims), 0.0f);
  for (auto& x : t.data) x = static_cast<float>(rng.normal() * stddev);
  return t;
}

}  // namespace

std::vector<std::string> preset_names() { return {"tiny", "small"}; }

std::optional<model_shape> preset_shape(const std::string& name) {
  model_shape s;
  if (name == "tiny") return s;
  if (name == "small") {
    s.n_embd = 512;
    s.n_layer = 8;
    s.n_head = 8;
    s.n_head_kv = 4;
    s.n_ff = 1536;
    s.n_vocab = 2048;
    return s;
  }
  return std::nullopt;
}

std::vector<std::string> validate_shape(const model_shape& s, bool quantized_k) {
  std::vector<std::string> errors;
  auto positive = [&](std::uint32_t v, const char* arg) {
    if (v == 0) errors.push_back(std::string(arg) + " must be positive");
  };
  positive(s.n_embd, "--n-embd");
  positive(s.n_layer, "--n-layer");
  positive(s.n_head, "--n-head");
  positive(s.n_head_kv, "--n-head-kv");
  positive(s.n_ff, "--n-ff");
  if (s.n_vocab < kFirstByteToken + 256 + 1)
    errors.push_back("--n-vocab must be at least 260 (3 control tokens, 256 byte tokens, text)");
  if (s.n_vocab > 1u << 20) errors.push_back("--n-vocab must be at most 1048576");
  if (s.n_embd > 1u << 14) errors.push_back("--n-embd must be at most 16384");
  if (s.n_ff > 1u << 16) errors.push_back("--n-ff must be at most 65536");
  if (s.n_layer > 256) errors.push_back("--n-layer must be at most 256");
  if (s.n_head != 0 && s.n_embd % s.n_head != 0)
    errors.push_back("--n-head (" + std::to_string(s.n_head) + ") must divide --n-embd (" +
                     std::to_string(s.n_embd) + ")");
  if (s.n_head != 0 && s.n_embd % s.n_head == 0 && (s.n_embd / s.n_head) % 2 != 0)
    errors.push_back("--n-embd / --n-head (the head size) must be even for RoPE");
  if (s.n_head_kv != 0 && s.n_head % s.n_head_kv != 0)
    errors.push_back("--n-head-kv (" + std::to_string(s.n_head_kv) + ") must divide --n-head (" +
                     std::to_string(s.n_head) + ")");
  if (quantized_k) {
    if (s.n_embd % 256 != 0)
      errors.push_back("--n-embd must be a multiple of 256 for a K-quant (each row is quantized "
                       "in blocks of 256)");
    if (s.n_ff % 256 != 0)
      errors.push_back("--n-ff must be a multiple of 256 for a K-quant (ffn_down rows have "
                       "n_ff elements)");
  }
  if (!(s.logit_scale > 0 && s.logit_scale < 1000)) errors.push_back("--logit-scale must be in (0, 1000)");
  if (!(s.residual_scale >= 0 && s.residual_scale < 100))
    errors.push_back("--residual-scale must be in [0, 100)");
  return errors;
}

std::vector<std::string> make_vocabulary(std::uint32_t n_vocab) {
  std::vector<std::string> v = {"<unk>", "<s>", "</s>"};
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) v.push_back(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
  const std::string space = "\xE2\x96\x81";  // U+2581, SentencePiece's word boundary
  const std::string letters = "etaoinshrdlucmfwypvbgkjqxz";
  std::vector<std::string> pieces = {space};
  for (char c : letters) pieces.push_back(std::string(1, c));
  for (char c : letters) pieces.push_back(space + c);
  for (char c : std::string("0123456789.,;:!?'-()")) pieces.push_back(std::string(1, c));
  for (char c : std::string("ETAOINSHRDLUCMFWYPVBGKJQXZ")) pieces.push_back(space + c);
  for (char a : letters)
    for (char b : letters) pieces.push_back(std::string{a, b});
  for (char a : letters)
    for (char b : letters) pieces.push_back(space + a + b);
  for (char a : letters)
    for (char b : letters)
      for (char c : letters) pieces.push_back(space + a + b + c);
  std::set<std::string> seen(v.begin(), v.end());
  for (const auto& p : pieces) {
    if (v.size() >= n_vocab) break;
    if (seen.insert(p).second) v.push_back(p);
  }
  // Beyond the pieces above (vocabularies over ~19k): numbered filler pieces, still unique.
  for (std::uint32_t i = 0; v.size() < n_vocab; ++i) {
    std::string p = space + "w" + std::to_string(i);
    if (seen.insert(p).second) v.push_back(p);
  }
  return v;
}

namespace {

// Tensors, in the order llama.cpp lists them, drawn from `rng` in that order. Standard deviations
// keep every activation near unit scale; the output layer's sets the logit spread (see model_shape).
std::vector<tensor> random_tensors(const model_shape& s, random_source& rng) {
  const std::uint32_t head_dim = s.n_embd / s.n_head;
  const std::uint64_t n_embd_kv = static_cast<std::uint64_t>(s.n_head_kv) * head_dim;
  std::vector<tensor> tensors;
  tensors.push_back(gaussian(rng, "token_embd.weight", {s.n_embd, s.n_vocab}, 1.0));
  const double in_std = 1.0 / std::sqrt(static_cast<double>(s.n_embd));
  const double branch = s.residual_scale / std::sqrt(static_cast<double>(s.n_layer));
  for (std::uint32_t l = 0; l < s.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    tensors.push_back(filled(p + "attn_norm.weight", {s.n_embd}, 1.0f));
    tensors.push_back(gaussian(rng, p + "attn_q.weight", {s.n_embd, s.n_embd}, in_std));
    tensors.push_back(gaussian(rng, p + "attn_k.weight", {s.n_embd, n_embd_kv}, in_std));
    tensors.push_back(gaussian(rng, p + "attn_v.weight", {s.n_embd, n_embd_kv}, in_std));
    tensors.push_back(gaussian(rng, p + "attn_output.weight", {s.n_embd, s.n_embd}, branch * in_std));
    tensors.push_back(filled(p + "ffn_norm.weight", {s.n_embd}, 1.0f));
    tensors.push_back(gaussian(rng, p + "ffn_gate.weight", {s.n_embd, s.n_ff}, in_std));
    tensors.push_back(gaussian(rng, p + "ffn_up.weight", {s.n_embd, s.n_ff}, in_std));
    tensors.push_back(gaussian(rng, p + "ffn_down.weight", {s.n_ff, s.n_embd},
                               branch / std::sqrt(static_cast<double>(s.n_ff))));
  }
  tensors.push_back(filled("output_norm.weight", {s.n_embd}, 1.0f));
  tensors.push_back(gaussian(rng, "output.weight", {s.n_embd, s.n_vocab}, s.logit_scale * in_std));
  // Control and byte tokens get a quarter of the scale, as in a trained model they are rare:
  // greedy text is then made of text pieces, and end-of-sequence seldom cuts a stream short.
  auto& out_rows = tensors.back().data;
  for (std::size_t i = 0; i < std::size_t{kFirstByteToken} + 256; ++i)
    for (std::size_t k = 0; k < s.n_embd; ++k) out_rows[i * s.n_embd + k] *= 0.25f;

  return tensors;
}

// The GGUF metadata: the architecture, the shape, and a SentencePiece vocabulary.
gguf_file metadata(const model_shape& s, const std::string& name) {
  const std::uint32_t head_dim = s.n_embd / s.n_head;
  const auto vocab = make_vocabulary(s.n_vocab);
  gguf_file meta;
  meta.kv_str("general.architecture", "llama");
  meta.kv_str("general.name", name);
  meta.kv_u32("general.alignment", kAlignment);
  meta.kv_u32("general.file_type", 0);  // all F32
  meta.kv_u32("llama.context_length", s.n_ctx);
  meta.kv_u32("llama.embedding_length", s.n_embd);
  meta.kv_u32("llama.block_count", s.n_layer);
  meta.kv_u32("llama.feed_forward_length", s.n_ff);
  meta.kv_u32("llama.rope.dimension_count", head_dim);
  meta.kv_u32("llama.attention.head_count", s.n_head);
  meta.kv_u32("llama.attention.head_count_kv", s.n_head_kv);
  meta.kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  meta.kv_f32("llama.rope.freq_base", 10000.0f);
  meta.kv_str("tokenizer.ggml.model", "llama");
  meta.kv_array("tokenizer.ggml.tokens", kTypeString, vocab.size());
  for (const auto& t : vocab) meta.str(t);
  // Scores rank the text pieces for SentencePiece merges: earlier (shorter) pieces first.
  meta.kv_array("tokenizer.ggml.scores", kTypeF32, vocab.size());
  for (std::size_t i = 0; i < vocab.size(); ++i)
    meta.f32(i < kFirstByteToken + 256 ? 0.0f : -static_cast<float>(i));
  // Token types: 2 unknown, 3 control, 6 byte, 1 normal.
  meta.kv_array("tokenizer.ggml.token_type", kTypeI32, vocab.size());
  for (std::size_t i = 0; i < vocab.size(); ++i)
    meta.i32(i == 0 ? 2 : i < kFirstByteToken ? 3 : i < kFirstByteToken + 256 ? 6 : 1);
  meta.kv_u32("tokenizer.ggml.unknown_token_id", 0);
  meta.kv_u32("tokenizer.ggml.bos_token_id", 1);
  meta.kv_u32("tokenizer.ggml.eos_token_id", 2);
  meta.kv_bool("tokenizer.ggml.add_bos_token", true);

  return meta;
}

}  // namespace

void write_random_llama_gguf(const model_shape& s, std::uint64_t seed, const std::string& name,
                             const std::filesystem::path& out) {
  random_source rng(seed);
  const auto tensors = random_tensors(s, rng);
  const auto meta = metadata(s, name);
  gguf_file f;
  f.raw("GGUF", 4);
  f.u32(3);
  f.u64(tensors.size());
  f.u64(meta.key_count());
  f.raw(meta.bytes().data(), meta.size());

  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    f.str(t.name);
    f.u32(static_cast<std::uint32_t>(t.dims.size()));
    for (auto d : t.dims) f.u64(d);
    f.u32(kTensorF32);
    f.u64(offset);
    offset += t.data.size() * sizeof(float);
    offset = (offset + kAlignment - 1) / kAlignment * kAlignment;
  }
  f.pad_to(kAlignment);

  std::ofstream os(out, std::ios::binary | std::ios::trunc);
  if (!os) throw std::runtime_error("cannot open " + out.string() + " for writing");
  os.write(f.bytes().data(), static_cast<std::streamsize>(f.size()));
  static const char zeros[kAlignment] = {};
  for (const auto& t : tensors) {
    const auto n = t.data.size() * sizeof(float);
    os.write(reinterpret_cast<const char*>(t.data.data()), static_cast<std::streamsize>(n));
    os.write(zeros, static_cast<std::streamsize>((kAlignment - n % kAlignment) % kAlignment));
  }
  os.flush();
  if (!os) throw std::runtime_error("writing " + out.string() + " failed (disk full?)");
}

}  // namespace logitaudit::tools
