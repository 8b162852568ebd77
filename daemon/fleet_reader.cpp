// Reading the fleet. The db lambda is a named local (GCC 12, see db_call.hpp).
#include "fleet_reader.hpp"

#include "db_call.hpp"

namespace logitaudit::daemon {

boost::asio::awaitable<api::fleet_view> fleet_reader::fleet() {
  auto read = [database = database_, self = self_, ttl = ttl_s_](storage::store& s) {
    api::fleet_view v;
    v.database = database;
    v.self = self.id;
    v.lease_ttl_s = ttl;
    if (auto* f = s.fleet()) {
      v.shared = true;
      v.members = f->members();
      v.leases = f->leases();
    } else {
      v.members.push_back(self);
    }
    return v;
  };
  co_return co_await on_db(db_, std::move(read));
}

}  // namespace logitaudit::daemon
