// The sections of an audit's findings: each analysis's record (audit/analysis.hpp), held by its
// type, so that the findings name none of them.
#pragma once

#include <any>
#include <map>
#include <typeindex>

namespace logitaudit::audit {

// The analyses' sections of one findings, each by its type; an analysis that had nothing to say
// has none. A value type: copies copy every section. Not thread-safe (like any value).
class section_store {
 public:
  template <class S>
  const S* find() const {
    auto it = sections_.find(typeid(S));
    return it == sections_.end() ? nullptr : std::any_cast<S>(&it->second);
  }
  // The section of type S, made empty when there is none yet.
  template <class S>
  S& put() {
    auto& slot = sections_[typeid(S)];
    if (!slot.has_value()) slot = S{};
    return *std::any_cast<S>(&slot);
  }
  template <class S>
  void erase() {
    sections_.erase(typeid(S));
  }

 private:
  std::map<std::type_index, std::any> sections_;
};

}  // namespace logitaudit::audit
