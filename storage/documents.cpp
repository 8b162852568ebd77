// The stored documents' formats: which format a text is, and which reader reads it. Format 1's
// tables are spec_document.cpp (the spec: its bytes are hashed into spec_hash, so format 1 must
// keep writing exactly them) and findings_document.cpp (the findings and a load level's
// measurement). Every database of versions 1, 2 and 3 holds format 1.
#include "documents.hpp"

#include <nlohmann/json.hpp>

namespace logitaudit::storage {

using json = nlohmann::json;

std::string encode_repro_files(const std::map<std::string, std::string>& files) {
  if (files.empty()) return "";
  return json(files).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::map<std::string, std::string> decode_repro_files(std::string_view text) {
  std::map<std::string, std::string> out;
  const auto j = json::parse(text, nullptr, false);
  if (j.is_object())
    for (const auto& [name, body] : j.items())
      if (body.is_string()) out[name] = body.get<std::string>();
  return out;
}

namespace {

// The "format" member of a document, 1 when it has none; 0 when the text is no JSON object.
int format_of(std::string_view text) {
  const json j = json::parse(text, nullptr, false);
  if (!j.is_object()) return 0;
  const auto f = j.find("format");
  if (f == j.end()) return 1;
  return f->is_number_integer() ? f->get<int>() : -1;
}

}  // namespace

std::string encode_spec(const audit::audit_spec& spec) { return encode_spec_format1(spec); }

expected<audit::audit_spec, std::vector<audit::spec_problem>> decode_spec(std::string_view text) {
  auto v1 = read_spec_format1(text);
  if (v1) return v1;
  if (const int f = format_of(text); f != 1 && f != 0)
    return unexpected{std::vector<audit::spec_problem>{
        {"format", "a spec document of format " + std::to_string(f) + ", newer than this logitaudit reads (" +
                       std::to_string(kDocumentFormat) + ")"}}};
  return v1;
}

std::string encode_findings(const audit::findings& f) { return encode_findings_format1(f); }

std::optional<audit::findings> decode_findings(std::string_view text) {
  if (format_of(text) != 1) return std::nullopt;
  return decode_findings_format1(text);
}

}  // namespace logitaudit::storage
