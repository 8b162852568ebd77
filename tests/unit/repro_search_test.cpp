// The reduction of a repro (audit/repro_search.hpp) against oracles that say which cases move
// the target: no server, so every path of ddmin and of the length search is reached at will.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "audit/repro_search.hpp"

using namespace logitaudit;
using audit::search_decision;

namespace {

audit::repro_case burst_of(int neighbours, int n_predict = 16) {
  audit::repro_case c;
  c.target = {"target", 0, std::nullopt, 16, 0};
  for (int i = 0; i < neighbours; ++i) c.neighbours.push_back({"n" + std::to_string(i), 0, std::nullopt, n_predict, 0});
  return c;
}

std::set<std::string> prompts(const audit::repro_case& c) {
  std::set<std::string> out;
  for (const auto& n : c.neighbours) out.insert(n.prompt);
  return out;
}

struct outcome {
  audit::repro_case minimal;
  int tried = 0;
};

// Runs the reduction to its end (or `budget` candidates), deciding each by `moves`.
outcome reduce(const audit::repro_case& c, const std::function<bool(const audit::repro_case&)>& moves, int budget = 1000) {
  audit::repro_reduction r(c);
  outcome o;
  while (auto candidate = r.next()) {
    if (o.tried == budget) break;
    ++o.tried;
    r.decide(moves(*candidate) ? search_decision::different : search_decision::same);
  }
  o.minimal = r.minimal();
  return o;
}

}  // namespace

TEST(repro_reduction, one_guilty_neighbour_among_seven_is_found_and_shortened_to_the_length_that_still_moves) {
  // The target moves only beside n5, and only while n5 writes at least 6 tokens.
  auto moves = [](const audit::repro_case& c) {
    for (const auto& n : c.neighbours)
      if (n.prompt == "n5" && n.n_predict >= 6) return true;
    return false;
  };
  const auto o = reduce(burst_of(7), moves);
  ASSERT_EQ(o.minimal.neighbours.size(), 1u);
  EXPECT_EQ(o.minimal.neighbours[0].prompt, "n5");
  EXPECT_EQ(o.minimal.neighbours[0].n_predict, 6);
  EXPECT_TRUE(moves(o.minimal));
  EXPECT_EQ(audit::describe(o.minimal), "target (n_predict 16) + 1 neighbour (n_predict 6)");
}

TEST(repro_reduction, a_pair_that_moves_only_together_is_kept_whole_and_the_result_is_one_minimal) {
  auto moves = [](const audit::repro_case& c) {
    const auto p = prompts(c);
    return p.count("n1") && p.count("n6");
  };
  const auto o = reduce(burst_of(8, 4), moves);
  EXPECT_EQ(prompts(o.minimal), (std::set<std::string>{"n1", "n6"}));
  // 1-minimal: removing either one no longer moves the target.
  for (std::size_t drop = 0; drop < o.minimal.neighbours.size(); ++drop) {
    auto fewer = o.minimal;
    fewer.neighbours.erase(fewer.neighbours.begin() + static_cast<long>(drop));
    EXPECT_FALSE(moves(fewer));
  }
  for (const auto& n : o.minimal.neighbours) EXPECT_EQ(n.n_predict, 1) << "any length moves it: the shortest is kept";
}

TEST(repro_reduction, a_case_that_needs_every_neighbour_keeps_them_all_and_unknown_never_reduces) {
  auto all = [](const audit::repro_case& c) { return c.neighbours.size() == 5; };
  const auto o = reduce(burst_of(5, 1), all);
  EXPECT_EQ(o.minimal.neighbours.size(), 5u);

  // UNKNOWN (not decided) keeps nothing smaller, like SAME.
  audit::repro_reduction r(burst_of(4));
  int tried = 0;
  while (auto candidate = r.next()) {
    ++tried;
    r.decide(search_decision::unknown);
  }
  EXPECT_GT(tried, 0);
  EXPECT_EQ(r.minimal(), burst_of(4));
  EXPECT_TRUE(r.done());
}

TEST(repro_reduction, stopped_early_it_keeps_the_smallest_case_found_by_then) {
  auto moves = [](const audit::repro_case& c) { return prompts(c).count("n0") > 0; };
  const auto full = reduce(burst_of(6), moves);
  const auto some = reduce(burst_of(6), moves, 1);  // one candidate: the first half, which holds n0
  EXPECT_EQ(some.tried, 1);
  EXPECT_EQ(prompts(some.minimal), (std::set<std::string>{"n0", "n1", "n2"}));
  EXPECT_LT(full.minimal.neighbours.size(), some.minimal.neighbours.size());
  // Stopped inside the length search: the neighbour's length is the shortest shown so far.
  audit::repro_reduction r(burst_of(1, 16));
  auto first = r.next();
  ASSERT_TRUE(first);
  EXPECT_EQ(r.phase(), "lengths");
  EXPECT_EQ(first->neighbours[0].n_predict, 8);
  r.decide(search_decision::different);
  EXPECT_EQ(r.minimal().neighbours[0].n_predict, 8);
}

TEST(repro_reduction, a_burst_without_neighbours_has_nothing_to_try) {
  audit::repro_reduction r(burst_of(0));
  EXPECT_FALSE(r.next());
  EXPECT_TRUE(r.done());
  EXPECT_EQ(r.minimal(), burst_of(0));
}
