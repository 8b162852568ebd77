// The advice a database holds for a model file and a llama.cpp build (`logitaudit advise`,
// docs/advise.md): the newest certified configuration among the certify jobs tagged with the
// file's sha256 (every file an advice was given is tagged: the certified one may be another
// quantisation), on the same build, with its cost from the sweep that measured it. An audit of
// a server running that file and build cites it in its verdict's Fix line.
#pragma once

#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "audit/harness_power.hpp"
#include "storage/repositories.hpp"

namespace logitaudit::daemon {

// The tag `logitaudit advise` puts on its sweep and its certify jobs: "advise-model:" and the
// first 16 hex digits of the model file's sha256.
// The tag of an advise job's certify jobs ("advice-of:12"), and the advise job a job's tags name
// that way (none: it is not one).
std::string advice_of_tag(std::int64_t advise_job);
std::optional<std::int64_t> advice_of(const std::vector<std::string>& tags);

std::string advice_tag(const std::string& model_sha256);

// nullopt when the database holds no certified advice for that file on the build and host of
// `server` (its CPU model and ggml variant: a fleet's database or an imported bundle holds other
// hosts' advice). Runs on the db thread.
std::optional<audit::stored_advice> stored_advice_for(storage::store& s, const std::string& model_sha256,
                                                      const audit::backend_fingerprint& server);

}  // namespace logitaudit::daemon
