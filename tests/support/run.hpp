// Drives one coroutine to completion on an io_context for tests and benchmarks; throws
// instead of hanging when it does not finish within the limit.
#pragma once

#include <boost/asio.hpp>
#include <chrono>
#include <exception>
#include <optional>
#include <stdexcept>

namespace logitaudit::test_support {

template <class T>
T run(boost::asio::io_context& io, boost::asio::awaitable<T> task,
      std::chrono::steady_clock::duration limit = std::chrono::minutes(3)) {
  std::optional<T> out;
  std::exception_ptr error;
  boost::asio::co_spawn(io, std::move(task), [&](std::exception_ptr e, T v) {
    error = e;
    if (!e) out.emplace(std::move(v));
  });
  io.run_for(limit);
  io.restart();
  if (error) std::rethrow_exception(error);
  if (!out) throw std::runtime_error("the operation did not finish in time");
  return std::move(*out);
}

}  // namespace logitaudit::test_support
