// A minimal GGUF v3 writer and a seeded random `llama`-architecture model built with it.
// It exists so that every machine can serve a real model through llama-server without
// downloading weights: random weights run exactly the same kernels as trained ones.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace logitaudit::tools {

// The shape and the numerical character of a generated model.
struct model_shape {
  std::uint32_t n_embd = 256;
  std::uint32_t n_layer = 4;
  std::uint32_t n_head = 4;
  std::uint32_t n_head_kv = 2;
  std::uint32_t n_ff = 768;
  std::uint32_t n_vocab = 512;
  std::uint32_t n_ctx = 2048;
  // Standard deviation of the output logits before softmax. It sets the top1-top2 margin:
  // the larger it is, the more a greedy token "survives" small numerical jitter.
  double logit_scale = 10.0;
  // Scale of each residual branch (attention output, FFN down); small keeps the random
  // network in its ordered regime, where perturbations do not grow with depth.
  double residual_scale = 0.25;
};

struct model_preset {
  std::string name;
  model_shape shape;
};

// `tiny` and `small`: the two model sizes of the seed's audit (small has ~8x the parameters).
std::optional<model_shape> preset_shape(const std::string& name);
std::vector<std::string> preset_names();

// Every problem with a shape, each naming its command-line argument; empty when valid.
// `quantized_k` checks the K-quant rule that every row length is a multiple of 256.
std::vector<std::string> validate_shape(const model_shape& shape, bool quantized_k);

// Writes an F32 GGUF with weights drawn from a seeded generator. The same shape and seed
// give byte-identical files on every machine (no libm in the random path).
// Throws std::runtime_error when the file cannot be written.
void write_random_llama_gguf(const model_shape& shape, std::uint64_t seed,
                             const std::string& name, const std::filesystem::path& out);

// The vocabulary the generator writes: control tokens, 256 byte tokens, then text pieces.
// Exposed for tests: every string is unique (llama.cpp aborts on duplicates).
std::vector<std::string> make_vocabulary(std::uint32_t n_vocab);

}  // namespace logitaudit::tools
