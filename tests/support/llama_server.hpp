// Real llama-server processes for tests: started on a free loopback port with a model the
// project generated, waited for with a deadline, always stopped (RAII, and the child dies
// with the test process).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "clients/http_client.hpp"
#include "clients/llama_process.hpp"

namespace logitaudit::test_support {

// Path of a generated test model ("tiny", "small"), made by the `models` ctest fixture.
std::string model_path(const std::string& name);

struct server_args {
  std::string model = "tiny";
  int parallel = 1;
  // One compute thread: the suite runs two tests at a time on two cores, where a second
  // thread per server mostly waits at ggml's barriers. The same e2e tests took 40% fewer
  // CPU-seconds and 20% less time with one (docs/reliability.md).
  int threads = 1;
  int ctx = 4096;
  bool metrics = false;
  std::vector<std::string> extra;
  std::string model_file;  // a model file by path (instead of `model`)
  int port = 0;            // 0: a free port
  std::vector<std::pair<std::string, std::string>> env;  // set in the server's environment
};

// Starts a server or throws std::runtime_error whose message includes the server's log tail.
std::unique_ptr<clients::llama_server_process> start_llama_server(const server_args& args);

// POST /completion on a private io_context; throws on any client error.
std::string post_completion(const clients::llama_server_process& server, const std::string& body);

}  // namespace logitaudit::test_support
