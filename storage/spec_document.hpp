// The spec document's tables, where another stored document holds a part of a spec: a
// frontier row of the findings holds a managed server's settings.
#pragma once

#include <string>

#include "documents.hpp"
#include "codec/field_table.hpp"

namespace logitaudit::storage {

void read_settings(fields::reader& r, const nlohmann::json& v, const std::string& at, audit::server_settings& out);
nlohmann::json settings_json(const audit::server_settings& s);
// Format 1's spec and findings as JSON values, before they are text: what the API's responses
// embed (api/spec_json.hpp), with no round trip through text.
nlohmann::json spec_value_format1(const audit::audit_spec& s);
nlohmann::json findings_value_format1(const audit::findings& f);
// The managed server's settings as a Markdown reference, from the settings table: docs/protocol.md
// carries it between markers, and a test keeps the two the same.
std::string server_settings_markdown();

}  // namespace logitaudit::storage
