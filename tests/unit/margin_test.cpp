// The margin distribution's arithmetic: nearest-rank quantiles and shares below a bound, as
// logitaudit-make-model --measure-margin prints them and scripts/train-model.sh records them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tools/margin.hpp"

using logitaudit::tools::margin_distribution;

TEST(margin_distribution, quantiles_are_nearest_ranks_of_the_sorted_margins) {
  margin_distribution d;
  for (int i = 1; i <= 10; ++i) d.margins.push_back(i / 10.0);  // 0.1 .. 1.0
  EXPECT_DOUBLE_EQ(d.quantile(0.10), 0.1);
  EXPECT_DOUBLE_EQ(d.quantile(0.25), 0.3);  // rank ceil(2.5) = 3
  EXPECT_DOUBLE_EQ(d.quantile(0.50), 0.5);
  EXPECT_DOUBLE_EQ(d.quantile(0.90), 0.9);
  EXPECT_DOUBLE_EQ(d.quantile(0.0), 0.1);  // rank 0 is the smallest
  EXPECT_DOUBLE_EQ(d.quantile(1.0), 1.0);
}

TEST(margin_distribution, a_quantile_whose_rank_is_a_whole_number_is_that_rank_despite_rounding) {
  margin_distribution d;
  for (int i = 1; i <= 25; ++i) d.margins.push_back(i);
  EXPECT_DOUBLE_EQ(d.quantile(0.28), 7);  // 0.28 x 25 is 7.000000000000001 in binary
}

TEST(margin_distribution, shares_count_the_margins_strictly_below_the_bound) {
  margin_distribution d;
  d.margins = {0.005, 0.01, 0.05, 0.5, 2.0};
  EXPECT_DOUBLE_EQ(d.share_below(0.01), 0.2);  // 0.01 itself is not below 0.01
  EXPECT_DOUBLE_EQ(d.share_below(0.1), 0.6);
  EXPECT_DOUBLE_EQ(d.share_below(1.0), 0.8);
  EXPECT_DOUBLE_EQ(d.share_below(10.0), 1.0);
}

TEST(margin_distribution, an_empty_distribution_says_zero_everywhere_and_prints_its_count) {
  margin_distribution d;
  d.prompts = 3;
  d.n_predict = 32;
  EXPECT_EQ(d.quantile(0.5), 0);
  EXPECT_EQ(d.share_below(1), 0);
  EXPECT_NE(d.summary().find("over 0 positions (3 seed prompts x 32 tokens)"), std::string::npos) << d.summary();
}

TEST(margin_distribution, the_json_is_the_summarys_figures) {
  margin_distribution d;
  d.prompts = 1;
  d.n_predict = 4;
  d.margins = {0.05, 0.2, 1.5, 3.0};
  const auto j = nlohmann::json::parse(d.json());
  EXPECT_EQ(j.at("positions"), 4);
  EXPECT_DOUBLE_EQ(j.at("median").get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(j.at("min").get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(j.at("below_0_1").get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j.at("below_1").get<double>(), 0.5);
  EXPECT_NE(d.summary().find("median 0.200"), std::string::npos) << d.summary();
}
