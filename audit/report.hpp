// The findings table in the seed's layout, as plain text, Markdown and CSV (JSON is rendered
// at the API edge). Pure.
#pragma once

#include <string>

#include "findings.hpp"

namespace logitaudit::audit {

std::string render_text(const findings& f);
std::string render_markdown(const findings& f);
std::string render_csv(const findings& f);
// One analysis's part alone, as the text report has it ("migration": the migration matrices);
// "" when it has nothing to say or no analysis has that name.
std::string render_analysis(const findings& f, std::string_view name);

}  // namespace logitaudit::audit
