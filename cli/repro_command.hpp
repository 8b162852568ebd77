// `logitaudit repro AUDIT RUN`: asks the daemon to shrink a divergent burst run to its minimal
// reproduction (POST /v1/audits/{id}/runs/{run}/repro), follows its progress, and writes the
// bundle (repro.sh, expected.json, fingerprint.json, command.txt, upstream.md) to a folder.
#pragma once

#include <CLI/CLI.hpp>

namespace logitaudit::cli {

// Exit codes: 0 reproduced (bundle written), 1 not reproduced / solo unstable / cancelled /
// failed, 2 bad arguments, 3 daemon unreachable, 5 refused (not divergent, busy), 6 daemon error.
void add_repro_command(CLI::App& app);

}  // namespace logitaudit::cli
