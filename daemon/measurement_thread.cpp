// The measuring thread's scheduling (measurement_thread.hpp).
#include "measurement_thread.hpp"

#include <sched.h>

#include <cerrno>
#include <cstring>

#include "clients/machine.hpp"

namespace logitaudit::daemon {

measurement_scheduling raise_this_thread(int priority) {
  measurement_scheduling s;
  if (priority > 0) {
    sched_param p{};
    p.sched_priority = priority;
    // Reset on fork: neither the threads it starts nor the servers it spawns inherit the policy.
    const int rc = ::sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &p) == 0 ? 0 : errno;
    s.realtime = rc == 0;
    if (rc == 0) {
      s.description = clients::this_thread_scheduling();
      return s;
    }
    clients::set_this_thread_slice(100'000);  // where the kernel has EEVDF slices; harmless elsewhere
    s.description = clients::this_thread_scheduling() + " (SCHED_FIFO " + std::to_string(priority) +
                    " refused: " + std::strerror(rc) + ")";
    return s;
  }
  s.description = clients::this_thread_scheduling() + " (measurement_priority 0)";
  return s;
}

}  // namespace logitaudit::daemon
