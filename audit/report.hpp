// The findings table in the seed's layout, as plain text, Markdown and CSV (JSON is rendered
// at the API edge). Pure.
#pragma once

#include <string>

#include "findings.hpp"

namespace logitaudit::audit {

std::string render_text(const findings& f);
std::string render_markdown(const findings& f);
std::string render_csv(const findings& f);

}  // namespace logitaudit::audit
