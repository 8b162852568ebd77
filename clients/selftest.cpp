// Each path: arm the proxy, send, and judge what came through against the answer as sent.
#include "selftest.hpp"

#include <memory>

#include "audit/stream_encoding.hpp"
#include "burst.hpp"
#include "fault_injection.hpp"

namespace logitaudit::clients {
namespace {

enum class path_kind { serial, burst, sse };

struct path {
  std::string name;
  path_kind kind = path_kind::serial;
  backend_config config;
};

// The unperturbed answer, read by the same kind's parser the perturbed one went through.
client_result<audit::logit_stream> read_back(const backend_config& c, const std::string& body, bool event_stream) {
  if (!event_stream) return c.api->parse(body);
  auto reader = c.api->read_stream(c.http.max_body);
  if (!reader) return unexpected{client_error{client_errc::unexpected_shape, "the kind does not stream"}};
  reader->feed(body, 0);
  return reader->finish();
}

bool same_stream(const audit::logit_stream& a, const audit::logit_stream& b) {
  if (audit::digest(a) != audit::digest(b) || a.tokens.size() != b.tokens.size()) return false;
  for (std::size_t i = 0; i < a.tokens.size(); ++i)
    if (a.tokens[i].text != b.tokens[i].text) return false;
  return true;
}

net::awaitable<audit::fault_case> run_case(backend& b, const path& p, std::shared_ptr<fault_proxy> proxy,
                                           audit::fault_kind fault, const selftest_options& o) {
  audit::fault_case c;
  c.path = p.name;
  c.fault = fault;
  completion_request r;
  r.prompt = o.prompt;
  r.n_predict = o.n_predict;
  r.n_probs = o.top_k;
  r.temperature = 0;
  r.cache_prompt = false;
  r.stream = p.kind == path_kind::sse;
  proxy->arm(fault, o.position >= 0 ? o.position : o.n_predict / 2);

  std::vector<client_result<audit::logit_stream>> got;
  if (p.kind == path_kind::burst) {
    burst_options bo;
    std::vector<completion_request> pair(2, r);
    auto res = co_await run_burst(b, std::move(pair), bo);
    got = std::move(res.results);
  } else {
    got.push_back(co_await b.complete(r));
  }
  const auto& applied = proxy->last();
  if (!applied) {
    c.error = proxy->error().empty() ? "no answer with tokens came back" : proxy->error();
    for (const auto& g : got)
      if (!g) c.error = std::string(to_string(g.error().code)) + ": " + g.error().message;
    // A format that cannot carry the fault (text keys, one top-k entry) is not a miss.
    c.applicable = proxy->error().empty();
    co_return c;
  }
  c.position = audit::is_equivalent(fault) ? -1 : applied->changed.position;
  c.expected = audit::expected_outcome(fault, applied->changed.position, applied->changed.tokens);
  auto original = read_back(p.config, applied->original, applied->event_stream);
  auto changed = read_back(p.config, applied->changed.body, applied->event_stream);
  if (!original) {
    c.error = "the unperturbed answer did not parse: " + original.error().message;
    co_return c;
  }
  // The member the proxy changed is the one that arrived as the changed answer reads; a path
  // that delivered something else lost the fault on the way.
  const audit::logit_stream* delivered = nullptr;
  for (const auto& g : got)
    if (g && changed && same_stream(*g, *changed)) delivered = &*g;
  if (!delivered) {
    for (const auto& g : got)
      if (!g) c.error = std::string(to_string(g.error().code)) + ": " + g.error().message;
    if (c.error.empty())
      c.error = changed ? "the path delivered other numbers than the proxy sent"
                        : "the changed answer did not parse: " + changed.error().message;
    co_return c;
  }
  c.got = audit::compare_streams(*original, audit::digest(*original), *delivered, audit::digest(*delivered));
  co_return c;
}

}  // namespace

std::string selftest_result::paths_text() const {
  std::string s;
  for (std::size_t i = 0; i < paths.size(); ++i) s += (i ? ", " : "") + paths[i];
  return s;
}

net::awaitable<selftest_result> run_selftest(backend_config config, selftest_options o) {
  auto ex = co_await net::this_coro::executor;
  const bool https = config.url.starts_with("https://");
  const std::string prefix = https ? "https " : "";
  auto proxy = std::make_shared<fault_proxy>();
  config.http.filter = proxy;
  std::vector<path> paths;
  paths.push_back({prefix + "serial", path_kind::serial, config});
  if (o.burst) paths.push_back({prefix + "burst", path_kind::burst, config});
  if (o.sse && config.api->read_stream(config.http.max_body)) paths.push_back({prefix + "sse", path_kind::sse, config});
  if (o.openai && config.api.name() == "llama")
    if (auto openai = api_kinds().find("openai")) {
      auto c = config;
      c.api = *openai;
      paths.push_back({prefix + "openai", path_kind::serial, c});
    }
  selftest_result out;
  std::vector<audit::fault_case> cases;
  for (const auto& p : paths) {
    out.paths.push_back(p.name);
    backend b(ex, p.config);
    for (auto f : audit::kFaultKinds) cases.push_back(co_await run_case(b, p, proxy, f, o));
  }
  out.power = audit::tally_harness_power(std::move(cases));
  co_return out;
}

}  // namespace logitaudit::clients
