// submit: an audit from a spec file, a preset and overrides; --wait follows it to its report.
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

struct submit_args {
  common_args common;
  spec_args spec;
  bool wait = false, strict = false, quiet = false, short_form = false;
  std::string junit;  // --junit FILE
  std::string format = "text";
};

void add_submit_impl(CLI::App& app) {
  auto a = std::make_shared<submit_args>();
  auto* sub = app.add_subcommand("submit", "submit an audit to the daemon (a spec file, or a preset with overrides)");
  add_common(sub, a->common);
  add_spec_options(sub, a->spec);
  sub->add_flag("--wait", a->wait, "wait for the audit to end (progress on stderr), then print its report");
  sub->add_option("--format", a->format, "report format with --wait (html: one self-contained file)")
      ->check(CLI::IsMember({"text", "markdown", "csv", "json", "html"}));
  sub->add_flag("--strict", a->strict, "with --wait: exit 1 when a prediction failed");
  sub->add_flag("--short", a->short_form, "with --wait: print the verdict alone");
  sub->add_flag("--quiet", a->quiet, "with --wait: no progress display");
  sub->add_option("--junit", a->junit, "with --wait: also write the report as JUnit XML to this file (for CI)");
  sub->callback([a] {
    const json spec = build_spec(a->spec);
    const auto c = connect(a->common);
    if (!a->junit.empty() && !a->wait) throw cli_failure(exit_usage, "submit: --junit needs --wait (the report comes when the audit ends)");
    const json job = c.send_json(verb::post, "/v1/audits", spec);
    const std::int64_t id = job.value("id", std::int64_t{0});
    if (!a->wait) {
      if (a->common.json) print_json(job);
      else
        std::cout << "audit " << id << " " << text(job, "status") << ": " << job["progress"].value("total", 0)
                  << " requests on " << join(job["backends"]) << "\n"
                  << "follow it with: logitaudit status " << id << " --wait\n";
      return;
    }
    const json last = wait_for(c, id, !a->quiet && !a->common.json);
    if (text(last, "status") != "done") {
      save_junit_error(id, a->junit, "audit " + std::to_string(id) + " ended " + text(last, "status") +
                                         (last.contains("error") ? ": " + text(last, "error") : ""));
      if (a->common.json) print_json({{"audit", last}, {"report", nullptr}});
      std::cerr << "logitaudit: audit " << id << " ended " << text(last, "status")
                << (last.contains("error") ? ": " + text(last, "error") : "") << "\n";
      throw cli_failure(exit_findings, "");
    }
    save_junit(c, id, a->junit);
    int code = exit_ok;
    if (a->common.json) {
      const json findings = c.get_json(id_path("/v1/audits", id) + "/report");
      if (a->short_form) print_json(findings.value("verdict", json::array()));
      else print_json({{"audit", last}, {"report", findings}});
      code = verdict_code(findings, a->strict);
    } else {
      code = print_report(c, id, a->format, a->strict, a->short_form);
    }
    if (code != exit_ok) throw cli_failure(code, "");
  });
}

// --- replay: the reference's own spec against other backends -------------------------------

}  // namespace

void add_submit(CLI::App& app) { add_submit_impl(app); }

}  // namespace logitaudit::cli::remote
