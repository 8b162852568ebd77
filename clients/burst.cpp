// Warm connections, prepared wires, then the barrier itself: one loop that writes all C
// requests back to back with one non-blocking send() each, before any response is read.
// Nothing else runs between two sends: no co_await, so no executor hop, strand post or timer;
// one thread, the sockets in request order. The launch spread is C send() calls long. With
// last-byte sync, a first loop writes each request but its final byte (the server cannot act
// on any of them yet), and the barrier sends C single bytes. Over TLS each write is a record,
// written whole: the spread is then C record encryptions long.
#include "burst.hpp"

#include <sched.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>

#include "audit/evidence.hpp"
#include "join.hpp"

namespace logitaudit::clients {
namespace {

net::awaitable<client_result<audit::logit_stream>> burst_member(backend* b, client_result<connection> c,
                                                                prepared_completion p, std::size_t sent,
                                                                std::int64_t sent_ns) {
  if (!c) co_return unexpected{c.error()};
  co_return co_await b->complete_on(std::move(*c), std::move(p), sent, sent_ns);
}

// A request that joins late: written whole once `gate` opens (the first request has received
// its tokens, or has ended), then read like the others.
net::awaitable<client_result<audit::logit_stream>> late_member(backend* b, client_result<connection> c,
                                                               prepared_completion p, std::shared_ptr<bool> open,
                                                               std::shared_ptr<net::steady_timer> gate) {
  if (!*open) co_await gate->async_wait(token_t{});
  if (!c) co_return unexpected{c.error()};
  co_return co_await b->complete_on(std::move(*c), std::move(p), 0, 0);
}

net::awaitable<client_result<audit::logit_stream>> first_member(backend* b, client_result<connection> c,
                                                                prepared_completion p, std::size_t sent,
                                                                std::int64_t sent_ns, std::function<void()> ended) {
  auto r = co_await burst_member(b, std::move(c), std::move(p), sent, sent_ns);
  ended();
  co_return r;
}

net::awaitable<client_result<http_exchange>> warm_one(http_client* h) {
  co_return co_await h->request(http::verb::get, "/health");
}

net::awaitable<client_result<connection>> acquire_one(http_client* h) { co_return co_await h->acquire(); }

}  // namespace

const char* to_string(burst_write_mode m) {
  switch (m) {
    case burst_write_mode::automatic: return "automatic";
    case burst_write_mode::last_byte: return "last_byte";
    case burst_write_mode::whole: return "whole";
  }
  return "?";
}

burst_write_mode choose_write_mode(std::size_t width, bool realtime_writer) {
  return realtime_writer || width >= kWholeWritesFromWidth ? burst_write_mode::whole : burst_write_mode::last_byte;
}

std::size_t burst_result::failures() const {
  return static_cast<std::size_t>(std::count_if(results.begin(), results.end(), [](const auto& r) { return !r; }));
}

burst_timing measure_burst(const std::vector<std::pair<std::int64_t, std::int64_t>>& intervals) {
  burst_timing t;
  if (intervals.empty()) return t;
  std::int64_t first_write = intervals[0].first, last_write = first_write;
  std::int64_t first_end = intervals[0].second, last_end = first_end;
  for (const auto& [w, e] : intervals) {
    first_write = std::min(first_write, w);
    last_write = std::max(last_write, w);
    first_end = std::min(first_end, e);
    last_end = std::max(last_end, e);
  }
  t.launch_spread_ns = last_write - first_write;
  t.wall_ns = last_end - first_write;
  const std::int64_t together = std::max<std::int64_t>(0, first_end - last_write);
  t.overlap = t.wall_ns > 0 ? static_cast<double>(together) / static_cast<double>(t.wall_ns) : 0.0;
  return t;
}

net::awaitable<burst_result> run_burst(backend& b, std::vector<completion_request> requests, burst_options o) {
  auto ex = co_await net::this_coro::executor;
  burst_result out;
  const std::size_t c = requests.size();
  if (c == 0) co_return out;
  if (o.total_slots > 0 && static_cast<std::int64_t>(c) > o.total_slots)
    out.warnings.push_back("burst of " + std::to_string(c) + " exceeds the server's " +
                           std::to_string(o.total_slots) + " slots: the excess queues instead of batching");

  // 1. Connections: C of them open (and, warm, each proven by one exchange) before any write.
  if (o.warm && b.http().idle_connections() < c) {
    std::vector<net::awaitable<client_result<http_exchange>>> warmups;
    for (std::size_t i = b.http().idle_connections(); i < c; ++i) warmups.push_back(warm_one(&b.http()));
    co_await join_all(std::move(warmups));
  }
  std::vector<net::awaitable<client_result<connection>>> opens;
  for (std::size_t i = 0; i < c; ++i) opens.push_back(acquire_one(&b.http()));
  auto connections = co_await join_all(std::move(opens));
  for (auto& conn : connections)  // so that a send() in the write loop can never block
    if (conn) conn->prepare_burst();

  // The server's counters are cumulative: the burst's own average is the difference. Kinds
  // that expose none answer nullopt. Then no connection but the burst's stays open: an idle
  // keep-alive connection holds one of the server's few HTTP threads, and a burst as wide as
  // them found its last members unserved until that thread let go (5 s), then closed.
  b.http().close_idle();
  const auto before = co_await b.read_decode_counters();
  b.http().close_idle();

  if (o.settle.count() > 0) {
    net::steady_timer settle(ex, o.settle);
    co_await settle.async_wait(token_t{});
  }

  // 2. Everything is built before the first byte leaves.
  std::vector<prepared_completion> wires;
  for (const auto& r : requests) wires.push_back(b.prepare(r));
  // Late joiners stay out of the barrier: each waits on a gate that the first request's token
  // count opens (or its end, should it end first: the joiner then comes after, as measured).
  struct late_gate {
    std::size_t after = 0;
    std::shared_ptr<bool> open = std::make_shared<bool>(false);
    std::shared_ptr<net::steady_timer> timer;
  };
  std::vector<std::optional<late_gate>> late(c);
  bool any_late = false;
  for (std::size_t i = 1; i < c; ++i)
    if (requests[i].join_after_tokens > 0) {
      late[i] = late_gate{static_cast<std::size_t>(requests[i].join_after_tokens), std::make_shared<bool>(false),
                          std::make_shared<net::steady_timer>(ex, net::steady_timer::time_point::max())};
      any_late = true;
    }
  auto release = [late](std::size_t tokens) mutable {
    for (auto& g : late)
      if (g && !*g->open && tokens >= g->after) {
        *g->open = true;
        g->timer->cancel();
      }
  };
  if (any_late) wires[0].on_tokens = release;
  std::vector<std::size_t> sent(c, 0);
  std::vector<std::int64_t> sent_ns(c, 0);

  // 3. The barrier: every request written in one tight loop. A send() that the socket buffer
  //    cannot take whole (would_block) or that fails leaves the rest to the exchange, which
  //    writes it or reports the error.
  //    With last-byte sync the prefixes go first; a prefix the socket did not take whole
  //    leaves that request to the exchange (it is then written whole, late, and the spread
  //    shows it).
  const int policy = ::sched_getscheduler(0) & ~SCHED_RESET_ON_FORK;  // the daemon's thread sets that flag
  out.realtime_writer = policy == SCHED_FIFO || policy == SCHED_RR;
  out.write_mode = o.write_mode == burst_write_mode::automatic ? choose_write_mode(c, out.realtime_writer) : o.write_mode;
  const bool last_byte = out.write_mode == burst_write_mode::last_byte;
  std::vector<bool> held(c, false);
  if (last_byte) {
    for (std::size_t i = 0; i < c; ++i) {
      if (!connections[i] || wires[i].wire.size() < 2 || late[i]) continue;
      const std::size_t prefix = wires[i].wire.size() - 1;
      sent_ns[i] = steady_ns();
      boost::system::error_code ec;
      sent[i] = connections[i]->write_now(net::buffer(wires[i].wire.data(), prefix), ec);
      if (ec) sent[i] = 0;
      held[i] = !ec && sent[i] == prefix;
    }
  }
  for (std::size_t i = 0; i < c; ++i) {
    if (!connections[i] || late[i] || (last_byte && !held[i] && sent[i] > 0)) continue;
    sent_ns[i] = steady_ns();
    boost::system::error_code ec;
    const std::size_t n = connections[i]->write_now(net::buffer(wires[i].wire) + sent[i], ec);
    if (!ec) sent[i] += n;
  }

  // 4. Then every response is read concurrently.
  std::vector<net::awaitable<client_result<audit::logit_stream>>> members;
  for (std::size_t i = 0; i < c; ++i) {
    if (late[i])
      members.push_back(late_member(&b, std::move(connections[i]), std::move(wires[i]), late[i]->open, late[i]->timer));
    else if (i == 0 && any_late)
      members.push_back(first_member(&b, std::move(connections[i]), std::move(wires[i]), sent[i], sent_ns[i],
                                     [release]() mutable { release(std::numeric_limits<std::size_t>::max()); }));
    else
      members.push_back(burst_member(&b, std::move(connections[i]), std::move(wires[i]), sent[i], sent_ns[i]));
  }
  out.results = co_await join_all(std::move(members));

  if (before) {
    if (auto after = co_await b.read_decode_counters()) out.busy_slots_per_decode = busy_slots_between(*before, *after);
  }

  std::vector<std::pair<std::int64_t, std::int64_t>> intervals, barrier;
  for (std::size_t i = 0; i < c; ++i)
    if (const auto& r = out.results[i]) {
      intervals.emplace_back(r->client.write_ns, r->client.last_byte_ns);
      if (!late[i]) barrier.emplace_back(r->client.write_ns, r->client.last_byte_ns);
    }
  const auto t = measure_burst(intervals);
  // The launch spread is the barrier's: a late joiner is late on purpose.
  out.launch_spread_ns = any_late ? measure_burst(barrier).launch_spread_ns : t.launch_spread_ns;
  out.wall_ns = t.wall_ns;
  out.overlap = t.overlap;
  std::vector<const audit::logit_stream*> answered;
  for (const auto& r : out.results)
    if (r) answered.push_back(&*r);
  out.timed_concurrency = audit::timed_concurrency(answered, t.wall_ns);
  if (out.failures() > 0) out.warnings.push_back(std::to_string(out.failures()) + " of " + std::to_string(c) + " requests failed");
  co_return out;
}

}  // namespace logitaudit::clients
