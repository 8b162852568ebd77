// Whether a JSON document is described by an OpenAPI schema: every member it has is a property
// of the schema (`strict`; else only where the schema allows no other member), and every
// required member is there, recursively through the named schemas it references. A check of the field
// tables' writers against the schemas the same tables give (what a member's value may be is
// the browser test's, with a real validator).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace logitaudit::test_support {

inline void expect_described(const nlohmann::json& doc, const nlohmann::json& schema, const nlohmann::json& all,
                             const std::string& at, bool strict = true) {
  if (schema.contains("$ref")) {
    const std::string name = schema["$ref"].get<std::string>().substr(std::string("#/components/schemas/").size());
    ASSERT_TRUE(all.contains(name)) << at << ": " << name;
    return expect_described(doc, all[name], all, at, strict);
  }
  if (schema.contains("oneOf")) {
    for (const auto& s : schema["oneOf"])
      if (doc.is_object() && (s.value("type", nlohmann::json()) == "object" || s.contains("$ref")))
        return expect_described(doc, s, all, at, strict);
    return;
  }
  if (doc.is_object() && schema.contains("properties")) {
    const bool closed = strict || schema.value("additionalProperties", nlohmann::json(true)) == false;
    for (const auto& [key, value] : doc.items()) {
      if (!schema["properties"].contains(key)) {
        EXPECT_FALSE(closed) << at << "." << key << " is written but not described";
        continue;
      }
      expect_described(value, schema["properties"][key], all, at + "." + key, strict);
    }
    for (const auto& key : schema.value("required", nlohmann::json::array()))
      EXPECT_TRUE(doc.contains(key.get<std::string>())) << at << "." << key.get<std::string>() << " is required but not written";
  } else if (doc.is_object() && schema.contains("additionalProperties") && schema["additionalProperties"].is_object()) {
    for (const auto& [key, value] : doc.items()) expect_described(value, schema["additionalProperties"], all, at + "." + key, strict);
  } else if (doc.is_array() && schema.contains("items")) {
    for (const auto& v : doc) expect_described(v, schema["items"], all, at + "[]", strict);
  }
}

}  // namespace logitaudit::test_support
