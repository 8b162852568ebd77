#include "repro_search.hpp"

#include <algorithm>

namespace logitaudit::audit {

repro_case burst_repro_case(const audit_plan& plan, const request_group& g, std::size_t target) {
  auto as_request = [&](const planned_request& p) {
    repro_request q;
    q.prompt = p.prompt;
    q.temperature = p.params.temperature;
    q.seed = p.params.seed;
    q.n_predict = p.n_predict.value_or(plan.n_predict);
    q.join_after = p.join_after_tokens;
    return q;
  };
  repro_case c;
  c.top_k = plan.top_k;
  c.stream = g.decode_steps;
  c.target = as_request(g.requests.at(target));
  c.target.join_after = 0;
  for (std::size_t i = 0; i < g.requests.size(); ++i)
    if (i != target) c.neighbours.push_back(as_request(g.requests[i]));
  return c;
}

std::string describe(const repro_case& c) {
  std::string s = "target (n_predict " + std::to_string(c.target.n_predict) + ") + " + std::to_string(c.neighbours.size()) +
                  (c.neighbours.size() == 1 ? " neighbour" : " neighbours");
  if (!c.neighbours.empty()) {
    s += " (n_predict";
    for (std::size_t i = 0; i < c.neighbours.size(); ++i) s += (i ? ", " : " ") + std::to_string(c.neighbours[i].n_predict);
    s += ")";
  }
  return s;
}

repro_reduction::repro_reduction(repro_case full) : full_(std::move(full)) {
  for (std::size_t i = 0; i < full_.neighbours.size(); ++i) kept_.push_back(i);
}

repro_case repro_reduction::with(const std::vector<std::size_t>& keep) const {
  repro_case out = full_;
  out.neighbours.clear();
  for (auto i : keep) out.neighbours.push_back(full_.neighbours[i]);
  return out;
}

// The kept neighbours in min(n, size) chunks of nearly equal size, in their order.
std::vector<std::vector<std::size_t>> repro_reduction::chunks() const {
  std::vector<std::vector<std::size_t>> out(std::min(n_, kept_.size()));
  for (std::size_t i = 0; i < kept_.size(); ++i) out[i * out.size() / kept_.size()].push_back(kept_[i]);
  return out;
}

void repro_reduction::finish_requests() {
  reduced_ = with(kept_);
  phase_ = stage::lengths;
  k_ = 0;
  lo_ = 1;
  hi_ = reduced_.neighbours.empty() ? 0 : reduced_.neighbours[0].n_predict;
}

std::optional<repro_case> repro_reduction::next() {
  while (phase_ == stage::requests) {
    if (kept_.size() < 2) {
      finish_requests();
      break;
    }
    const auto parts = chunks();
    // Complements are tried only where they differ from the chunks (more than 2 of them).
    if (complements_ && parts.size() <= 2) chunk_ = parts.size();
    if (chunk_ < parts.size()) {
      if (!complements_) {
        pending_ = parts[chunk_];
      } else {
        pending_.clear();
        for (auto i : kept_)
          if (std::find(parts[chunk_].begin(), parts[chunk_].end(), i) == parts[chunk_].end()) pending_.push_back(i);
      }
      return with(pending_);
    }
    if (!complements_) {
      complements_ = true;
      chunk_ = 0;
      continue;
    }
    // Nothing smaller moved the target at this granularity: a finer one, or the end.
    if (n_ >= kept_.size()) {
      finish_requests();
      break;
    }
    n_ = std::min(n_ * 2, kept_.size());
    complements_ = false;
    chunk_ = 0;
  }
  while (phase_ == stage::lengths) {
    if (k_ >= reduced_.neighbours.size()) {
      phase_ = stage::done;
      break;
    }
    if (lo_ < hi_) {
      mid_ = (lo_ + hi_) / 2;
      auto trial = reduced_;
      trial.neighbours[k_].n_predict = mid_;
      return trial;
    }
    reduced_.neighbours[k_].n_predict = hi_;
    if (++k_ < reduced_.neighbours.size()) {
      lo_ = 1;
      hi_ = reduced_.neighbours[k_].n_predict;
    }
  }
  return std::nullopt;
}

void repro_reduction::decide(search_decision d) {
  const bool moved = d == search_decision::different;
  if (phase_ == stage::requests) {
    if (moved) {
      const bool was_complement = complements_;
      kept_ = pending_;
      n_ = was_complement ? std::max<std::size_t>(n_ - 1, 2) : 2;
      complements_ = false;
      chunk_ = 0;
    } else {
      ++chunk_;
    }
  } else if (phase_ == stage::lengths) {
    if (moved) hi_ = mid_;
    else lo_ = mid_ + 1;
  }
}

repro_case repro_reduction::minimal() const {
  if (phase_ == stage::requests) return with(kept_);
  auto out = reduced_;
  if (phase_ == stage::lengths && k_ < out.neighbours.size()) out.neighbours[k_].n_predict = hi_;
  return out;
}

}  // namespace logitaudit::audit
