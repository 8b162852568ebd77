// logitaudit-make-model: writes a seeded random llama-architecture GGUF (optionally
// quantized with llama-quantize) and can measure the distribution of its greedy top1-top2
// margins on a real llama-server, or an existing model's (--model: a trained one,
// scripts/train-model.sh). Same arguments, same bytes.
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "clients/llama_api.hpp"
#include "clients/llama_process.hpp"
#include "gguf_writer.hpp"
#include "margin.hpp"

namespace fs = std::filesystem;
using namespace logitaudit;

namespace {

// Runs llama-quantize IN OUT TYPE with its output in a log; returns the exit status.
int run_quantize(const std::string& tool, const fs::path& in, const fs::path& out,
                 const std::string& type, const fs::path& log) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    std::FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (f) ::dup2(::fileno(stdout), STDERR_FILENO);
    ::execl(tool.c_str(), tool.c_str(), in.c_str(), out.c_str(), type.c_str(), "1", nullptr);
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

std::string tail_of(const fs::path& p, std::size_t n = 15) {
  std::FILE* f = std::fopen(p.c_str(), "r");
  if (!f) return {};
  std::string all;
  char buf[4096];
  for (std::size_t k; (k = std::fread(buf, 1, sizeof buf, f)) > 0;) all.append(buf, k);
  std::fclose(f);
  std::size_t pos = all.size();
  for (std::size_t lines = 0; pos > 0 && lines <= n; --pos)
    if (all[pos - 1] == '\n') ++lines;
  return all.substr(pos);
}

// What the command line asks for, and the options whose presence matters.
struct make_args {
  std::string preset;
  tools::model_shape shape;
  std::uint64_t seed = 1;
  std::string out;
  std::string quantize = "Q4_K_M";
  std::string quantize_tool;
  bool measure = false;
  bool json = false;
  std::string existing;
  CLI::Option *embd = nullptr, *layer = nullptr, *head = nullptr, *head_kv = nullptr, *ff = nullptr, *vocab = nullptr,
              *logit = nullptr, *resid = nullptr, *model = nullptr;
};

void add_options(CLI::App& app, make_args& a) {
  app.add_option("--preset", a.preset, "tiny (n_embd 256, 4 layers, vocab 512) or small (512, 8, 2048)")
      ->check(CLI::IsMember(tools::preset_names()));
  a.embd = app.add_option("--n-embd", a.shape.n_embd, "embedding width");
  a.layer = app.add_option("--n-layer", a.shape.n_layer, "transformer blocks");
  a.head = app.add_option("--n-head", a.shape.n_head, "attention heads");
  a.head_kv = app.add_option("--n-head-kv", a.shape.n_head_kv, "key/value heads (GQA)");
  a.ff = app.add_option("--n-ff", a.shape.n_ff, "feed-forward width");
  a.vocab = app.add_option("--n-vocab", a.shape.n_vocab, "vocabulary size (>= 260)");
  a.logit = app.add_option("--logit-scale", a.shape.logit_scale, "standard deviation of the output logits (sets the top1-top2 margin)");
  a.resid = app.add_option("--residual-scale", a.shape.residual_scale,
                           "scale of each residual branch (small keeps depth from amplifying jitter)");
  app.add_option("--seed", a.seed, "seed of the weight generator");
  app.add_option("--out", a.out, "output file (default: <preset or custom>-s<seed>.<quant>.gguf)");
  app.add_option("--quantize", a.quantize, "llama-quantize type (Q4_K_M, Q8_0, ...) or none for F32");
  app.add_option("--llama-quantize", a.quantize_tool, "llama-quantize to run (default: found like llama-server)");
  app.add_flag("--measure-margin", a.measure,
               "serve the model with llama-server and print the distribution of its greedy top1-top2 "
               "logprob margins over the seed protocol's prompts");
  a.model = app.add_option("--model", a.existing, "measure this existing GGUF (with --measure-margin) instead of writing one")
                ->check(CLI::ExistingFile);
  app.add_flag("--json", a.json, "print the margin distribution as one JSON object");
}

// Prints the distribution of `model`'s margins; the exit status of the tool.
int print_margins(const std::string& model, bool json) {
  auto m = tools::measure_margin(model);
  if (!m) {
    std::cerr << "logitaudit-make-model: margin measurement failed: " << m.error() << "\n";
    return 1;
  }
  std::cout << (json ? m->json() : m->summary()) << "\n";
  return 0;
}

// --model measures an existing model and writes none: the options of a new model are refused.
int measure_existing(const CLI::App& app, const make_args& a) {
  if (!a.measure) {
    std::cerr << "logitaudit-make-model: --model measures an existing model: add --measure-margin\n";
    return 2;
  }
  for (const auto* o : app.get_options())
    if (o->count() > 0 && o != a.model && o->get_name() != "--measure-margin" && o->get_name() != "--json") {
      std::cerr << "logitaudit-make-model: " << o->get_name() << " writes a model; --model measures an existing one\n";
      return 2;
    }
  return print_margins(a.existing, a.json);
}

// A preset gives the shape; explicit dimensions override it.
tools::model_shape chosen_shape(const make_args& a) {
  tools::model_shape chosen = a.preset.empty() ? tools::model_shape{} : *tools::preset_shape(a.preset);
  auto take = [](CLI::Option* o, auto& dst, auto src) { if (o->count() > 0) dst = src; };
  take(a.embd, chosen.n_embd, a.shape.n_embd);
  take(a.layer, chosen.n_layer, a.shape.n_layer);
  take(a.head, chosen.n_head, a.shape.n_head);
  take(a.head_kv, chosen.n_head_kv, a.shape.n_head_kv);
  take(a.ff, chosen.n_ff, a.shape.n_ff);
  take(a.vocab, chosen.n_vocab, a.shape.n_vocab);
  take(a.logit, chosen.logit_scale, a.shape.logit_scale);
  take(a.resid, chosen.residual_scale, a.shape.residual_scale);
  return chosen;
}

// Written beside the target and renamed into place: a failure never leaves a half file.
int write_model(const make_args& a, const tools::model_shape& chosen, const fs::path& out_path, bool quantized) {
  const fs::path f32 = out_path.string() + ".f32.tmp";
  const fs::path tmp = out_path.string() + ".tmp";
  const std::string name = "logitaudit-" + (a.preset.empty() ? std::string("custom") : a.preset) + "-s" + std::to_string(a.seed);
  try {
    tools::write_random_llama_gguf(chosen, a.seed, name, quantized ? f32 : tmp);
  } catch (const std::exception& e) {
    std::cerr << "logitaudit-make-model: " << e.what() << "\n";
    fs::remove(f32);
    fs::remove(tmp);
    return 1;
  }
  if (quantized) {
    const fs::path log = out_path.string() + ".quantize.log";
    const int rc = run_quantize(a.quantize_tool, f32, tmp, a.quantize, log);
    fs::remove(f32);
    if (rc != 0) {
      std::cerr << "logitaudit-make-model: llama-quantize " << a.quantize << " failed (exit " << rc << "):\n" << tail_of(log);
      fs::remove(tmp);
      return 1;
    }
    fs::remove(log);
  }
  fs::rename(tmp, out_path);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Writes a llama-architecture GGUF with seeded random weights (no download needed)."};
  app.set_version_flag("--version", std::string("logitaudit-make-model ") + LOGITAUDIT_VERSION);
  make_args a;
  add_options(app, a);
  CLI11_PARSE(app, argc, argv);
  if (a.json && !a.measure) {
    std::cerr << "logitaudit-make-model: --json prints the margins: add --measure-margin\n";
    return 2;
  }
  if (a.model->count() > 0) return measure_existing(app, a);
  const auto chosen = chosen_shape(a);
  const bool quantized = a.quantize != "none" && a.quantize != "F32" && a.quantize != "f32";
  const bool k_quant = quantized && a.quantize.find("_K") != std::string::npos;
  auto errors = tools::validate_shape(chosen, k_quant);
  if (quantized && !k_quant && (chosen.n_embd % 32 != 0 || chosen.n_ff % 32 != 0))
    errors.push_back("--n-embd and --n-ff must be multiples of 32 for --quantize " + a.quantize);
  if (!errors.empty()) {
    for (const auto& e : errors) std::cerr << "logitaudit-make-model: " << e << "\n";
    return 2;
  }
  const std::string label = a.preset.empty() ? "custom" : a.preset;
  if (a.out.empty()) a.out = label + "-s" + std::to_string(a.seed) + "." + (quantized ? a.quantize : "F32") + ".gguf";
  const fs::path out_path(a.out);
  if (out_path.has_parent_path()) fs::create_directories(out_path.parent_path());
  if (quantized && a.quantize_tool.empty()) a.quantize_tool = clients::find_llama_tool("llama-quantize");
  if (quantized && a.quantize_tool.empty()) {
    std::cerr << "logitaudit-make-model: --quantize " << a.quantize
              << " needs llama-quantize: run scripts/get-llama-server.sh, set LOGITAUDIT_LLAMA_QUANTIZE, "
                 "or pass --quantize none\n";
    return 2;
  }
  if (const int rc = write_model(a, chosen, out_path, quantized); rc != 0) return rc;
  std::cout << out_path.string() << " (" << fs::file_size(out_path) << " bytes; n_embd " << chosen.n_embd
            << ", n_layer " << chosen.n_layer << ", n_head " << chosen.n_head << "/" << chosen.n_head_kv
            << ", n_ff " << chosen.n_ff << ", n_vocab " << chosen.n_vocab << ", logit scale "
            << chosen.logit_scale << ", seed " << a.seed << ", " << (quantized ? a.quantize : "F32") << ")\n";
  return a.measure ? print_margins(out_path.string(), a.json) : 0;
}
