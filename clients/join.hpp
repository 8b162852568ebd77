// Awaiting many coroutines at once on one executor.
#pragma once

#include <boost/asio.hpp>
#include <exception>
#include <optional>
#include <vector>

namespace logitaudit::clients {

// Runs every task concurrently on the current executor and returns their results in task
// order. Suspends until all are done; rethrows the first exception any task threw, after
// all have finished. The executor must be single-threaded (or a strand).
template <class T>
boost::asio::awaitable<std::vector<T>> join_all(std::vector<boost::asio::awaitable<T>> tasks) {
  namespace net = boost::asio;
  auto ex = co_await net::this_coro::executor;
  std::vector<T> out(tasks.size());
  std::exception_ptr first_error;
  std::size_t remaining = tasks.size();
  net::steady_timer all_done(ex, net::steady_timer::time_point::max());
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    auto on_done = [&out, &first_error, &remaining, &all_done, i](std::exception_ptr e, T r) {
      if (e && !first_error) first_error = e;
      if (!e) out[i] = std::move(r);
      if (--remaining == 0) all_done.cancel();
    };
    net::co_spawn(ex, std::move(tasks[i]), on_done);
  }
  if (remaining > 0) co_await all_done.async_wait(net::as_tuple(net::use_awaitable));
  if (first_error) std::rethrow_exception(first_error);
  co_return out;
}

}  // namespace logitaudit::clients
