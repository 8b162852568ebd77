// The model generator: same arguments give the same bytes; bad shapes name their argument.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "clients/model_file.hpp"
#include "tools/gguf_writer.hpp"

namespace fs = std::filesystem;
using namespace logitaudit::tools;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

fs::path temp_file(const std::string& name) {
  return fs::temp_directory_path() / ("logitaudit-test-" + std::to_string(::getpid()) + "-" + name);
}

}  // namespace

TEST(gguf_writer, same_shape_and_seed_give_identical_bytes) {
  const auto a = temp_file("a.gguf"), b = temp_file("b.gguf"), c = temp_file("c.gguf");
  write_random_llama_gguf(*preset_shape("tiny"), 7, "t", a);
  write_random_llama_gguf(*preset_shape("tiny"), 7, "t", b);
  write_random_llama_gguf(*preset_shape("tiny"), 8, "t", c);
  const auto sa = slurp(a), sb = slurp(b), sc = slurp(c);
  EXPECT_GT(sa.size(), 4u << 20);  // F32 tiny model: about 4.6 MB of weights
  EXPECT_EQ(sa.substr(0, 4), "GGUF");
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc) << "a different seed must give different weights";
  fs::remove(a), fs::remove(b), fs::remove(c);
}

TEST(gguf_writer, data_section_is_aligned_and_file_size_matches_tensors) {
  const auto a = temp_file("size.gguf");
  model_shape s = *preset_shape("tiny");
  write_random_llama_gguf(s, 1, "t", a);
  const auto size = fs::file_size(a);
  EXPECT_EQ(size % 32, 0u);
  // Weights alone (F32): embeddings + output + per layer q,k,v,o,gate,up,down + norms.
  const std::uint64_t kv = s.n_head_kv * (s.n_embd / s.n_head);
  const std::uint64_t per_layer = 2 * s.n_embd * s.n_embd + 2 * s.n_embd * kv + 3 * s.n_embd * s.n_ff + 2 * s.n_embd;
  const std::uint64_t weights = 4 * (2 * s.n_embd * s.n_vocab + s.n_layer * per_layer + s.n_embd);
  EXPECT_GT(size, weights);
  EXPECT_LT(size, weights + 64 * 1024);  // header, vocabulary, padding
  fs::remove(a);
}

TEST(gguf_writer, presets_have_the_seed_audit_sizes) {
  auto tiny = *preset_shape("tiny");
  auto small = *preset_shape("small");
  EXPECT_EQ(tiny.n_embd, 256u);
  EXPECT_EQ(tiny.n_layer, 4u);
  EXPECT_EQ(tiny.n_vocab, 512u);
  auto params = [](const model_shape& s) {
    return 2.0 * s.n_embd * s.n_vocab + s.n_layer * (2.0 * s.n_embd * s.n_embd + 3.0 * s.n_embd * s.n_ff);
  };
  EXPECT_NEAR(params(small) / params(tiny), 8.0, 2.0);
  EXPECT_FALSE(preset_shape("huge").has_value());
}

TEST(gguf_writer, vocabulary_strings_are_unique_at_every_size) {
  for (std::uint32_t n : {260u, 512u, 2048u, 40000u}) {
    auto v = make_vocabulary(n);
    ASSERT_EQ(v.size(), n);
    EXPECT_EQ(std::set<std::string>(v.begin(), v.end()).size(), n) << "vocabulary " << n;
    EXPECT_EQ(v[3], "<0x00>");
    EXPECT_EQ(v[258], "<0xFF>");
  }
}

TEST(gguf_writer, invalid_shapes_name_the_argument) {
  model_shape s;
  s.n_embd = 300;
  s.n_head = 7;
  auto errors = validate_shape(s, true);
  auto has = [&](const std::string& needle) {
    for (const auto& e : errors)
      if (e.find(needle) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("--n-head (7) must divide --n-embd (300)"));
  EXPECT_TRUE(has("--n-embd must be a multiple of 256"));
  EXPECT_TRUE(has("--n-head-kv"));
  EXPECT_TRUE(validate_shape(*preset_shape("tiny"), true).empty());
  EXPECT_TRUE(validate_shape(*preset_shape("small"), true).empty());

  model_shape f32 = *preset_shape("tiny");
  f32.n_ff = 100;  // fine unquantized, not as a K-quant
  EXPECT_TRUE(validate_shape(f32, false).empty());
  EXPECT_FALSE(validate_shape(f32, true).empty());

  model_shape zero;
  zero.n_layer = 0;
  zero.n_vocab = 10;
  errors = validate_shape(zero, false);
  EXPECT_TRUE(has("--n-layer must be positive"));
  EXPECT_TRUE(has("--n-vocab must be at least 260"));
}

// The context a managed server's slot is capped at comes from the file's metadata (certify sizes
// its prompts by it): what the writer wrote is read back, past the tokenizer's arrays, and a
// file that is not a GGUF says nothing.
TEST(gguf_writer, the_training_context_is_read_back_from_the_metadata) {
  const auto a = temp_file("ctx.gguf"), junk = temp_file("junk.gguf");
  auto shape = *preset_shape("tiny");
  shape.n_ctx = 256;
  write_random_llama_gguf(shape, 7, "t", a);
  EXPECT_EQ(logitaudit::clients::gguf_context_length(a.string()), 256);
  std::ofstream(junk) << "GGUF but not really";
  EXPECT_FALSE(logitaudit::clients::gguf_context_length(junk.string()));
  EXPECT_FALSE(logitaudit::clients::gguf_context_length(temp_file("absent.gguf").string()));
  fs::remove(a), fs::remove(junk);
}
