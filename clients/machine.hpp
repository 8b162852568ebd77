// The machine a server runs on, as the fingerprint records it. For a server on this host:
// the CPU (vendor, model, logical cores), the instruction-set features that choose ggml's
// kernels, the kernel release; for a server this daemon started, also the devices its binary
// lists and the ggml CPU variant it loaded. Everything is read when asked, never cached: a
// fingerprint taken after a migration names the new machine.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace logitaudit::clients {

using machine_facts = std::map<std::string, std::string>;

// The instruction-set features the fingerprint reports, in /proc/cpuinfo's names: those that
// choose ggml's CPU kernels on x86 and on aarch64.
const std::vector<std::string_view>& reported_cpu_features();

// This host: cpu_vendor, cpu_model, logical_cores, cpu_features (the reported ones it has,
// space-separated, in reported_cpu_features() order), kernel (uname's release) and arch.
machine_facts host_machine();

// From /proc/cpuinfo's text and uname's release and machine (host_machine reads them).
machine_facts machine_from(std::string_view cpuinfo, std::string_view kernel, std::string_view arch);

// From the log of a llama-server started with `-lv 4`: ggml_cpu_variant ("sapphirerapids",
// from "load_backend: loaded CPU backend from .../libggml-cpu-sapphirerapids.so") and
// ggml_cpu_features (the features its system_info line says are on). Empty when the log
// does not say.
machine_facts machine_from_log(std::string_view log);
machine_facts server_log_machine(const std::filesystem::path& log);

// What `executable --list-devices` prints, one device per "; " ("none" when it lists none);
// `env` is prepended to its environment (NAME=VALUE). "" when it cannot be run.
std::string listed_devices(const std::string& executable, const std::vector<std::string>& env = {});

// The /proc/cpuinfo features ggml's CPU variant `name` needs (x86; "" for an unknown name), as
// its build selects them: haswell needs "sse4_2 avx f16c avx2 bmi2 fma", and so on.
std::vector<std::string_view> cpu_variant_needs(std::string_view name);

// Of kGgmlCpuVariants, the ones a CPU with `host`'s cpu_features can run; for a variant it
// cannot, the features it lacks ("" when it can run it).
std::string cpu_variant_lacks(std::string_view name, const machine_facts& host);
std::vector<std::string> runnable_cpu_variants(const machine_facts& host);

// The calling thread's scheduling, as a fingerprint observes the thread that measured it:
// "SCHED_FIFO 10", "SCHED_OTHER nice 0 slice 100 us" (daemon/measurement_thread.hpp says why
// it matters; the slice where the kernel reports one: EEVDF, Linux 6.6 on).
std::string this_thread_scheduling();
// Asks the fair scheduler for a slice of `ns` for the calling thread (sched_setattr; any thread
// may, on Linux 6.12 on): a short slice runs it sooner after it wakes. False where refused.
bool set_this_thread_slice(std::uint64_t ns);

// A fact as the fingerprint stores it: one line, no tab.
std::string one_line(std::string_view s);

}  // namespace logitaudit::clients
