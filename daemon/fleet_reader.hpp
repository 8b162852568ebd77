// The fleet as GET /v1/fleet shows it, read from the database (members and leases live
// there), or this daemon alone when its database is a SQLite file.
#pragma once

#include "api/fleet_routes.hpp"
#include "storage/db_worker.hpp"

namespace logitaudit::daemon {

class fleet_reader final : public api::fleet_service {
 public:
  // `self` describes this daemon; `ttl_s` is its lease time (0 without a fleet).
  fleet_reader(storage::db_worker& db, std::string database, storage::fleet_member self, int ttl_s)
      : db_(db), database_(std::move(database)), self_(std::move(self)), ttl_s_(ttl_s) {}
  boost::asio::awaitable<api::fleet_view> fleet() override;

 private:
  storage::db_worker& db_;
  std::string database_;
  storage::fleet_member self_;
  int ttl_s_;
};

}  // namespace logitaudit::daemon
