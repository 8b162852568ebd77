// A recorded trace for a load condition (docs/load.md): a file of arrival offsets with prompt
// and output lengths, as JSON Lines ({"at_ms": 0, "prompt_tokens": 32, "output_tokens": 16} per
// line), one JSON array of such objects or of [at_ms, prompt_tokens, output_tokens], or CSV
// with the header at_ms,prompt_tokens,output_tokens. Read here; its values are checked with
// the spec (audit::validate), each named by its index.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "audit/expected.hpp"
#include "audit/load.hpp"

namespace logitaudit::cli {

// Errors name the line ("line 7: not a JSON object") and stop at the first; a file of more
// than audit::kMaxTraceEntries requests is refused.
expected<std::vector<audit::trace_entry>, std::string> parse_trace(std::string_view text);
// The file at `path` parsed; errors begin with the path ("t.csv: line 7: ...").
expected<std::vector<audit::trace_entry>, std::string> read_trace_file(const std::string& path);

}  // namespace logitaudit::cli
