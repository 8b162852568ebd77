// The wire's spec and findings JSON: format 1 of the stored documents, by name.
#include "spec_json.hpp"

#include <nlohmann/json.hpp>

#include "audit/enum_names.hpp"
#include "audit/verdict.hpp"
#include "storage/documents.hpp"
#include "storage/spec_document.hpp"

namespace logitaudit::api {

expected<audit::audit_spec, std::vector<audit::spec_problem>> read_spec(std::string_view json) {
  return storage::read_spec_format1(json);
}

std::string spec_to_json(const audit::audit_spec& spec) { return storage::encode_spec_format1(spec); }

nlohmann::json spec_value(const audit::audit_spec& spec) { return storage::spec_value_format1(spec); }

std::string findings_to_json(const audit::findings& f) { return storage::encode_findings_format1(f); }

namespace {

nlohmann::json verdict_array(const audit::findings& f) {
  auto lines = nlohmann::json::array();
  for (const auto& l : audit::summarize(f).lines)
    lines.push_back({{"topic", audit::to_string(l.topic)}, {"answer", audit::to_string(l.answer)}, {"text", l.text}});
  return lines;
}

}  // namespace

std::string verdict_json(const audit::findings& f) {
  return verdict_array(f).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string report_json(const audit::findings& f, std::string_view stored) {
  auto j = nlohmann::json::parse(stored, nullptr, false);
  if (!j.is_object()) j = storage::findings_value_format1(f);
  j["verdict"] = verdict_array(f);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string report_json(const audit::findings& f) {
  auto j = storage::findings_value_format1(f);
  j["verdict"] = verdict_array(f);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string report_schemas() {
  using nlohmann::json;
  const json line = {
      {"type", "object"},
      {"description", "One line of the verdict that opens the report: written from the findings' tallies"},
      {"required", {"topic", "answer", "text"}},
      {"properties",
       {{"topic", {{"type", "string"}, {"enum", audit::names_of(audit::kEnumerators<audit::verdict_topic>)}}},
        {"answer", {{"type", "string"}, {"enum", audit::names_of(audit::kEnumerators<audit::verdict_answer>)}}},
        {"text", {{"type", "string"}, {"description", "the line as the text report prints it, after its label"}}}}}};
  const json report = {
      {"description", "An ended audit's findings as stored, with the verdict beside them"},
      {"allOf",
       {{{"$ref", "#/components/schemas/Findings"}},
        {{"type", "object"},
         {"required", {"verdict"}},
         {"properties",
          {{"verdict",
            {{"type", "array"}, {"maxItems", 6}, {"items", {{"$ref", "#/components/schemas/VerdictLine"}}},
             {"description", "solo, concurrency, cache reuse, seeded sampling (each when tested), the comparator, what was undecided"}}}}}}}}};
  return json{{"Report", report}, {"VerdictLine", line}}.dump();
}

}  // namespace logitaudit::api
