// The thread that measures. A burst's launch (its requests written back to back) and a load
// level's arrivals (each sent at its scheduled time) are timed on the audits' thread; on a
// busy host an ordinary thread that wakes waits for the CPU behind whatever runs there (the
// daemon's API serving many readers, the server itself, any neighbour) for up to a scheduler
// slice, milliseconds. The daemon therefore asks for the real-time policy SCHED_FIFO for that
// thread, which preempts every ordinary thread on wake. A system that refuses it (no
// CAP_SYS_NICE and RLIMIT_RTPRIO 0) leaves the thread ordinary with a short scheduler slice
// (100 us, which any thread may ask for on Linux 6.12 on: it runs sooner after it wakes), and
// every fingerprint says which it was (observed "measurement_thread"). Measured beside 50 API
// readers (docs/load.md): arrival lateness p99 470 us at SCHED_FIFO, 2.1 ms with the slice,
// 4.0 ms ordinary. Lowering the daemon's other threads (nice +10) or pinning the measuring
// thread to a CPU of its own changed nothing measurable there, and is not done.
#pragma once

#include <string>

namespace logitaudit::daemon {

struct measurement_scheduling {
  bool realtime = false;
  std::string description;  // "SCHED_FIFO 10"; "SCHED_OTHER nice 0 (SCHED_FIFO refused: ...)"
};

// On the calling thread: SCHED_FIFO at `priority` (1-99), else the short slice; 0 leaves it
// as it is.
measurement_scheduling raise_this_thread(int priority);

}  // namespace logitaudit::daemon
