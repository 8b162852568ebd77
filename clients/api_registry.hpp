// The backend API kinds this program speaks, by name. Adding a kind is one file pair in
// clients/ (a class implementing backend_api) and one line in api_registry.cpp; the
// configuration, spec validation, the CLI and the daemon take the list from here.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend_api.hpp"

namespace logitaudit::clients {

// A registered API kind. Cheap to copy; valid for the life of the process.
class api_kind {
 public:
  const backend_api& api() const { return *api_; }
  const backend_api* operator->() const { return api_; }
  std::string_view name() const { return api_->name(); }
  bool operator==(const api_kind&) const = default;

 private:
  friend class api_registry;
  explicit api_kind(const backend_api* api) : api_(api) {}
  const backend_api* api_;
};

// Not thread-safe to change: kinds are added before any backend is built (at start-up, or
// at the top of a test).
class api_registry {
 public:
  // Registers `api`; throws std::invalid_argument when its name is taken.
  api_kind add(std::unique_ptr<backend_api> api);
  std::optional<api_kind> find(std::string_view name) const;
  std::vector<std::string> names() const;
  // "llama, openai": for messages that list what is known.
  std::string names_text() const;

 private:
  std::vector<std::unique_ptr<backend_api>> apis_;
};

// The process's registry, with the built-in kinds registered.
api_registry& api_kinds();
// The kind a backend has when none is named: llama.cpp's native API.
api_kind default_api_kind();

std::string_view to_string(api_kind k);
std::optional<api_kind> parse_api_kind(std::string_view s);

}  // namespace logitaudit::clients
