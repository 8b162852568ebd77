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
// from "load_backend: loaded CPU backend from .../libggml-cpu-sapphirerapids.so"),
// ggml_backends (every backend library it loaded, each once: "vulkan cpu-zen4"),
// offload_devices (the devices the model was given, with their own description; an RPC
// device's changing address left out), layers_offloaded ("5/5") and ggml_cpu_features (the
// features its system_info line says are on). Each absent when the log does not say.
machine_facts machine_from_log(std::string_view log);
machine_facts server_log_machine(const std::filesystem::path& log);

// The process of this host that listens on TCP `port` (on any address), as /proc shows it to
// this user: its pid, or 0 when no such process can be seen (none listens, or it belongs to a
// user whose file descriptors this one cannot read). From /proc/net/tcp{,6}'s listening
// sockets, then the /proc/PID/fd link that names one of them.
int listening_pid(std::uint16_t port);

// What a server process's memory map says of it, with no flag and no log:
//   ggml_backends     the ggml backend libraries it has loaded ("cpu-zen4 vulkan"), or "none
//                     loaded as libraries" for a llama.cpp build with its backends linked in;
//   ggml_cpu_variant  the CPU variant among them ("zen4");
//   server_executable its program: /proc/PID/exe, or behind a dynamic loader run by hand (as
//                     scripts/get-llama-server.sh runs Debian's), the first of its arguments
//                     that is a file it has mapped;
//   server_process    instead of ggml_backends, for a process with no ggml library whose
//                     program is not llama.cpp's: a proxy in front of the server, whose
//                     backends are not claimed.
// `maps` is /proc/PID/maps's text, `exe` the target of /proc/PID/exe, `args` its command line
// (relative paths resolved against its working folder).
machine_facts machine_from_maps(std::string_view maps, std::string_view exe, const std::vector<std::string>& args);

// The process behind a port of this host: its facts as above, or {"server_process": "not
// visible: ..."} when nothing this user can read listens there; and the file that holds the
// image it runs (`image`: /proc/PID/exe, which stays the running program's even when the file on
// disk was replaced; "" when not visible), for its sha256. Reads /proc synchronously (every
// process's file descriptors: milliseconds); never throws.
struct server_process {
  machine_facts facts;
  std::string image;
};
server_process listening_server(std::uint16_t port);

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
