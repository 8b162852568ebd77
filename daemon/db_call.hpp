// Reaching the database thread from a coroutine without blocking the thread it runs on.
#pragma once

#include <boost/asio.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>

#include "storage/db_worker.hpp"

namespace logitaudit::daemon {

namespace net = boost::asio;

template <class R>
net::awaitable<R> on_db_task(storage::db_worker* db, std::shared_ptr<std::function<R(storage::store&)>> fn) {
  auto ex = co_await net::this_coro::executor;
  auto result = std::make_shared<std::optional<R>>();
  auto error = std::make_shared<std::exception_ptr>();
  auto done = std::make_shared<net::steady_timer>(ex, net::steady_timer::time_point::max());
  // The task hands its reference to the timer over to the completion it posts: a task the db
  // thread destroys late must not be the last owner of a timer whose io_context is gone.
  db->post([result, error, wake = done, ex, fn](storage::store& s) mutable {
    try {
      result->emplace((*fn)(s));
    } catch (...) {
      *error = std::current_exception();
    }
    net::post(ex, [wake = std::move(wake)] { wake->cancel(); });
  });
  co_await done->async_wait(net::as_tuple(net::use_awaitable));
  if (*error) std::rethrow_exception(*error);
  co_return std::move(**result);
}

// Runs `fn(store)` on the db thread and resumes the caller on its executor with the result;
// the caller never blocks, and an exception from `fn` is rethrown in the caller. Not itself
// a coroutine: GCC 12 miscopies capturing lambdas passed to coroutines, so the lambda is
// moved into a shared std::function first.
template <class F>
auto on_db(storage::db_worker& db, F fn) {
  using R = decltype(fn(std::declval<storage::store&>()));
  return on_db_task<R>(&db, std::make_shared<std::function<R(storage::store&)>>(std::move(fn)));
}

// on_db, tried again while the database server is unreachable (storage_error, kind
// unavailable: a PostgreSQL restart, or group writes held until it answers), every second up
// to `patience`; then the last error is thrown. `fn` must be safe to run again.
template <class F>
net::awaitable<decltype(std::declval<F>()(std::declval<storage::store&>()))> on_db_patient(
    storage::db_worker& db, F fn, std::chrono::seconds patience = std::chrono::seconds(150)) {
  using R = decltype(fn(std::declval<storage::store&>()));
  auto shared = std::make_shared<std::function<R(storage::store&)>>(std::move(fn));
  const auto deadline = std::chrono::steady_clock::now() + patience;
  net::steady_timer pause(co_await net::this_coro::executor);
  for (;;) {
    std::exception_ptr unavailable;
    try {
      co_return co_await on_db_task<R>(&db, shared);
    } catch (const storage::storage_error& e) {
      if (e.why != storage::storage_error::kind::unavailable || std::chrono::steady_clock::now() > deadline) throw;
      unavailable = std::current_exception();
    }
    pause.expires_after(std::chrono::seconds(1));
    co_await pause.async_wait(net::as_tuple(net::use_awaitable));
  }
}

}  // namespace logitaudit::daemon
