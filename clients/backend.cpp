// A backend: the wire (http_client) plus its API kind.
#include "backend.hpp"

#include <cmath>

#include "audit/stream_encoding.hpp"
#include "machine.hpp"
#include "model_file.hpp"
#include "audit/numbers.hpp"

#include <cctype>
#include <stdexcept>
#include <tuple>

namespace logitaudit::clients {
namespace {

endpoint must_parse(const std::string& url) {
  auto ep = parse_endpoint(url);
  if (!ep) throw std::invalid_argument("backend url " + url + " " + ep.error());
  return *ep;
}

void stamp(audit::logit_stream& s, const http_exchange& x) {
  s.client.write_ns = x.write_ns;
  s.client.first_byte_ns = x.first_byte_ns;
  s.client.last_byte_ns = x.last_byte_ns;
}

// A request that asked for logprobs gets a logprob with every token, never an id alone.
client_result<audit::logit_stream> with_logprobs(client_result<audit::logit_stream> s, bool expected) {
  if (s && expected)
    for (std::size_t i = 0; i < s->tokens.size(); ++i)
      if (std::isnan(s->tokens[i].logprob))
        return unexpected{unexpected_shape("token " + std::to_string(i) +
                                           " carries no logprob (a probability after sampling, `prob`, which this request "
                                           "did not ask for)")};
  return s;
}

std::string lowercase(std::string h) {
  for (auto& ch : h) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return h;
}

// Every name of this machine is one host.
bool loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.starts_with("127.");
}

}  // namespace

std::optional<double> busy_slots_between(const decode_counters& before, const decode_counters& after) {
  if (after.decodes <= before.decodes) return std::nullopt;
  return (after.busy_slots_per_decode * after.decodes - before.busy_slots_per_decode * before.decodes) /
         (after.decodes - before.decodes);
}

bool on_this_host(const backend_config& c) {
  if (c.local) return true;
  auto ep = parse_endpoint(c.url);
  return ep && loopback(lowercase(ep->host));
}

std::string host_turn(const backend_config& c) {
  if (!c.host.empty()) return "group:" + c.host;
  auto ep = parse_endpoint(c.url);
  if (!ep) return "url:" + c.url;
  const std::string h = lowercase(ep->host);
  if (loopback(h)) return "host:loopback";  // its servers share these cores
  return "host:" + h;
}

expected<named_backend, std::string> parse_named_backend(std::string_view arg) {
  const auto scheme = arg.find("://");
  const auto eq = arg.find('=');
  named_backend b;
  if (eq != std::string_view::npos && (scheme == std::string_view::npos || eq < scheme)) {
    b.name = std::string(arg.substr(0, eq));
    b.url = std::string(arg.substr(eq + 1));
    if (b.name.empty()) return unexpected{"'" + std::string(arg) + "' has an empty name (NAME=URL)"};
  } else if (scheme != std::string_view::npos) {
    b.url = std::string(arg);
  } else {
    b.name = std::string(arg);
    if (b.name.empty()) return unexpected{std::string("a backend needs a NAME, NAME=URL or URL")};
    return b;
  }
  auto ep = parse_endpoint(b.url);
  if (!ep) return unexpected{"'" + b.url + "' " + ep.error()};
  if (b.name.empty()) b.name = ep->host + ":" + ep->port;
  return b;
}

backend::backend(net::any_io_executor ex, backend_config config)
    : config_(std::move(config)), http_(std::move(ex), must_parse(config_.url), config_.http) {}

prepared_completion backend::prepare(const completion_request& r) const {
  auto p = config_.api->prepare(http_, r, config_.options);
  p.logprobs_expected = r.n_probs > 0 && !r.post_sampling_probs;
  return p;
}

net::awaitable<client_result<audit::logit_stream>> backend::complete_on(connection c, prepared_completion p,
                                                                        std::size_t sent, std::int64_t sent_ns) {
  std::unique_ptr<stream_reader> reader = p.stream ? config_.api->read_stream(http_.options().max_body) : nullptr;
  if (!reader) {
    chunk_sink none;  // named: GCC 12 mis-builds a temporary in a co_await's arguments
    auto x = co_await http_.exchange(std::move(c), std::move(p.wire), std::move(none), sent, sent_ns);
    if (!x) co_return unexpected{x.error()};
    // One pass reads the stream and how its numbers are written.
    audit::number_format seen;
    auto s = with_logprobs(config_.api->parse(x->body, seen), p.logprobs_expected);
    if (s) {
      stamp(*s, *x);
      written_.merge(seen);
    }
    co_return s;
  }
  chunk_sink sink = [r = reader.get(), on_tokens = std::move(p.on_tokens)](std::string_view piece, std::int64_t t) {
    const bool ok = r->feed(piece, t);
    if (on_tokens) on_tokens(r->tokens());
    return ok;
  };
  auto x = co_await http_.exchange(std::move(c), std::move(p.wire), std::move(sink), sent, sent_ns);
  if (!x) co_return unexpected{x.error()};
  auto s = with_logprobs(reader->finish(), p.logprobs_expected);
  if (s) {
    stamp(*s, *x);
    written_.merge(reader->written());
  }
  co_return s;
}

net::awaitable<client_result<audit::logit_stream>> backend::complete(completion_request r) {
  auto c = co_await http_.acquire();
  if (!c) co_return unexpected{c.error()};
  co_return co_await complete_on(std::move(*c), prepare(r));
}

net::awaitable<client_result<bool>> backend::health() {
  auto x = co_await http_.request(http::verb::get, config_.api->health_target());
  if (!x) co_return unexpected{x.error()};
  co_return true;
}

net::awaitable<client_result<audit::backend_fingerprint>> backend::fingerprint(std::vector<std::string> prompts) {
  auto f = co_await config_.api->fingerprint(http_, std::move(prompts), config_.options);
  if (!f) co_return f;
  if (!config_.model_path.empty()) f->model_sha256 = co_await model_file_sha256(config_.model_path);
  // The machine, read now: the server's own words (its kind's fingerprint) first, this host
  // where it runs here, what the daemon knows of a server it started, then the declared labels.
  if (on_this_host(config_)) {
    for (auto& [k, v] : host_machine()) f->machine.emplace(k, v);
    // The process behind the port: the ggml backends it loaded and its program (no flag, no log).
    if (auto ep = parse_endpoint(config_.url); ep && !ep->port.empty()) {
      auto seen = listening_server(static_cast<std::uint16_t>(std::stoul(ep->port)));
      if (!seen.image.empty())
        if (auto sha = co_await model_file_sha256(seen.image); !sha.empty()) seen.facts["server_executable_sha256"] = sha;
      // The sha256 of the model file its command line names, where no configured path gave one:
      // observed (an advice for that file is found by it, daemon/stored_advice.hpp), not part
      // of the server's identity, which stays what its configuration declares.
      if (auto m = seen.facts.find("server_model"); f->model_sha256.empty() && m != seen.facts.end())
        if (auto sha = co_await model_file_sha256(m->second); !sha.empty()) f->observed["model_file_sha256"] = sha;
      for (auto& [k, v] : seen.facts) f->machine.emplace(k, v);
    }
  }
  if (config_.server_machine)
    for (auto& [k, v] : config_.server_machine()) f->machine[k] = v;
  for (const auto& [k, v] : config_.machine) f->machine[k] = one_line(v);
  if (auto c = co_await canary()) {
    f->canary_logit_digest = c->logit_digest;
    f->canary_token_digest = c->token_digest;
    if (c->company) f->observed["canary_company"] = audit::fixed(*c->company, 2);
  }
  for (const auto& [k, v] : written_.facts()) f->observed[k] = v;
  f->observed["measurement_thread"] = this_thread_scheduling();  // the thread that times this audit
  co_return f;
}

net::awaitable<client_result<backend::canary_reading>> backend::canary() {
  completion_request r;
  r.prompt = audit::canary_prompt;
  r.n_predict = audit::canary_n_predict;
  r.temperature = 0;
  r.cache_prompt = false;
  r.n_probs = 5;
  const auto before = co_await read_decode_counters();
  auto s = co_await complete(r);
  if (!s) co_return unexpected{s.error()};
  canary_reading c;
  if (before)
    if (auto after = co_await read_decode_counters()) c.company = busy_slots_between(*before, *after);
  const auto d = audit::digest(*s);
  c.logit_digest = d.logit.hex();
  c.token_digest = d.token.hex();
  co_return c;
}

net::awaitable<std::optional<decode_counters>> backend::read_decode_counters() {
  if (no_counters_) co_return std::nullopt;
  auto r = co_await config_.api->read_decode_counters(http_);
  // Latched only while the server never served them: once it has, a 404 or a page without them
  // (a proxy in front of a restarting server) is a read that failed this time.
  if (r.counters) served_counters_ = true;
  no_counters_ = r.none_served && !served_counters_;
  co_return r.counters;
}

}  // namespace logitaudit::clients
