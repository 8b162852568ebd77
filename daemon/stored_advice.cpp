// The advice a database holds for a model file, build and host: its certified certify job,
// found by the model file's tag, and its cost in the advise job that made it.
#include "stored_advice.hpp"

#include <algorithm>
#include <charconv>
#include <functional>

#include "audit/advice.hpp"
#include "audit/certify.hpp"
#include "audit/frontier.hpp"
#include "clients/managed_servers.hpp"

namespace logitaudit::daemon {

std::string advice_tag(const std::string& model_sha256) { return "advise-model:" + model_sha256.substr(0, 16); }

namespace {
constexpr std::string_view kAdviceOf = "advice-of:";
}  // namespace

std::string advice_of_tag(std::int64_t advise_job) { return std::string(kAdviceOf) + std::to_string(advise_job); }

std::optional<std::int64_t> advice_of(const std::vector<std::string>& tags) {
  for (const auto& t : tags) {
    if (!t.starts_with(kAdviceOf)) continue;
    std::int64_t id = 0;
    const auto [end, ec] = std::from_chars(t.data() + kAdviceOf.size(), t.data() + t.size(), id);
    if (ec == std::errc{} && end == t.data() + t.size() && id > 0) return id;
  }
  return std::nullopt;
}

namespace {

// Every ended job carrying `tag` with an id below `before` (0: any), newest first, until `visit`
// says it is done.
void each_tagged(storage::store& s, const std::string& tag, std::int64_t before,
                 const std::function<bool(const storage::job_record&)>& visit) {
  storage::job_query q;
  q.status = audit::job_status::done;
  q.tag = tag;
  q.before = before;
  q.limit = 50;
  for (auto page = s.jobs().page(q); !page.empty(); page = s.jobs().page(q)) {
    for (const auto& j : page)
      if (visit(j)) return;
    q.before = page.back().id;
  }
}

// The configuration's cost in the advice that made the certify job `j` (its advise job, named by
// its "advice-of:ID" tag): 1 - its ranking figure over the best configuration's. A certify job
// of an advice made before advise jobs: its newest advise sweep's tokens/s. -1: neither found.
double cost_of(storage::store& s, const storage::job_record& certify, const std::string& tag, const std::string& configuration) {
  if (const auto id = advice_of(certify.tags)) {
    const auto parent = s.jobs().get(*id);
    const auto* advice = parent && parent->findings ? parent->findings->sections.find<audit::advice_section>() : nullptr;
    if (advice)
      for (const auto& r : advice->rows)
        if (r.certify_audit == certify.id) return r.cost;
    return -1;
  }
  const std::int64_t before = certify.id;
  double cost = -1;
  each_tagged(s, tag, before, [&](const storage::job_record& j) {
    if (!j.spec || !j.spec->sweep || !j.findings) return false;
    double fastest = 0, mine = -1;
    for (const auto& r : audit::section<audit::frontier_section>(*j.findings).rows) {
      if (!r.tokens_per_s) continue;
      fastest = std::max(fastest, *r.tokens_per_s);
      if (r.backend == configuration) mine = *r.tokens_per_s;
    }
    if (mine > 0 && fastest > 0) cost = 1 - mine / fastest;
    return cost >= 0;
  });
  return cost;
}

// The same host as far as the fingerprints tell: its CPU model and the ggml CPU variant loaded.
bool same_host(const audit::backend_fingerprint& a, const audit::backend_fingerprint& b) {
  for (const char* k : {"cpu_model", "ggml_cpu_variant"}) {
    auto x = a.machine.find(k), y = b.machine.find(k);
    if ((x == a.machine.end()) != (y == b.machine.end()) || (x != a.machine.end() && x->second != y->second)) return false;
  }
  return true;
}

}  // namespace

std::optional<audit::stored_advice> stored_advice_for(storage::store& s, const std::string& model_sha256,
                                                      const audit::backend_fingerprint& server) {
  if (model_sha256.size() < 16 || server.build_info.empty()) return std::nullopt;
  std::optional<audit::stored_advice> out;
  const auto tag = advice_tag(model_sha256);
  each_tagged(s, tag, 0, [&](const storage::job_record& j) {
    if (!j.spec || !j.spec->certify || j.spec->backends.size() != 1 || !j.spec->backends[0].managed || !j.findings) return false;
    const auto* cert = j.findings->sections.find<audit::certificate>();
    if (!cert || cert->outcome != audit::certificate_outcome::certified) return false;
    const auto fps = s.evidence().fingerprints(j.id);
    const auto fp = fps.find(cert->backend);
    // The build and the host must be the same; the file may be another quantisation the advice was given.
    if (fp == fps.end() || fp->second.before.build_info != server.build_info || !same_host(fp->second.before, server)) return false;
    // The context a slot had: the certify job's shape (a managed server's -c is it times -np).
    const int ctx = j.spec->certify->n_ctx > 0 ? j.spec->certify->n_ctx : 1024;
    out = audit::stored_advice{j.id, cert->claim, cert->backend,
                               clients::server_command(*j.spec->backends[0].managed, fp->second.before.model, ctx),
                               cost_of(s, j, tag, cert->backend)};
    return true;
  });
  return out;
}

}  // namespace logitaudit::daemon
