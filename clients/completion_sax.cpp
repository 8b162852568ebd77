// The SAX handler: a stack of frames says where in the document each event lands.
#include "completion_sax.hpp"

#include <limits>

#include <nlohmann/json.hpp>

namespace logitaudit::clients {
namespace {

using json = nlohmann::json;

enum class frame { root, probs, prob, top, top_entry, timings, error, ids, skip };

class handler : public json::json_sax_t {
 public:
  handler(audit::logit_stream& s, completion_object& o, std::vector<std::int64_t>* times, std::int64_t now)
      : s_(s), o_(o), times_(times), now_(now) {}

  std::optional<std::string> shape_error;
  bool syntax_error = false;

  bool null() override { return scalar(kind::null); }
  bool boolean(bool v) override {
    if (top_is(frame::root) && key_ == "stop") o_.stop = v;
    return scalar(kind::other);
  }
  bool number_integer(number_integer_t v) override { return integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return integer(static_cast<std::int64_t>(v)); }
  // Logprobs arrive as decimals printed from float32; nlohmann reads them with strtod, which
  // rounds correctly, so the same text always gives the same double.
  bool number_float(number_float_t v, const string_t& text) override {
    if (in_entry() && key_ == "logprob") {
      o_.written.add(text, v);
      return set_logprob(v);
    }
    if (top_is(frame::prob) && key_ == "prob") post_sampling_ = true;
    if (top_is(frame::timings)) {
      if (key_ == "prompt_ms") o_.timings.prompt_ms = v;
      else if (key_ == "predicted_ms") o_.timings.predicted_ms = v;
    }
    return scalar(kind::other);
  }
  bool string(string_t& v) override {
    if (in_entry() && key_ == "token") {
      (top_is(frame::prob) ? step_.text : entry_.text) = std::move(v);
      return true;
    }
    if (top_is(frame::error) && key_ == "message") o_.error = std::move(v);
    if (top_is(frame::root)) {
      if (key_ == "content") o_.content = std::move(v);
      else if (key_ == "stop_type") o_.stop_type = std::move(v);
      else if (key_ == "error") o_.error = "\"" + v + "\"";
    }
    return scalar(kind::other);
  }
  bool binary(binary_t&) override { return scalar(kind::other); }

  bool start_object(std::size_t) override {
    if (stack_.empty()) return push(frame::root);
    if (top_is(frame::skip)) return push(frame::skip);
    if (top_is(frame::probs)) {
      step_ = {};
      step_id_ = step_lp_ = got_top_ = saw_probs_ = post_sampling_ = false;
      return push(frame::prob);
    }
    if (top_is(frame::top)) {
      entry_ = {};
      entry_id_ = entry_lp_ = false;
      return push(frame::top_entry);
    }
    if (top_is(frame::root) && key_ == "timings") return push(frame::timings);
    if (top_is(frame::root) && key_ == "error") {
      o_.error = "(an error object without a message)";
      return push(frame::error);
    }
    return wrong_or_skip();
  }
  bool end_object() override {
    const frame f = stack_.back();
    stack_.pop_back();
    if (f == frame::prob) {
      const std::string at = "completion_probabilities[" + std::to_string(s_.tokens.size()) + "]";
      if (saw_probs_ && !got_top_)
        return fail(at + " has the old `probs` shape (llama.cpp before the logprob API of 2025); "
                         "upgrade llama-server: logprobs are needed, not probabilities");
      if (!step_id_) return fail(at + ".id is missing or not an integer");
      if (post_sampling_ && !step_lp_ && !got_top_) {
        // post_sampling_probs: probabilities after the sampling chain, which are not logprobs:
        // the id alone is kept (NaN logprob, no top-k), compared by id like n_probs 0.
        step_.logprob = std::numeric_limits<double>::quiet_NaN();
        step_lp_ = got_top_ = true;
      }
      if (!step_lp_) return fail(at + ".logprob is missing or not a number");
      if (!got_top_) return fail(at + ".top_logprobs is missing or not an array");
      s_.tokens.push_back(std::move(step_));
      if (times_) times_->push_back(now_);
    } else if (f == frame::top_entry) {
      if (!entry_id_ || !entry_lp_)
        return fail("completion_probabilities[" + std::to_string(s_.tokens.size()) + "].top_logprobs[" +
                    std::to_string(step_.top.size()) + "] needs an integer id and a number logprob");
      step_.top.push_back(std::move(entry_));
    }
    return true;
  }
  bool start_array(std::size_t) override {
    if (stack_.empty()) return fail("response is not a JSON object");
    if (top_is(frame::skip)) return push(frame::skip);
    if (top_is(frame::root) && key_ == "completion_probabilities") {
      o_.has_probabilities = true;
      return push(frame::probs);
    }
    if (top_is(frame::prob) && key_ == "top_logprobs") {
      got_top_ = true;
      return push(frame::top);
    }
    if (top_is(frame::prob) && key_ == "probs") saw_probs_ = true;
    if (top_is(frame::root) && key_ == "tokens") return push(frame::ids);  // return_tokens: the ids alone (n_probs 0)
    return wrong_or_skip();
  }
  bool end_array() override {
    stack_.pop_back();
    return true;
  }
  bool key(string_t& k) override {
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const json::exception&) override {
    syntax_error = true;
    return false;
  }

 private:
  enum class kind { null, other };

  bool top_is(frame f) const { return !stack_.empty() && stack_.back() == f; }
  bool in_entry() const { return top_is(frame::prob) || top_is(frame::top_entry); }
  bool push(frame f) {
    stack_.push_back(f);
    return true;
  }
  bool fail(std::string message) {
    if (!shape_error) shape_error = std::move(message);
    return false;
  }
  // A nested value under a key we do not read is skipped; under a key we do, it is wrong.
  bool wrong_or_skip() {
    if (top_is(frame::root) && key_ == "completion_probabilities") return fail("completion_probabilities is not an array");
    if (in_entry() && (key_ == "id" || key_ == "logprob")) return fail_entry_type();
    if (top_is(frame::prob) && key_ == "top_logprobs") return fail("completion_probabilities[" + std::to_string(s_.tokens.size()) + "].top_logprobs is not an array");
    if (top_is(frame::probs)) return fail("completion_probabilities entries must be objects");
    if (top_is(frame::top)) return fail("top_logprobs entries must be objects");
    return push(frame::skip);
  }
  bool fail_entry_type() {
    const std::string at = "completion_probabilities[" + std::to_string(s_.tokens.size()) + "]";
    if (top_is(frame::prob)) return fail(at + "." + key_ + " has the wrong type");
    return fail(at + ".top_logprobs[" + std::to_string(step_.top.size()) + "] needs an integer id and a number logprob");
  }
  bool scalar(kind) {
    if (in_entry() && (key_ == "id" || key_ == "logprob")) return fail_entry_type();
    if (top_is(frame::probs)) return fail("completion_probabilities entries must be objects");
    if (top_is(frame::top)) return fail("top_logprobs entries must be objects");
    if (stack_.empty()) return fail("response is not a JSON object");
    return true;
  }
  bool integer(std::int64_t v) {
    if (top_is(frame::ids)) {
      o_.token_ids.push_back(v);
      return true;
    }
    if (in_entry()) {
      if (key_ == "id") {
        (top_is(frame::prob) ? step_.key : entry_.key) = v;
        (top_is(frame::prob) ? step_id_ : entry_id_) = true;
        return true;
      }
      if (key_ == "logprob") {
        o_.written.add(std::to_string(v), static_cast<double>(v));
        return set_logprob(static_cast<double>(v));
      }
      if (key_ == "prob" && top_is(frame::prob)) post_sampling_ = true;
      return true;
    }
    if (top_is(frame::root)) {
      if (key_ == "tokens_evaluated") o_.tokens_evaluated = v;
      else if (key_ == "tokens_cached") o_.tokens_cached = v;
      else if (key_ == "id_slot") o_.id_slot = v;
    } else if (top_is(frame::timings)) {
      if (key_ == "prompt_n") o_.timings.prompt_n = v;
      else if (key_ == "predicted_n") o_.timings.predicted_n = v;
      else if (key_ == "cache_n") o_.timings.cache_n = v;
      else if (key_ == "prompt_ms") o_.timings.prompt_ms = static_cast<double>(v);
      else if (key_ == "predicted_ms") o_.timings.predicted_ms = static_cast<double>(v);
    }
    return scalar(kind::other);
  }
  bool set_logprob(double v) {
    (top_is(frame::prob) ? step_.logprob : entry_.logprob) = v;
    (top_is(frame::prob) ? step_lp_ : entry_lp_) = true;
    return true;
  }

  audit::logit_stream& s_;
  completion_object& o_;
  std::vector<std::int64_t>* times_;
  std::int64_t now_;
  std::vector<frame> stack_;
  std::string key_;
  audit::token_step step_;
  audit::top_logprob entry_;
  bool step_id_ = false, step_lp_ = false, got_top_ = false, saw_probs_ = false;
  bool post_sampling_ = false;  // the entry carries "prob" (post_sampling_probs), not "logprob"
  bool entry_id_ = false, entry_lp_ = false;
};

}  // namespace

client_result<completion_object> read_completion_object(std::string_view text, audit::logit_stream& into,
                                                        std::vector<std::int64_t>* token_times, std::int64_t now_ns) {
  completion_object o;
  const std::size_t before = into.tokens.size();
  handler h(into, o, token_times, now_ns);
  const bool ok = json::sax_parse(text.begin(), text.end(), &h, json::input_format_t::json, true);
  if (!ok || h.shape_error || h.syntax_error) {
    into.tokens.resize(before);  // nothing half-appended
    if (token_times) token_times->resize(std::min(token_times->size(), before));
    // A shape error found early in a document that is not JSON at all is a syntax error.
    if (h.shape_error && !h.syntax_error && json::accept(text))
      return unexpected{client_error{client_errc::unexpected_shape, *h.shape_error}};
    return unexpected{client_error{client_errc::malformed_json, "response body is not valid JSON"}};
  }
  return o;
}

namespace {

// Numbers under a logprob key, with their text as written.
class number_scanner : public json::json_sax_t {
 public:
  explicit number_scanner(audit::number_format& f) : f_(f) {}

  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  // An integer's text is made only where it is kept (token ids and byte values are not).
  bool number_integer(number_integer_t v) override {
    return wanted(false) ? number(std::to_string(v), static_cast<double>(v)) : scalar();
  }
  bool number_unsigned(number_unsigned_t v) override {
    return wanted(false) ? number(std::to_string(v), static_cast<double>(v)) : scalar();
  }
  bool number_float(number_float_t v, const string_t& text) override { return wanted(true) ? number(text, v) : scalar(); }
  bool string(string_t&) override { return scalar(); }
  bool binary(binary_t&) override { return scalar(); }
  bool start_object(std::size_t) override {
    stack_.push_back({false, key_});
    key_.clear();
    return true;
  }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool end_object() override { return pop(); }
  bool start_array(std::size_t) override {
    stack_.push_back({true, key_});
    key_.clear();
    return true;
  }
  bool end_array() override { return pop(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  struct level {
    bool array;
    std::string key;  // the member that holds this object or array
  };
  bool scalar() {
    key_.clear();
    return true;
  }
  // Whether the number here is a logprob.
  bool wanted(bool decimal) const {
    const bool in_array = !stack_.empty() && stack_.back().array;
    const std::string& holder = in_array ? stack_.back().key : key_;
    // Legacy OpenAI: token_logprobs is an array of numbers, top_logprobs an array of objects
    // whose every member is a logprob.
    const bool legacy_top = decimal && !in_array && key_ != "id" && stack_.size() >= 2 && stack_[stack_.size() - 2].array &&
                            stack_[stack_.size() - 2].key == "top_logprobs";
    return holder == "logprob" || (in_array && holder == "token_logprobs") || legacy_top;
  }
  bool number(const std::string& text, double v) {
    f_.add(text, v);
    key_.clear();
    return true;
  }
  bool pop() {
    if (stack_.empty()) return false;
    stack_.pop_back();
    key_.clear();
    return true;
  }
  audit::number_format& f_;
  std::vector<level> stack_;
  std::string key_;
};

void scan_document(std::string_view json_text, audit::number_format& into) {
  audit::number_format seen;
  number_scanner h(seen);
  if (json::sax_parse(json_text, &h, json::input_format_t::json, false)) into.merge(seen);
}

}  // namespace

void scan_logprob_text(std::string_view body, bool event_stream, audit::number_format& into) {
  if (!event_stream) {
    scan_document(body, into);
    return;
  }
  for (std::size_t i = 0; i < body.size();) {
    auto nl = body.find('\n', i);
    if (nl == std::string_view::npos) nl = body.size();
    auto line = body.substr(i, nl - i);
    if (line.starts_with("data:")) {
      line.remove_prefix(5);
      scan_document(line, into);
    }
    i = nl + 1;
  }
}

}  // namespace logitaudit::clients
