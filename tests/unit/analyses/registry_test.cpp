// The list of analyses (audit/analyses.inc): each is named once, has a place the reports know,
// and every stored one's section survives the findings document.
#include <gtest/gtest.h>

#include <set>

#include "audit/analysis.hpp"
#include "audit/findings.hpp"
#include "audit/report.hpp"
#include "storage/documents.hpp"

using namespace logitaudit;

TEST(analyses, each_is_named_once) {
  std::set<std::string_view> names;
  for (const auto* a : audit::analyses()) EXPECT_TRUE(names.insert(a->name()).second) << "two analyses are named " << a->name();
  EXPECT_GE(names.size(), 12u);
}

TEST(analyses, empty_findings_render_and_round_trip) {
  // Findings with no section: every analysis renders what it says of nothing, and the document
  // re-encodes to its own bytes.
  audit::findings f;
  f.backends = {"a"};
  f.per_backend["a"] = {};
  const auto text = storage::encode_findings(f);
  const auto back = storage::decode_findings(text);
  ASSERT_TRUE(back) << text;
  EXPECT_EQ(storage::encode_findings(*back), text);
  for (const auto* a : audit::analyses()) EXPECT_NO_THROW(audit::render_analysis(*back, a->name())) << a->name();
}
