// Test-side wrappers around clients::llama_server_process.
#include "llama_server.hpp"

#include <algorithm>

#include <filesystem>
#include <stdexcept>

#ifndef LOGITAUDIT_TEST_MODELS
#error "LOGITAUDIT_TEST_MODELS must name the folder of generated test models"
#endif

namespace logitaudit::test_support {

std::string model_path(const std::string& name) {
  auto p = std::filesystem::path(LOGITAUDIT_TEST_MODELS) / (name + ".gguf");
  if (!std::filesystem::exists(p))
    throw std::runtime_error("test model " + p.string() +
                             " is missing: the `models` ctest fixture makes it (run through ctest)");
  return p.string();
}

std::unique_ptr<clients::llama_server_process> start_llama_server(const server_args& a) {
  clients::llama_server_options o;
  o.model = a.model_file.empty() ? model_path(a.model) : a.model_file;
  o.port = a.port;
  o.parallel = a.parallel;
  o.threads = a.threads;
  o.ctx = a.ctx;
  o.metrics = a.metrics;
  o.extra_args = a.extra;
  o.env = a.env;
  // llama-server serves HTTP with n_parallel + 2 threads by default, each held by its keep-alive
  // connection for 5 s: the seed protocol's burst of 8 on -np 4 then leaves two members unserved
  // for those 5 s, and the server closes them unanswered (seen: "the server closed the connection
  // without answering" on concurrent_greedy_c8, each attempt). The tests give every burst a thread.
  if (std::find(a.extra.begin(), a.extra.end(), "--threads-http") == a.extra.end())
    o.extra_args.insert(o.extra_args.end(), {"--threads-http", "16"});
  auto s = clients::llama_server_process::start(o);
  if (!s) throw std::runtime_error(s.error());
  return std::move(*s);
}

std::string post_completion(const clients::llama_server_process& server, const std::string& body) {
  auto ep = clients::parse_endpoint(server.url());
  auto r = clients::request_blocking(*ep, clients::http::verb::post, "/completion", body);
  if (!r) throw std::runtime_error(std::string(clients::to_string(r.error().code)) + ": " + r.error().message);
  return r->body;
}

}  // namespace logitaudit::test_support
