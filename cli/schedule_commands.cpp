// schedule add|list|show|rm, and backends: the daemon's nightly audits and the backends it knows.
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

struct schedule_add_args {
  common_args common;
  spec_args spec;
  std::string cron, timezone = "UTC", missed;
  bool disabled = false;
};

void print_schedule_line(table& t, const json& s) {
  t.add({std::to_string(s.value("id", 0)), text(s, "cron"), text(s, "timezone"), s.value("enabled", false) ? "yes" : "no",
         utc(s["next_fire_unix"]), utc(s["last_fire_unix"]), join(s["spec"]["backends"].is_array() ? s["spec"]["backends"] : json::array())});
}

table schedule_table() { return table({"ID", "CRON", "TIMEZONE", "ENABLED", "NEXT (UTC)", "LAST (UTC)", "BACKENDS"}); }

void add_schedule_impl(CLI::App& app) {
  auto* group = app.add_subcommand("schedule", "recurring audits: add, list, show, rm");
  group->require_subcommand(1);

  auto a = std::make_shared<schedule_add_args>();
  auto* add = group->add_subcommand("add", "schedule an audit (a spec file, or a preset with overrides)");
  add_common(add, a->common);
  add_spec_options(add, a->spec);
  add->add_option("--cron", a->cron, "five-field cron expression, e.g. '0 3 * * *'")->required();
  add->add_option("--timezone", a->timezone, "IANA time zone of the cron expression (default UTC)");
  add->add_option("--missed", a->missed, "after downtime: run_once (default) or skip")->check(CLI::IsMember(audit::names_of(audit::kMissedFirePolicies)));
  add->add_flag("--disabled", a->disabled, "create it paused");
  add->callback([a] {
    json body = {{"cron", a->cron}, {"timezone", a->timezone}, {"spec", build_spec(a->spec)}};
    if (!a->missed.empty()) body["missed"] = a->missed;
    if (a->disabled) body["enabled"] = false;
    const json s = connect(a->common).send_json(verb::post, "/v1/schedules", body);
    if (a->common.json) return print_json(s);
    std::cout << "schedule " << s.value("id", 0) << ": '" << text(s, "cron") << "' in " << text(s, "timezone")
              << ", next audit at " << utc(s["next_fire_unix"]) << "\n";
  });

  auto lc = std::make_shared<common_args>();
  auto* list = group->add_subcommand("list", "every schedule with its next and last firing");
  add_common(list, *lc);
  list->callback([lc] {
    const json out = connect(*lc).get_json("/v1/schedules");
    if (lc->json) return print_json(out);
    auto t = schedule_table();
    for (const auto& s : out["schedules"]) print_schedule_line(t, s);
    if (t.size() == 0) std::cout << "no schedules\n";
    else t.print(std::cout);
  });

  auto sa = std::make_shared<id_args>();
  auto* show = group->add_subcommand("show", "one schedule and the audits it started");
  add_common(show, sa->common);
  show->add_option("id", sa->id, "schedule id")->required()->check(positive_id);
  show->callback([sa] {
    const auto c = connect(sa->common);
    const json s = c.get_json(id_path("/v1/schedules", sa->id));
    const json h = c.get_json(id_path("/v1/schedules", sa->id) + "/history");
    if (sa->common.json) return print_json({{"schedule", s}, {"history", h}});
    auto t = schedule_table();
    print_schedule_line(t, s);
    t.print(std::cout);
    std::cout << "missed firings: " << text(s, "missed") << "\n";
    table runs({"AUDIT", "STATUS", "CREATED", "FINISHED", "VALID", "PREDICTIONS (+ held, - failed, ? undecided)"});
    for (const auto& r : h["runs"]) {
      std::string held;
      const json& outcomes = r.contains("predictions") ? r["predictions"] : json::object();
      for (const auto& [pid, o] : outcomes.items()) {
        const std::string v = o.is_string() ? o.get<std::string>() : "";
        held += (held.empty() ? "" : " ") + pid + (v == "held" ? "+" : v == "undecided" ? "?" : "-");
      }
      runs.add({std::to_string(r.value("audit", 0)), text(r, "status"), text(r, "created_at"), text(r, "finished_at"),
                r["valid"].is_boolean() ? (r["valid"].get<bool>() ? "yes" : "NO") : "-", held});
    }
    if (runs.size() == 0) std::cout << "no audits yet\n";
    else runs.print(std::cout);
  });

  auto ra = std::make_shared<id_args>();
  auto* rm = group->add_subcommand("rm", "delete a schedule (the audits it started are kept)");
  add_common(rm, ra->common);
  rm->add_option("id", ra->id, "schedule id")->required()->check(positive_id);
  rm->callback([ra] {
    const json out = connect(ra->common).send_json(verb::delete_, id_path("/v1/schedules", ra->id), nullptr);
    if (ra->common.json) return print_json(out);
    std::cout << "schedule " << ra->id << " deleted\n";
  });
}

void add_backends_impl(CLI::App& app) {
  auto common = std::make_shared<common_args>();
  auto* sub = app.add_subcommand("backends", "the backends the daemon is configured with");
  add_common(sub, *common);
  sub->callback([common] {
    const json out = connect(*common).get_json("/v1/backends");
    if (common->json) return print_json(out);
    table t({"NAME", "URL", "API", "BUSY"});
    for (const auto& b : out["backends"])
      t.add({text(b, "name"), text(b, "url"), text(b, "api"), b.value("busy", false) ? "yes" : "no"});
    t.print(std::cout);
    std::cout << "ad-hoc backends (NAME=URL in a spec): "
              << (out.value("allow_adhoc_backends", false) ? "allowed" : "not allowed") << "\n";
    if (out.contains("host")) {
      std::string variants;
      for (const auto& v : out["host"].value("ggml_cpu_variants", json::array())) variants += (variants.empty() ? "" : ",") + v.get<std::string>();
      std::cout << "host: " << text(out["host"], "cpu_model") << "; ggml CPU variants it can run (--sweep cpu_variant=...): "
                << (variants.empty() ? "none" : variants) << "\n";
      std::cout << "devices it can give a managed server (--sweep device=...): " << text(out["host"], "device_words") << "\n";
    }
  });
}

// --- schedule add|list|show|rm ------------------------------------------------------------

}  // namespace

void add_schedule(CLI::App& app) { add_schedule_impl(app); }

void add_backends(CLI::App& app) { add_backends_impl(app); }

}  // namespace logitaudit::cli::remote
