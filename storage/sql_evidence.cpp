// The evidence repository over SQL (repositories.hpp): groups, runs with their streams and verdicts,
// bursts, fingerprints and selftests.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "audit/stream_encoding.hpp"
#include "documents.hpp"
#include "stream_documents.hpp"
#include "sql_rows.hpp"

namespace logitaudit::storage {
namespace {

using json = nlohmann::json;
using namespace sql_rows;

constexpr const char* kRunColumns =
    "r.id, r.group_index, r.request_index, r.backend, r.condition, r.replicate, r.prompt, r.temperature, r.seed, "
    "r.cache_prompt, r.id_slot, r.compared, r.baseline_group, r.status, r.error, r.write_ns, r.first_byte_ns, "
    "r.last_byte_ns, s.token_digest, s.logit_digest, s.token_count, s.stop_reason, s.prompt_tokens, s.cached_tokens, "
    "s.slot, s.prompt_n, s.prompt_ms, s.predicted_n, s.predicted_ms, s.cache_n, v.run_id, v.logit_identical, "
    "v.token_identical, v.first_logit_difference, v.first_token_difference, v.max_abs_delta, v.mean_abs_delta, "
    "v.max_ulp, v.margin_at_flip, v.flag, v.flag_reason, r.company, s.token_texts, v.first_text_difference, "
    "s.token_times, s.decode_steps, v.width_at_difference, v.width_before_difference, v.events_before_difference";
constexpr int kRunColumnCount = 49;
constexpr const char* kRunJoins =
    " FROM runs r LEFT JOIN streams s ON s.run_id = r.id LEFT JOIN verdicts v ON v.run_id = r.id ";

run_record read_run(sql_statement& s) {
  run_record r;
  r.id = s.integer(0);
  r.group = static_cast<std::size_t>(s.integer(1));
  r.request = static_cast<std::size_t>(s.integer(2));
  r.backend = s.text(3);
  r.condition = s.text(4);
  r.replicate = static_cast<int>(s.integer(5));
  r.prompt = s.text(6);
  r.temperature = s.real(7);
  if (!s.is_null(8)) r.seed = s.integer(8);
  r.cache_prompt = s.integer(9) != 0;
  if (!s.is_null(10)) r.id_slot = s.integer(10);
  r.compared = s.integer(11) != 0;
  if (!s.is_null(12)) r.baseline_group = s.integer(12);
  r.ok = s.text(13) == "ok";
  r.error = s.text(14);
  r.write_ns = s.integer(15);
  r.first_byte_ns = s.integer(16);
  r.last_byte_ns = s.integer(17);
  if (!s.is_null(18)) {
    auto token = digest_of(s.blob(18)), logit = digest_of(s.blob(19));
    if (token && logit) r.digests = audit::stream_digests{*token, *logit};
    r.token_count = s.integer(20);
    r.stop_reason = s.text(21);
    r.prompt_tokens = s.integer(22);
    r.cached_tokens = s.integer(23);
    r.slot = s.integer(24);
    r.server.prompt_n = s.integer(25);
    r.server.prompt_ms = s.real(26);
    r.server.predicted_n = s.integer(27);
    r.server.predicted_ms = s.real(28);
    r.server.cache_n = s.integer(29);
  }
  if (!s.is_null(30)) {
    verdict_record v;
    v.logit_identical = s.integer(31) != 0;
    v.token_identical = s.integer(32) != 0;
    v.first_logit_difference = static_cast<int>(s.integer(33));
    v.first_token_difference = static_cast<int>(s.integer(34));
    v.max_abs_delta = s.real(35);
    v.mean_abs_delta = s.real(36);
    v.max_ulp = static_cast<std::uint64_t>(s.integer(37));
    if (!s.is_null(38)) v.margin_at_flip = s.real(38);
    v.flag = audit::parse_evidence_flag(s.text(39)).value_or(audit::evidence_flag::none);
    v.flag_reason = s.text(40);
    v.first_text_difference = static_cast<int>(s.integer(43));
    if (!s.is_null(46)) v.width_at_difference = static_cast<int>(s.integer(46));
    if (!s.is_null(47)) v.width_before_difference = static_cast<int>(s.integer(47));
    v.events_before_difference = s.text(48);
    r.verdict = v;
  }
  if (!s.is_null(41)) r.company = s.real(41);
  if (!s.is_null(42)) r.token_texts = s.text(42);
  if (!s.is_null(44)) r.token_times = s.text(44);
  if (!s.is_null(45)) r.decode_steps = decode_steps(s.text(45));
  return r;
}

// The stream as the runner saw it: decoded bytes plus what the row keeps beside them.
std::optional<audit::logit_stream> stream_of(const run_record& r, const std::vector<std::uint8_t>& encoding, std::string content) {
  auto st = audit::decode_canonical(encoding);
  if (!st) return std::nullopt;
  st->content = std::move(content);
  st->stop_reason = r.stop_reason;
  st->prompt_tokens = r.prompt_tokens;
  st->cached_tokens = r.cached_tokens;
  st->slot = r.slot;
  st->server = r.server;
  set_token_texts(*st, r.token_texts);
  st->client.write_ns = r.write_ns;
  st->client.first_byte_ns = r.first_byte_ns;
  st->client.last_byte_ns = r.last_byte_ns;
  set_token_times(*st, r.token_times);
  return st;
}

audit::backend_fingerprint read_fingerprint(sql_statement& s, int at) {
  audit::backend_fingerprint f;
  f.api = s.text(at);
  f.build_info = s.text(at + 1);
  f.model = s.text(at + 2);
  f.model_ftype = s.text(at + 3);
  f.total_slots = s.integer(at + 4);
  f.n_ctx = s.integer(at + 5);
  f.chat_template_hash = s.text(at + 6);
  f.generation_settings_hash = s.text(at + 7);
  f.prompt_token_hashes = hashes_of(s.text(at + 8));
  f.model_meta = hashes_of(s.text(at + 9));
  f.model_sha256 = s.text(at + 10);
  f.canary_logit_digest = s.text(at + 11);
  f.canary_token_digest = s.text(at + 12);
  f.machine = hashes_of(s.text(at + 13));
  f.observed = hashes_of(s.text(at + 14));
  return f;
}

class sql_evidence final : public evidence_repository {
 public:
  sql_evidence(sql_connection& db, write_fence fence) : db_(db), fence_(std::move(fence)) {}

  void record_groups(std::int64_t job, const std::vector<group_write>& groups) override {
    transaction t(db_);
    fence_(job);
    // Every table's rows of the whole batch in a few multi-row INSERTs: a database server
    // across a network (or a slow loopback) costs a round trip per statement, not per row.
    insert_groups(job, groups);
    insert_bursts(job, groups);
    std::vector<run_ref> runs;
    std::int64_t failed = 0;
    for (const auto& gw : groups)
      for (const auto& r : gw.runs) {
        runs.push_back({&gw, &r});
        failed += !r.stream;
      }
    insert_streams(groups, runs, insert_runs(job, runs));
    auto& progress =
        db_.prepare("UPDATE jobs SET done_requests = done_requests + ?2, failed_requests = failed_requests + ?3 WHERE id = ?1");
    progress.bind(1, job).bind(2, static_cast<std::int64_t>(runs.size())).bind(3, failed);
    progress.run();
    t.commit();
  }

 private:
  struct run_ref {
    const group_write* gw;
    const audit::observed_run* run;
  };
  using run_id_map = std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t>;  // (group, request) -> id

  void insert_groups(std::int64_t job, const std::vector<group_write>& groups) {
    const std::string at = now_utc();
    insert_rows(db_,
                "INSERT INTO groups (job_id, group_index, backend, condition, replicate, mode, attempts, stored_at, load_level)", 9,
                groups.size(), [&](sql_statement& s, int p, std::size_t i) {
                  const auto& g = *groups[i].group;
                  s.bind(p, job).bind(p + 1, g.index).bind(p + 2, g.backend).bind(p + 3, g.condition).bind(p + 4, g.replicate);
                  // A load level's requests are concurrent: stored as a burst group, its figures beside it.
                  s.bind(p + 5, g.mode == audit::group_mode::serial ? "serial" : "burst").bind(p + 6, groups[i].attempts);
                  s.bind(p + 7, at).bind(p + 8, groups[i].load ? encode_load_measurement(*groups[i].load) : std::string());
                });
  }

  void insert_bursts(std::int64_t job, const std::vector<group_write>& groups) {
    std::vector<const group_write*> with_burst;
    for (const auto& gw : groups)
      if (gw.burst) with_burst.push_back(&gw);
    insert_rows(db_,
                "INSERT INTO bursts (job_id, group_index, launch_spread_ns, wall_ns, overlap, busy_slots_per_decode, warnings, "
                "width, server_slots, timed_concurrency, write_mode, streamed)",
                12, with_burst.size(), [&](sql_statement& s, int p, std::size_t i) {
                  const auto& b = *with_burst[i]->burst;
                  std::string warnings;
                  for (const auto& w : b.warnings) warnings += w + "\n";
                  s.bind(p, job).bind(p + 1, with_burst[i]->group->index).bind(p + 2, b.launch_spread_ns).bind(p + 3, b.wall_ns);
                  s.bind(p + 4, b.overlap).bind(p + 5, b.busy_slots_per_decode).bind(p + 6, warnings).bind(p + 7, b.width);
                  s.bind(p + 8, b.server_slots).bind(p + 9, b.timed_concurrency).bind(p + 10, b.write_mode).bind(p + 11, b.streamed);
                });
  }

  run_id_map insert_runs(std::int64_t job, const std::vector<run_ref>& runs) {
    run_id_map run_ids;
    insert_rows(
        db_,
        "INSERT INTO runs (job_id, group_index, request_index, backend, condition, replicate, prompt, temperature, seed, "
        "cache_prompt, id_slot, compared, baseline_group, status, error, write_ns, first_byte_ns, last_byte_ns, company)",
        19, runs.size(),
        [&](sql_statement& s, int p, std::size_t i) {
          const auto& gw = *runs[i].gw;
          const auto& g = *gw.group;
          const auto& r = *runs[i].run;
          const auto& req = g.requests.at(r.request);
          std::optional<std::int64_t> baseline_group;
          if (req.compared && req.baseline >= 0)
            baseline_group = static_cast<std::int64_t>(gw.plan->baselines.at(static_cast<std::size_t>(req.baseline)).group);
          s.bind(p, job).bind(p + 1, g.index).bind(p + 2, r.request).bind(p + 3, g.backend).bind(p + 4, g.condition);
          s.bind(p + 5, g.replicate).bind(p + 6, req.prompt).bind(p + 7, req.params.temperature);
          s.bind(p + 8, req.params.seed ? std::optional<std::int64_t>(static_cast<std::int64_t>(*req.params.seed)) : std::nullopt);
          s.bind(p + 9, req.cache_prompt).bind(p + 10, req.id_slot ? std::optional<std::int64_t>(*req.id_slot) : std::nullopt);
          s.bind(p + 11, req.compared).bind(p + 12, baseline_group).bind(p + 13, r.stream ? "ok" : "failed").bind(p + 14, r.error);
          s.bind(p + 15, r.stream ? r.stream->client.write_ns : 0).bind(p + 16, r.stream ? r.stream->client.first_byte_ns : 0);
          s.bind(p + 17, r.stream ? r.stream->client.last_byte_ns : 0).bind(p + 18, r.company);
        },
        " RETURNING group_index, request_index, id",
        [&](sql_statement& s) { run_ids[{s.integer(0), s.integer(1)}] = s.integer(2); });
    return run_ids;
  }

  void insert_streams(const std::vector<group_write>& groups, const std::vector<run_ref>& runs, const run_id_map& run_ids) {
    // A burst's decode steps, reconstructed from its members' token times (audit/decode_steps).
    std::map<const audit::observed_run*, std::string> steps;
    for (const auto& gw : groups) {
      if (gw.group->mode != audit::group_mode::burst) continue;
      std::vector<const audit::logit_stream*> members;
      for (const auto& r : gw.runs) members.push_back(r.stream ? &*r.stream : nullptr);
      const auto rec = audit::reconstruct_steps(members, gw.burst ? gw.burst->server_slots : -1);
      for (std::size_t i = 0; i < gw.runs.size(); ++i) steps[&gw.runs[i]] = encode_steps(audit::steps_of(rec, i));
    }
    std::vector<run_ref> ok;
    for (const auto& r : runs)
      if (r.run->stream) ok.push_back(r);
    insert_rows(db_,
                "INSERT INTO streams (run_id, token_digest, logit_digest, token_count, encoding, content, stop_reason, "
                "prompt_tokens, cached_tokens, slot, prompt_ms, predicted_ms, cache_n, prompt_n, predicted_n, token_texts, "
                "token_times, decode_steps)",
                18, ok.size(), [&](sql_statement& s, int p, std::size_t i) {
                  const auto& st = *ok[i].run->stream;
                  const auto enc = audit::encode_canonical(st);
                  const auto d = audit::digest(st);
                  const auto id = run_ids.at({static_cast<std::int64_t>(ok[i].gw->group->index),
                                              static_cast<std::int64_t>(ok[i].run->request)});
                  s.bind(p, id).bind_blob(p + 1, d.token.bytes).bind_blob(p + 2, d.logit.bytes).bind(p + 3, st.tokens.size());
                  s.bind_blob(p + 4, enc).bind(p + 5, st.content).bind(p + 6, st.stop_reason).bind(p + 7, st.prompt_tokens);
                  s.bind(p + 8, st.cached_tokens).bind(p + 9, st.slot).bind(p + 10, st.server.prompt_ms);
                  s.bind(p + 11, st.server.predicted_ms).bind(p + 12, st.server.cache_n).bind(p + 13, st.server.prompt_n);
                  s.bind(p + 14, st.server.predicted_n).bind(p + 15, encode_token_texts(st));
                  const auto step = steps.find(ok[i].run);
                  s.bind(p + 16, encode_token_times(st)).bind(p + 17, step == steps.end() ? std::string() : step->second);
                });
  }

 public:

  void record_fingerprint(std::int64_t job, const std::string& backend, audit::fingerprint_phase phase,
                          const audit::backend_fingerprint& f, const std::string& taken_at) override {
    transaction t(db_);
    fence_(job);
    // A resumed job keeps the fingerprint taken when it first began; the end is the last one.
    auto& s = db_.prepare(std::string(
                              "INSERT INTO fingerprints (job_id, backend, phase, api, build_info, model, model_ftype, total_slots, "
                              "n_ctx, chat_template_hash, generation_settings_hash, prompt_token_hashes, model_meta, "
                              "model_sha256, canary_logit_digest, canary_token_digest, taken_at, machine, observed) "
                              "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT ") +
                          (phase == audit::fingerprint_phase::before
                               ? "DO NOTHING"
                               : "(job_id, backend, phase) DO UPDATE SET api = excluded.api, build_info = excluded.build_info, "
                                 "model = excluded.model, model_ftype = excluded.model_ftype, total_slots = excluded.total_slots, "
                                 "n_ctx = excluded.n_ctx, chat_template_hash = excluded.chat_template_hash, "
                                 "generation_settings_hash = excluded.generation_settings_hash, "
                                 "prompt_token_hashes = excluded.prompt_token_hashes, model_meta = excluded.model_meta, "
                                 "model_sha256 = excluded.model_sha256, canary_logit_digest = excluded.canary_logit_digest, "
                                 "canary_token_digest = excluded.canary_token_digest, taken_at = excluded.taken_at, "
                                 "machine = excluded.machine, observed = excluded.observed"));
    s.bind(1, job).bind(2, backend).bind(3, audit::to_string(phase)).bind(4, f.api).bind(5, f.build_info).bind(6, f.model);
    s.bind(7, f.model_ftype).bind(8, f.total_slots).bind(9, f.n_ctx).bind(10, f.chat_template_hash);
    s.bind(11, f.generation_settings_hash).bind(12, hashes_text(f.prompt_token_hashes)).bind(13, hashes_text(f.model_meta));
    s.bind(14, f.model_sha256).bind(15, f.canary_logit_digest).bind(16, f.canary_token_digest).bind(17, taken_at);
    s.bind(18, hashes_text(f.machine)).bind(19, hashes_text(f.observed));
    s.run();
    t.commit();
  }

  std::set<std::size_t> stored_groups(std::int64_t job) override {
    auto& s = db_.prepare("SELECT group_index FROM groups WHERE job_id = ?");
    s.bind(1, job);
    std::set<std::size_t> out;
    while (s.step()) out.insert(static_cast<std::size_t>(s.integer(0)));
    s.reset();
    return out;
  }

  std::vector<run_record> runs(std::int64_t job, const run_filter& filter) override {
    auto& s = db_.prepare(std::string("SELECT ") + kRunColumns + kRunJoins +
                          "WHERE r.job_id = ?1 AND (?2 = '' OR r.condition = ?2) AND (?3 = '' OR r.backend = ?3) "
                          "ORDER BY r.group_index, r.request_index");
    s.bind(1, job).bind(2, filter.condition).bind(3, filter.backend);
    std::vector<run_record> out;
    while (s.step()) out.push_back(read_run(s));
    s.reset();
    return out;
  }

  std::optional<run_record> run(std::int64_t job, std::int64_t run) override {
    auto& s = db_.prepare(std::string("SELECT ") + kRunColumns + kRunJoins + "WHERE r.id = ?2 AND r.job_id = ?1");
    s.bind(1, job).bind(2, run);
    std::optional<run_record> out;
    if (s.step()) out = read_run(s);
    s.reset();
    return out;
  }

  std::optional<stream_record> stream(std::int64_t job, std::int64_t run) override {
    auto& s = db_.prepare(std::string("SELECT ") + kRunColumns + ", s.encoding, s.content, s.pruned_at" + kRunJoins +
                          "WHERE r.id = ?2 AND r.job_id = ?1");
    s.bind(1, job).bind(2, run);
    std::optional<stream_record> out;
    if (s.step()) {
      stream_record rec;
      rec.run = read_run(s);
      rec.pruned_at = s.text(kRunColumnCount + 2);
      if (rec.run.ok && rec.pruned_at.empty())
        if (auto st = stream_of(rec.run, s.blob(kRunColumnCount), s.text(kRunColumnCount + 1))) rec.stream = std::move(*st);
      out = std::move(rec);
    }
    s.reset();
    return out;
  }

  std::vector<audit::observed_run> observations(std::int64_t job) override {
    std::vector<audit::observed_run> out;
    for (auto& [r, stream] : decoded_runs(job, "")) {
      audit::observed_run o{r.group, r.request, std::move(stream), r.error, r.company};
      if (r.ok && !o.stream) o.error = "the stored encoding does not decode";
      out.push_back(std::move(o));
    }
    return out;
  }

  std::map<std::size_t, audit::load_measurement> load_levels(std::int64_t job) override {
    auto& s = db_.prepare("SELECT group_index, load_level FROM groups WHERE job_id = ? AND load_level <> '' ORDER BY group_index");
    s.bind(1, job);
    std::map<std::size_t, audit::load_measurement> out;
    while (s.step())
      if (auto m = decode_load_measurement(s.text(1))) out[static_cast<std::size_t>(s.integer(0))] = std::move(*m);
    s.reset();
    return out;
  }

  std::vector<burst_record> bursts(std::int64_t job) override {
    auto& s = db_.prepare(
        "SELECT b.group_index, g.backend, g.condition, g.replicate, b.width, b.server_slots, b.launch_spread_ns, "
        "b.wall_ns, b.overlap, b.busy_slots_per_decode, b.timed_concurrency, b.warnings, b.batched, b.expected, "
        "b.needed, b.measured, b.measured_by, b.needed_overlap, b.verdict_reason, b.foreign_load, b.write_mode, b.streamed "
        "FROM bursts b JOIN groups g ON g.job_id = b.job_id AND g.group_index = b.group_index "
        "WHERE b.job_id = ? ORDER BY b.group_index");
    s.bind(1, job);
    std::vector<burst_record> out;
    while (s.step()) {
      burst_record b;
      b.group = static_cast<std::size_t>(s.integer(0));
      b.backend = s.text(1);
      b.condition = s.text(2);
      b.replicate = static_cast<int>(s.integer(3));
      auto& m = b.measurement;
      m.width = static_cast<int>(s.integer(4));
      m.server_slots = s.integer(5);
      m.launch_spread_ns = s.integer(6);
      m.wall_ns = s.integer(7);
      m.overlap = s.real(8);
      if (!s.is_null(9)) m.busy_slots_per_decode = s.real(9);
      if (!s.is_null(10)) m.timed_concurrency = s.real(10);
      const std::string warnings = s.text(11);
      for (std::size_t i = 0; i < warnings.size();) {
        auto nl = warnings.find('\n', i);
        if (nl == std::string::npos) nl = warnings.size();
        if (nl > i) m.warnings.push_back(warnings.substr(i, nl - i));
        i = nl + 1;
      }
      m.write_mode = s.text(20);
      m.streamed = s.integer(21) != 0;
      if (!s.is_null(12)) {
        audit::burst_verdict v;
        v.batched = s.integer(12) != 0;
        v.expected = s.real(13);
        v.needed = s.real(14);
        if (!s.is_null(15)) v.measured = s.real(15);
        v.measured_by = audit::parse_concurrency_measure(s.text(16)).value_or(audit::concurrency_measure::none);
        v.needed_overlap = s.real(17);
        v.reason = s.text(18);
        v.foreign_load = s.text(19);
        b.verdict = v;
      }
      out.push_back(std::move(b));
    }
    s.reset();
    return out;
  }

  std::vector<fingerprint_record> fingerprint_records(std::int64_t job) override {
    auto& s = db_.prepare(
        "SELECT backend, phase, api, build_info, model, model_ftype, total_slots, n_ctx, chat_template_hash, "
        "generation_settings_hash, prompt_token_hashes, model_meta, model_sha256, canary_logit_digest, "
        "canary_token_digest, machine, observed, taken_at FROM fingerprints WHERE job_id = ? ORDER BY backend, phase DESC");
    s.bind(1, job);
    std::vector<fingerprint_record> out;
    while (s.step())
      out.push_back({s.text(0), audit::parse_fingerprint_phase(s.text(1)).value_or(audit::fingerprint_phase::before),
                     read_fingerprint(s, 2), s.text(17)});
    s.reset();
    return out;
  }

  std::map<std::string, audit::backend_fingerprints> fingerprints(std::int64_t job) override {
    std::map<std::string, audit::backend_fingerprints> out;
    for (auto& r : fingerprint_records(job))
      (r.phase == audit::fingerprint_phase::before ? out[r.backend].before : out[r.backend].after) = std::move(r.fingerprint);
    return out;
  }

  std::vector<audit::baseline_stream> baselines(std::int64_t job) override {
    std::vector<audit::baseline_stream> out;
    for (auto& [r, stream] : decoded_runs(job, audit::kBaselineCondition))
      if (stream) out.push_back({{r.backend, r.prompt, r.temperature, r.seed}, std::move(*stream), r.company});
    return out;
  }

  std::vector<selftest_record> read_selftests(const std::string& where, const std::string& a, const std::string* b, int limit) {
    auto& s = db_.prepare(
        "SELECT id, backend, url, api, taken_at, caught, faults, equivalents_flagged, equivalents, summary, cases "
        "FROM selftests " + where + " ORDER BY id DESC LIMIT " + std::to_string(std::max(1, limit)));
    s.bind(1, a);
    if (b) s.bind(2, *b);
    std::vector<selftest_record> out;
    while (s.step()) {
      selftest_record r;
      r.id = s.integer(0);
      r.backend = s.text(1);
      r.url = s.text(2);
      r.api = s.text(3);
      r.taken_at = s.text(4);
      r.power.caught = static_cast<int>(s.integer(5));
      r.power.faults = static_cast<int>(s.integer(6));
      r.power.equivalents_flagged = static_cast<int>(s.integer(7));
      r.power.equivalents = static_cast<int>(s.integer(8));
      auto cases = nlohmann::json::parse(s.text(10), nullptr, false);
      std::vector<std::string> paths;
      if (cases.is_array())
        for (const auto& j : cases) {
          audit::fault_case c;
          c.path = j.value("path", "");
          c.fault = audit::parse_fault_kind(j.value("fault", "")).value_or(audit::fault_kind::logprob_ulp);
          c.position = j.value("position", -1);
          c.applicable = j.value("applicable", true);
          c.caught = j.value("caught", false);
          c.detail = j.value("detail", "");
          c.error = j.value("error", "");
          r.power.cases.push_back(std::move(c));
          if (std::find(paths.begin(), paths.end(), j.value("path", "")) == paths.end()) paths.push_back(j.value("path", ""));
        }
      for (std::size_t i = 0; i < paths.size(); ++i) r.paths += (i ? ", " : "") + paths[i];
      out.push_back(std::move(r));
    }
    s.reset();
    return out;
  }

  // The job's runs (of one condition, or all for ""), in plan order, each with its stream
  // decoded (nullopt for failed runs and bytes that do not decode).
  std::vector<std::pair<run_record, std::optional<audit::logit_stream>>> decoded_runs(std::int64_t job,
                                                                                      const std::string& condition) {
    auto& s = db_.prepare(std::string("SELECT ") + kRunColumns + ", s.encoding, s.content" + kRunJoins +
                          "WHERE r.job_id = ?1 AND (?2 = '' OR r.condition = ?2) ORDER BY r.group_index, r.request_index");
    s.bind(1, job).bind(2, condition);
    std::vector<std::pair<run_record, std::optional<audit::logit_stream>>> out;
    while (s.step()) {
      auto r = read_run(s);
      auto stream = r.ok ? stream_of(r, s.blob(kRunColumnCount), s.text(kRunColumnCount + 1)) : std::nullopt;
      out.emplace_back(std::move(r), std::move(stream));
    }
    s.reset();
    return out;
  }

  std::int64_t record_selftest(const selftest_record& r) override {
    transaction t(db_);
    auto cases = nlohmann::json::array();
    for (const auto& c : r.power.cases) {
      nlohmann::json j = {{"path", c.path},
                          {"fault", std::string(audit::to_string(c.fault))},
                          {"position", c.position},
                          {"expected_level", std::string(audit::to_string(c.expected.level))},
                          {"expected_position", c.expected.position},
                          {"applicable", c.applicable},
                          {"caught", c.caught},
                          {"detail", c.detail},
                          {"error", c.error}};
      if (c.expected.max_ulp) j["expected_max_ulp"] = *c.expected.max_ulp;
      if (c.got)
        j["reported"] = {{"logit_identical", c.got->logit_identical},
                         {"token_identical", c.got->token_identical},
                         {"first_logit_difference", c.got->first_logit_difference},
                         {"first_token_difference", c.got->first_token_difference},
                         {"first_text_difference", c.got->first_text_difference},
                         {"max_ulp", c.got->max_ulp},
                         {"max_abs_delta", c.got->max_abs_delta}};
      cases.push_back(std::move(j));
    }
    auto& s = db_.prepare(
        "INSERT INTO selftests (backend, url, api, taken_at, caught, faults, equivalents_flagged, equivalents, passed, "
        "summary, cases) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id");
    s.bind(1, r.backend).bind(2, r.url).bind(3, r.api).bind(4, r.taken_at.empty() ? now_utc() : r.taken_at);
    s.bind(5, r.power.caught).bind(6, r.power.faults).bind(7, r.power.equivalents_flagged).bind(8, r.power.equivalents);
    s.bind(9, r.power.passed()).bind(10, r.paths);
    s.bind(11, cases.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    std::int64_t id = 0;
    if (s.step()) id = s.integer(0);
    s.reset();
    t.commit();
    return id;
  }

  std::optional<selftest_record> latest_selftest(const std::string& backend, const std::string& url) override {
    auto rows = read_selftests("WHERE backend = ?1 AND url = ?2", backend, &url, 1);
    if (rows.empty()) return std::nullopt;
    return rows.front();
  }

  std::vector<selftest_record> selftests(const std::string& backend, int limit) override {
    return read_selftests("WHERE ?1 = '' OR backend = ?1", backend, nullptr, limit);
  }

  std::vector<stored_stream> stored_streams(std::int64_t job) override {
    auto& s = db_.prepare(
        "SELECT r.id, s.token_digest, s.logit_digest, s.encoding, s.pruned_at FROM runs r JOIN streams s ON s.run_id = r.id "
        "WHERE r.job_id = ? ORDER BY r.group_index, r.request_index");
    s.bind(1, job);
    std::vector<stored_stream> out;
    while (s.step()) out.push_back({s.integer(0), s.blob(1), s.blob(2), s.blob(3), s.text(4)});
    s.reset();
    return out;
  }

 private:
  sql_connection& db_;
  write_fence fence_;
};

}  // namespace

std::unique_ptr<evidence_repository> sql_rows::make_evidence(sql_connection& c, write_fence fence) {
  return std::make_unique<sql_evidence>(c, std::move(fence));
}

}  // namespace logitaudit::storage
