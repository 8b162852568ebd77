// The commands on audits: list, status, report, runs, stream, compare, bursts, cancel and delete.
#include "remote_common.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "audit/enum_names.hpp"
#include "audit/report.hpp"
#include "audit/spec.hpp"
#include "audit/states.hpp"
#include "audit/verdict.hpp"
#include "clients/api_registry.hpp"
#include "clients/backend.hpp"
#include "storage/documents.hpp"
#include "exit_codes.hpp"
#include "table.hpp"

namespace logitaudit::cli::remote {
namespace {

struct list_args {
  common_args common;
  std::string status, tag;
  std::int64_t before = 0;
  int limit = 50;
};

void add_list(CLI::App& app) {
  auto a = std::make_shared<list_args>();
  auto* sub = app.add_subcommand("list", "list audits, newest first");
  add_common(sub, a->common);
  sub->add_option("--status", a->status, "only audits with this status")->check(CLI::IsMember(audit::names_of(audit::kJobStatuses)));
  sub->add_option("--tag", a->tag, "only audits with this tag");
  sub->add_option("--before", a->before, "only audits older than this id (paging)")->check(positive_id);
  sub->add_option("--limit", a->limit, "at most this many (1-500)")->check(CLI::Range(1, 500));
  sub->callback([a] {
    query q{{"limit", std::to_string(a->limit)}};
    if (!a->status.empty()) q.emplace_back("status", a->status);
    if (!a->tag.empty()) q.emplace_back("tag", a->tag);
    if (a->before) q.emplace_back("before", std::to_string(a->before));
    const json out = connect(a->common).get_json("/v1/audits" + query_string(q));
    if (a->common.json) return print_json(out);
    table t({"ID", "STATUS", "PROGRESS", "FAILED", "CREATED", "BACKENDS", "TAGS"});
    for (const auto& j : out["audits"])
      t.add({std::to_string(j.value("id", 0)), text(j, "status"), progress_cell(j),
             std::to_string(j["progress"].value("failed", 0)), text(j, "created_at"), join(j["backends"]), join(j["tags"])});
    if (t.size() == 0) std::cout << "no audits\n";
    else t.print(std::cout);
    if (out.contains("next")) {
      const std::string next = text(out, "next");
      std::cout << "more: logitaudit list --before " << next.substr(next.find('=') + 1) << "\n";
    }
  });
}

void add_status(CLI::App& app) {
  auto a = std::make_shared<id_args>();
  auto wait = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("status", "an audit's status and progress");
  add_common(sub, a->common);
  sub->add_option("id", a->id, "audit id")->required()->check(positive_id);
  sub->add_flag("--wait", *wait, "follow the audit until it ends (progress on stderr)");
  sub->callback([a, wait] {
    const auto c = connect(a->common);
    const json job = *wait ? wait_for(c, a->id, !a->common.json) : c.get_json(id_path("/v1/audits", a->id));
    if (a->common.json) print_json(job);
    else print_status(job);
  });
}

void add_report(CLI::App& app) {
  auto a = std::make_shared<id_args>();
  auto format = std::make_shared<std::string>("text");
  auto strict = std::make_shared<bool>(false);
  auto short_form = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("report", "an ended audit's verdict, findings table, findings and predictions");
  add_common(sub, a->common);
  sub->add_option("id", a->id, "audit id")->required()->check(positive_id);
  sub->add_option("--format", *format, "text, markdown, csv, json, junit (JUnit XML for CI) or html (one file that fetches nothing)")
      ->check(CLI::IsMember({"text", "markdown", "csv", "json", "junit", "html"}));
  sub->add_flag("--strict", *strict, "exit 1 when a prediction failed");
  sub->add_flag("--short", *short_form, "the verdict alone (seven lines at most; with --json or --format json, its array)");
  sub->callback([a, format, strict, short_form] {
    const int code = print_report(connect(a->common), a->id, a->common.json ? "json" : *format, *strict, *short_form);
    if (code != exit_ok) throw cli_failure(code, "");
  });
}

std::string verdict_cell(const json& r, const char* key) {
  if (!r.contains("verdict")) return r.value("compared", false) ? "?" : "-";
  return r["verdict"].value(key, false) ? "same" : "DIFF";
}

void add_runs(CLI::App& app) {
  auto a = std::make_shared<id_args>();
  auto condition = std::make_shared<std::string>(), backend = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("runs", "every request of an audit with its digests and verdicts");
  add_common(sub, a->common);
  sub->add_option("id", a->id, "audit id")->required()->check(positive_id);
  sub->add_option("--condition", *condition, "only this condition (baselines are 'baseline')");
  sub->add_option("--backend", *backend, "only this backend");
  sub->callback([a, condition, backend] {
    query q;
    if (!condition->empty()) q.emplace_back("condition", *condition);
    if (!backend->empty()) q.emplace_back("backend", *backend);
    const json out = connect(a->common).get_json(id_path("/v1/audits", a->id) + "/runs" + query_string(q));
    if (a->common.json) return print_json(out);
    table t({"RUN", "GROUP", "BACKEND", "CONDITION", "REP", "STATUS", "TOKENS", "LOGIT", "TOKEN", "EVIDENCE",
             "TOKEN-DIGEST / ERROR"});
    int flagged = 0;
    for (const auto& r : out["runs"]) {
      const bool ok = text(r, "status") == "ok";
      const std::string flag = r.contains("verdict") ? text(r["verdict"], "flag") : "";
      flagged += !flag.empty() && flag != "none";
      t.add({std::to_string(r.value("id", 0)), std::to_string(r.value("group", 0)), text(r, "backend"),
             text(r, "condition"), std::to_string(r.value("replicate", 0)), text(r, "status"),
             ok ? std::to_string(r["digests"].value("tokens", 0)) : "-", verdict_cell(r, "logit_identical"),
             verdict_cell(r, "token_identical"), flag.empty() || flag == "none" ? "-" : flag,
             ok ? text(r["digests"], "token").substr(0, 16) : text(r, "error")});
    }
    t.print(std::cout);
    std::cout << t.size() << " runs (LOGIT/TOKEN: same or DIFF against the solo baseline; - not compared)";
    if (flagged) std::cout << "; " << flagged << " counted apart (EVIDENCE: their condition did not happen)";
    std::cout << "\n";
  });
}

std::string logprob(const json& v) {
  std::ostringstream s;
  s << std::setprecision(9) << v.get<double>();
  return s.str();
}

void add_stream(CLI::App& app) {
  auto a = std::make_shared<id_args>();
  auto run = std::make_shared<std::int64_t>(0);
  auto* sub = app.add_subcommand("stream", "one stored logit stream: token ids, logprobs and top-k");
  add_common(sub, a->common);
  sub->add_option("id", a->id, "audit id")->required()->check(positive_id);
  sub->add_option("run", *run, "run id (from `logitaudit runs`)")->required()->check(positive_id);
  sub->callback([a, run] {
    const json s = connect(a->common).get_json(id_path("/v1/audits", a->id) + "/runs/" + std::to_string(*run) + "/stream");
    if (a->common.json) return print_json(s);
    std::cout << "run " << s.value("id", 0) << " of audit " << a->id << ": " << text(s, "backend") << " "
              << text(s, "condition") << " replicate " << s.value("replicate", 0) << ", " << text(s, "status") << "\n";
    if (s.contains("digests"))
      std::cout << "token digest " << text(s["digests"], "token") << "\nlogit digest " << text(s["digests"], "logit")
                << "\n";
    std::cout << "content " << json(text(s, "content")).dump() << "\n";
    table t({"POS", "TOKEN", "LOGPROB", "TOP-K (token:logprob)"});
    std::size_t pos = 0;
    for (const auto& tok : s["tokens"]) {
      std::string top;
      for (const auto& e : tok["top"]) top += (top.empty() ? "" : "  ") + text(e, "id") + ":" + logprob(e["logprob"]);
      t.add({std::to_string(pos++), text(tok, "id"), logprob(tok["logprob"]), top});
    }
    t.print(std::cout);
  });
}

void add_compare(CLI::App& app) {
  auto common = std::make_shared<common_args>();
  auto ids = std::make_shared<std::vector<std::int64_t>>();
  auto strict = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("compare", "two audits' solo baselines side by side (same server, another day?)");
  add_common(sub, *common);
  sub->add_option("ids", *ids, "audit ids A B")->required()->expected(2)->check(positive_id);
  sub->add_flag("--strict", *strict, "exit 1 when a shared baseline is not logit-identical");
  sub->callback([common, ids, strict] {
    const json out = connect(*common).get_json("/v1/compare?a=" + std::to_string((*ids)[0]) + "&b=" + std::to_string((*ids)[1]));
    const auto& sum = out["summary"];
    if (common->json) {
      print_json(out);
    } else {
      std::cout << "audit " << (*ids)[0] << " vs " << (*ids)[1] << ": " << sum.value("compared", 0)
                << " shared baselines, " << sum.value("logit_identical", 0) << " logit-identical, "
                << sum.value("token_identical", 0) << " token-identical";
      if (const int n = sum.value("not_solo", 0); n > 0)
        std::cout << "; " << n << " in both not compared, since a side was not alone (NOT-SOLO below)";
      std::cout << "\n";
      for (const auto& [backend, diffs] : out["fingerprint_differences"].items())
        std::cout << backend << ": "
                  << (diffs.empty() ? "same server fingerprint (model, build, settings)" : "fingerprint changed: " + join(diffs, "; "))
                  << "\n";
      table t({"BACKEND", "PROMPT", "TEMP", "SEED", "LOGIT", "TOKEN", "FIRST-DIFF", "MAX-ULP"});
      for (const auto& b : out["baselines"]) {
        std::string prompt = text(b, "prompt");
        if (prompt.size() > 32) prompt = prompt.substr(0, 29) + "...";
        const bool both = b.contains("logit_identical");
        // Not compared: in one audit only, or in both with a side that was not alone (its reason
        // is in --json's not_solo).
        const std::string in = b.contains("not_solo")     ? "NOT-SOLO"
                               : b.value("in_a", false) ? "only in " + std::to_string((*ids)[0])
                                                        : "only in " + std::to_string((*ids)[1]);
        t.add({text(b, "backend"), prompt, logprob(b["temperature"]), b.contains("seed") ? text(b, "seed") : "-",
               both ? (b.value("logit_identical", false) ? "same" : "DIFF") : in,
               both ? (b.value("token_identical", false) ? "same" : "DIFF") : "-",
               both && b.value("first_logit_difference", -1) >= 0 ? text(b, "first_logit_difference") : "-",
               both ? text(b, "max_ulp") : "-"});
      }
      t.print(std::cout);
    }
    if (*strict && sum.value("logit_identical", 0) != sum.value("compared", 0)) throw cli_failure(exit_findings, "");
  });
}

std::string fixed(const json& v, int digits) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v.get<double>());
  return buf;
}

void add_bursts(CLI::App& app) {
  auto a = std::make_shared<id_args>();
  auto* sub = app.add_subcommand("bursts", "every burst of an audit: launch spread, overlap, the server's batching, verdict");
  add_common(sub, a->common);
  sub->add_option("id", a->id, "audit id")->required()->check(positive_id);
  sub->callback([a] {
    const json out = connect(a->common).get_json(id_path("/v1/audits", a->id) + "/bursts");
    if (a->common.json) return print_json(out);
    table t({"GROUP", "BACKEND", "CONDITION", "REP", "WIDTH", "SLOTS", "WRITES", "SPREAD-us", "OVERLAP", "BUSY/DECODE",
             "TIMED-CONC", "BATCHED", "WHY NOT"});
    int unbatched = 0, judged = 0;
    for (const auto& b : out["bursts"]) {
      const json& v = b["verdict"];
      std::string batched = "-", why;
      if (v.is_object()) {
        ++judged;
        batched = v.value("batched", false) ? "yes" : "NO";
        unbatched += !v.value("batched", false);
        why = text(v, "reason");
      }
      t.add({std::to_string(b.value("group", 0)), text(b, "backend"), text(b, "condition"), std::to_string(b.value("replicate", 0)),
             std::to_string(b.value("width", 0)), b["server_slots"].is_null() ? "?" : text(b, "server_slots"),
             b.value("write_mode", json()).is_string() ? text(b, "write_mode") : "-", fixed(json(b.value("launch_spread_ns", 0) / 1000.0), 1), fixed(b["overlap"], 2), fixed(b["busy_slots_per_decode"], 2),
             fixed(b["timed_concurrency"], 2), batched, why});
    }
    if (t.size() == 0) {
      std::cout << "audit " << a->id << " has no bursts\n";
      return;
    }
    t.print(std::cout);
    std::cout << t.size() << " bursts";
    if (judged < static_cast<int>(t.size())) std::cout << " (BATCHED is judged when the audit ends)";
    if (unbatched) std::cout << "; " << unbatched << " did not batch: their streams are counted apart";
    std::cout << "\n";
  });
}

void add_cancel_and_delete(CLI::App& app) {
  auto a = std::make_shared<id_args>();
  auto* sub = app.add_subcommand("cancel", "cancel a queued or running audit (its stored runs are kept)");
  add_common(sub, a->common);
  sub->add_option("id", a->id, "audit id")->required()->check(positive_id);
  sub->callback([a] {
    const auto c = connect(a->common);
    json job = c.send_json(verb::post, id_path("/v1/audits", a->id) + "/cancel", nullptr);
    // The daemon stops the job at its next group boundary; wait (up to a minute) for the end.
    if (!finished(text(job, "status"))) job = c.get_json(id_path("/v1/audits", a->id) + "?wait=60");
    if (a->common.json) return print_json(job);
    std::cout << "audit " << a->id << " " << text(job, "status") << " (" << progress_cell(job)
              << " requests done; they stay stored)\n";
  });
  auto d = std::make_shared<id_args>();
  auto* del = app.add_subcommand("delete", "delete an ended audit and everything stored for it");
  add_common(del, d->common);
  del->add_option("id", d->id, "audit id")->required()->check(positive_id);
  del->callback([d] {
    const json out = connect(d->common).send_json(verb::delete_, id_path("/v1/audits", d->id), nullptr);
    if (d->common.json) return print_json(out);
    std::cout << "audit " << d->id << " deleted\n";
  });
}

}  // namespace

void add_audit_commands(CLI::App& app) {
  add_list(app);
  add_status(app);
  add_report(app);
  add_runs(app);
  add_stream(app);
  add_compare(app);
  add_bursts(app);
  add_cancel_and_delete(app);
}

}  // namespace logitaudit::cli::remote
