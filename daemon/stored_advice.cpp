#include "stored_advice.hpp"

#include <algorithm>

#include "audit/certify.hpp"
#include "audit/frontier.hpp"
#include "clients/managed_servers.hpp"

namespace logitaudit::daemon {

std::string advice_tag(const std::string& model_sha256) { return "advise-model:" + model_sha256.substr(0, 16); }

namespace {

// "llama-server -m FILE -np 4 -t 2 -c 4096 -fa off --no-kv-unified ...": what the certified
// server ran, from its spec's settings and what it said of itself.
std::string command_of(const audit::server_settings& s, const audit::backend_fingerprint& fp) {
  std::string out = "llama-server -m " + fp.model + " -np " + std::to_string(s.parallel) + " -t " + std::to_string(s.threads);
  if (fp.n_ctx > 0) out += " -c " + std::to_string(fp.n_ctx * std::max<std::int64_t>(1, fp.total_slots));
  for (const auto& a : clients::server_arguments(s)) out += " " + a;
  return out;
}

// The configuration's cost in the newest advise sweep before the certify job: 1 - its tokens/s
// over the fastest configuration's; -1 when no sweep row is found.
double cost_of(storage::store& s, const std::string& tag, std::int64_t before, const std::string& configuration) {
  storage::job_query q;
  q.status = audit::job_status::done;
  q.tag = tag;
  q.before = before;
  q.limit = 20;
  for (const auto& j : s.jobs().page(q)) {
    if (!j.spec || !j.spec->sweep || !j.findings) continue;
    double fastest = 0, mine = -1;
    for (const auto& r : audit::section<audit::frontier_section>(*j.findings).rows) {
      if (!r.tokens_per_s) continue;
      fastest = std::max(fastest, *r.tokens_per_s);
      if (r.backend == configuration) mine = *r.tokens_per_s;
    }
    if (mine > 0 && fastest > 0) return 1 - mine / fastest;
  }
  return -1;
}

}  // namespace

std::optional<audit::stored_advice> stored_advice_for(storage::store& s, const std::string& model_sha256,
                                                      const std::string& build_info) {
  if (model_sha256.size() < 16 || build_info.empty()) return std::nullopt;
  storage::job_query q;
  q.status = audit::job_status::done;
  q.tag = advice_tag(model_sha256);
  q.limit = 50;
  for (const auto& j : s.jobs().page(q)) {
    if (!j.spec || !j.spec->certify || j.spec->backends.size() != 1 || !j.spec->backends[0].managed || !j.findings) continue;
    const auto* cert = j.findings->sections.find<audit::certificate>();
    if (!cert || cert->outcome != audit::certificate_outcome::certified) continue;
    const auto fps = s.evidence().fingerprints(j.id);
    const auto fp = fps.find(cert->backend);
    // The build must be the same; the file may be another quantisation the advice was given.
    if (fp == fps.end() || fp->second.before.build_info != build_info) continue;
    return audit::stored_advice{j.id, cert->claim, cert->backend, command_of(*j.spec->backends[0].managed, fp->second.before),
                                cost_of(s, q.tag, j.id, cert->backend)};
  }
  return std::nullopt;
}

}  // namespace logitaudit::daemon
