// bench/streaming: what streaming costs. Bursts of W identical greedy requests against one
// llama-server, alternately plain (one JSON body each) and streamed (SSE with per-token server
// times, as audits send bursts), in one run; generated tokens per second of wall time for each
// and the ratio (goal: streamed at least 0.95x plain on the tiny model).
//   bench_streaming --url URL [--bursts N] [--width W] [--n-predict K] [--json FILE]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "clients/backend.hpp"
#include "clients/burst.hpp"
#include "support/run.hpp"

using namespace logitaudit;

int main(int argc, char** argv) {
  std::string url, json_out;
  int bursts = 20, width = 4, n_predict = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--url") url = v;
    else if (a == "--bursts") bursts = std::atoi(v.c_str());
    else if (a == "--width") width = std::atoi(v.c_str());
    else if (a == "--n-predict") n_predict = std::atoi(v.c_str());
    else if (a == "--json") json_out = v;
  }
  if (url.empty() || bursts < 1 || width < 1 || n_predict < 1) {
    std::fprintf(stderr, "usage: bench_streaming --url URL [--bursts N] [--width W] [--n-predict K] [--json FILE]\n");
    return 2;
  }
  clients::net::io_context io;
  clients::backend b(io.get_executor(), clients::backend_config{"bench", url});
  struct side {
    long long tokens = 0;
    double seconds = 0;
    int failed = 0;
  } plain, streamed;
  for (int i = 0; i < 2 * bursts; ++i) {
    // Alternating, so that a drift of the machine (its clock, other load) falls on both.
    const bool stream = i % 2 == 1;
    std::vector<clients::completion_request> reqs(static_cast<std::size_t>(width));
    for (auto& r : reqs) {
      r.prompt = "The history of the printing press begins";
      r.n_predict = n_predict;
      r.stream = stream;
    }
    auto res = test_support::run(io, clients::run_burst(b, std::move(reqs)), std::chrono::minutes(2));
    auto& s = stream ? streamed : plain;
    s.seconds += static_cast<double>(res.wall_ns) / 1e9;
    for (const auto& r : res.results) {
      if (r) s.tokens += static_cast<long long>(r->tokens.size());
      else ++s.failed;
    }
  }
  const double plain_rate = plain.tokens / plain.seconds, streamed_rate = streamed.tokens / streamed.seconds;
  std::printf("streaming cost, %d bursts of %d x %d tokens each way against %s\n", bursts, width, n_predict, url.c_str());
  std::printf("  plain    %10.0f tokens/s  (%lld tokens, %d failed)\n", plain_rate, plain.tokens, plain.failed);
  std::printf("  streamed %10.0f tokens/s  (%lld tokens, %d failed)\n", streamed_rate, streamed.tokens, streamed.failed);
  std::printf("  streamed / plain: %.3fx (goal >= 0.95x)\n", streamed_rate / plain_rate);
  if (!json_out.empty())
    std::ofstream(json_out) << nlohmann::json{{"bursts", bursts}, {"width", width}, {"n_predict", n_predict},
                                              {"plain_tokens_per_s", plain_rate}, {"streamed_tokens_per_s", streamed_rate},
                                              {"ratio", streamed_rate / plain_rate},
                                              {"failed", plain.failed + streamed.failed}}
                                   .dump(2);
  return plain.failed + streamed.failed > 0 ? 1 : 0;
}
