// The findings table in the seed's layout, as plain text, Markdown and CSV (JSON is rendered
// at the API edge). Pure.
#pragma once

#include <string>

#include "findings.hpp"

namespace logitaudit::audit {

std::string render_text(const findings& f);
std::string render_markdown(const findings& f);
std::string render_csv(const findings& f);
// The migration matrices alone (audit/migration.hpp), as the text report has them; "" for none.
std::string render_migration(const findings& f);

}  // namespace logitaudit::audit
