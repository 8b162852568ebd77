// Reading the machine: /proc/cpuinfo, uname, a llama-server's log and its --list-devices.
#include "machine.hpp"

#include "audit/spec.hpp"
#include "server_flags.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <map>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace logitaudit::clients {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Each "key : value" line of /proc/cpuinfo, trimmed, until `fn` returns false.
template <class F>
void for_each_entry(std::string_view cpuinfo, F fn) {
  std::size_t at = 0;
  while (at < cpuinfo.size()) {
    auto nl = cpuinfo.find('\n', at);
    if (nl == std::string_view::npos) nl = cpuinfo.size();
    const auto line = cpuinfo.substr(at, nl - at);
    at = nl + 1;
    const auto colon = line.find(':');
    if (colon != std::string_view::npos && !fn(trim(line.substr(0, colon)), trim(line.substr(colon + 1)))) return;
  }
}

// The value of `key` in the first processor block that has it.
std::string cpuinfo_value(std::string_view cpuinfo, std::string_view key) {
  std::string value;
  for_each_entry(cpuinfo, [&](std::string_view k, std::string_view v) {
    if (k != key) return true;
    value = v;
    return false;
  });
  return value;
}

int processors(std::string_view cpuinfo) {
  int n = 0;
  for_each_entry(cpuinfo, [&n](std::string_view k, std::string_view) {
    n += k == "processor";
    return true;
  });
  return n;
}

std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

const std::vector<std::string_view>& reported_cpu_features() {
  static const std::vector<std::string_view> features = {
      // x86: the features ggml's CPU variants are chosen by.
      "sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx_vnni", "avx512f", "avx512vbmi", "avx512_vnni", "avx512_bf16",
      "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16",
      // aarch64 (its /proc/cpuinfo names: asimd is NEON, asimddp dot product).
      "asimd", "asimddp", "i8mm", "sve", "sve2"};
  return features;
}

std::vector<std::string_view> cpu_variant_needs(std::string_view name) {
  // ggml's GGML_CPU_ALL_VARIANTS, in /proc/cpuinfo's names.
  static const std::map<std::string_view, std::vector<std::string_view>> needs = [] {
    const std::vector<std::string_view> avx2 = {"sse4_2", "avx", "f16c", "avx2", "bmi2", "fma"};
    auto with = [](std::vector<std::string_view> base, std::initializer_list<std::string_view> more) {
      base.insert(base.end(), more);
      return base;
    };
    const auto avx512 = with(avx2, {"avx512f"});
    return std::map<std::string_view, std::vector<std::string_view>>{
        {"x64", {}},
        {"sse42", {"sse4_2"}},
        {"sandybridge", {"sse4_2", "avx"}},
        {"ivybridge", {"sse4_2", "avx", "f16c"}},
        {"piledriver", {"sse4_2", "avx", "f16c", "fma"}},
        {"haswell", avx2},
        {"alderlake", with(avx2, {"avx_vnni"})},
        {"skylakex", avx512},
        {"cannonlake", with(avx512, {"avx512vbmi"})},
        {"cascadelake", with(avx512, {"avx512_vnni"})},
        {"icelake", with(avx512, {"avx512vbmi", "avx512_vnni"})},
        {"cooperlake", with(avx512, {"avx512_vnni", "avx512_bf16"})},
        {"zen4", with(avx512, {"avx512vbmi", "avx512_vnni", "avx512_bf16"})},
        {"sapphirerapids", with(avx512, {"avx512vbmi", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_int8"})}};
  }();
  auto it = needs.find(name);
  return it == needs.end() ? std::vector<std::string_view>{} : it->second;
}

std::string cpu_variant_lacks(std::string_view name, const machine_facts& host) {
  std::set<std::string> have;
  if (auto it = host.find("cpu_features"); it != host.end()) {
    std::istringstream words(it->second);
    for (std::string w; words >> w;) have.insert(w);
  }
  std::string lacks;
  for (auto f : cpu_variant_needs(name))
    if (!have.count(std::string(f))) lacks += (lacks.empty() ? "" : " ") + std::string(f);
  return lacks;
}

std::vector<std::string> runnable_cpu_variants(const machine_facts& host) {
  std::vector<std::string> out;
  for (auto v : audit::kGgmlCpuVariants)
    if (cpu_variant_lacks(v, host).empty()) out.emplace_back(v);
  return out;
}

std::string one_line(std::string_view s) {
  std::string out;
  for (char c : s) out += c == '\n' || c == '\t' || c == '\r' ? ' ' : c;
  return std::string(trim(out));
}

machine_facts machine_from(std::string_view cpuinfo, std::string_view kernel, std::string_view arch) {
  machine_facts m;
  auto vendor = cpuinfo_value(cpuinfo, "vendor_id");
  if (vendor.empty()) vendor = cpuinfo_value(cpuinfo, "CPU implementer");  // aarch64: an id such as 0x41
  auto model = cpuinfo_value(cpuinfo, "model name");
  if (model.empty()) model = cpuinfo_value(cpuinfo, "Model");  // some aarch64 boards
  if (!vendor.empty()) m["cpu_vendor"] = one_line(vendor);
  if (!model.empty()) m["cpu_model"] = one_line(model);
  if (const int n = processors(cpuinfo); n > 0) m["logical_cores"] = std::to_string(n);
  auto flags = cpuinfo_value(cpuinfo, "flags");
  if (flags.empty()) flags = cpuinfo_value(cpuinfo, "Features");  // aarch64
  std::set<std::string> have;
  std::istringstream words(flags);
  for (std::string w; words >> w;) have.insert(w);
  std::string features;
  for (auto f : reported_cpu_features())
    if (have.count(std::string(f))) features += (features.empty() ? "" : " ") + std::string(f);
  if (!flags.empty()) m["cpu_features"] = features.empty() ? "none" : features;
  if (!kernel.empty()) m["kernel"] = one_line(kernel);
  if (!arch.empty()) m["arch"] = one_line(arch);
  return m;
}

machine_facts host_machine() {
  utsname u{};
  const bool named = ::uname(&u) == 0;
  auto m = machine_from(read_file("/proc/cpuinfo"), named ? u.release : "", named ? u.machine : "");
  if (!m.count("logical_cores"))
    if (const auto n = std::thread::hardware_concurrency(); n > 0) m["logical_cores"] = std::to_string(n);
  return m;
}

machine_facts machine_from_log(std::string_view log) {
  machine_facts m;
  auto lines_with = [&log](std::string_view needle, auto&& each) {
    for (auto at = log.find(needle); at != std::string_view::npos; at = log.find(needle, at + needle.size())) {
      const auto end = log.find('\n', at);
      each(trim(log.substr(at + needle.size(), end == std::string_view::npos ? std::string_view::npos : end - at - needle.size())));
    }
  };
  // "load_backend: loaded Vulkan backend from .../libggml-vulkan.so", one per backend library.
  std::string backends;
  lines_with(" backend from ", [&](std::string_view path) {
    auto name = path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
    if (!name.starts_with("libggml-")) return;
    name.remove_prefix(8);
    if (auto dot = name.find(".so"); dot != std::string_view::npos) name = name.substr(0, dot);
    if (name.starts_with("cpu-")) m["ggml_cpu_variant"] = one_line(name.substr(4));
    // Each once: a server that loads its backends twice (with --rpc) logs them twice.
    if ((" " + backends + " ").find(" " + std::string(name) + " ") == std::string::npos)
      backends += (backends.empty() ? "" : " ") + std::string(name);
  });
  if (!backends.empty()) m["ggml_backends"] = one_line(backends);
  // "using device Vulkan0 (llvmpipe (LLVM 22.1.8, 256 bits)) (unknown id) - 23464 MiB free": the
  // devices the model was given, with their own description; an RPC device's is its address,
  // which changes with every start and is not the machine.
  std::string devices;
  lines_with("using device ", [&](std::string_view rest) {
    if (auto dash = rest.rfind(" - "); dash != std::string_view::npos) rest = rest.substr(0, dash);
    if (rest.ends_with(" (unknown id)")) rest.remove_suffix(13);
    const auto space = rest.find(' ');
    const auto name = rest.substr(0, space);
    auto desc = space == std::string_view::npos ? std::string_view() : trim(rest.substr(space));
    if (desc.starts_with("(") && desc.ends_with(")")) desc = desc.substr(1, desc.size() - 2);
    std::string one(name);
    if (name.starts_with("RPC")) one += " ggml-rpc-server";
    else if (!desc.empty()) one += " " + std::string(desc);
    devices += (devices.empty() ? "" : "; ") + one;
  });
  if (!devices.empty()) m["offload_devices"] = one_line(devices);
  // "load_tensors: offloaded 5/5 layers to GPU"
  lines_with("offloaded ", [&](std::string_view rest) {
    if (auto sp = rest.find(' '); rest.find(" layers") == sp && sp != std::string_view::npos)
      m["layers_offloaded"] = one_line(rest.substr(0, sp));
  });
  // "system_info: n_threads = 2 (...) / 2 | CPU : SSE3 = 1 | AVX2 = 1 | ... |"
  if (auto at = log.find("system_info:"); at != std::string_view::npos) {
    auto end = log.find('\n', at);
    auto line = log.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    std::string on;
    std::size_t i = 0;
    while ((i = line.find('|', i)) != std::string_view::npos) {
      ++i;
      auto next = line.find('|', i);
      auto item = trim(line.substr(i, next == std::string_view::npos ? std::string_view::npos : next - i));
      if (item.starts_with("CPU :")) item = trim(item.substr(5));
      if (auto eq = item.find(" = 1"); eq != std::string_view::npos && eq + 4 == item.size())
        on += (on.empty() ? "" : " ") + std::string(item.substr(0, eq));
    }
    if (!on.empty()) m["ggml_cpu_features"] = on;
  }
  return m;
}

machine_facts server_log_machine(const std::filesystem::path& log) {
  // Both lines come at start-up: the log's head, not the megabytes a long sweep writes after it.
  std::ifstream in(log, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return machine_from_log(head);
}

int listening_pid(std::uint16_t port) {
  // "  0: 0100007F:1F9B 00000000:0000 0A ... uid timeout inode ...": a listening (0A) socket's inode.
  std::set<std::string> inodes;
  char want[8];
  std::snprintf(want, sizeof want, ":%04X", static_cast<unsigned>(port));
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream lines(read_file(table));
    std::string line;
    std::getline(lines, line);  // the header
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode)) continue;
      if (state == "0A" && local.ends_with(want) && inode != "0") inodes.insert("socket:[" + inode + "]");
    }
  }
  if (inodes.empty()) return 0;
  // Processes come and go while their folders are read: every step takes an error code, and a
  // folder that vanished is passed over.
  std::error_code ec;
  for (std::filesystem::directory_iterator proc("/proc", ec), end; !ec && proc != end; proc.increment(ec)) {
    const auto name = proc->path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code fd_ec;
    for (std::filesystem::directory_iterator fd(proc->path() / "fd", fd_ec); !fd_ec && fd != end; fd.increment(fd_ec)) {
      std::error_code link_ec;
      const auto target = std::filesystem::read_symlink(fd->path(), link_ec);
      if (!link_ec && inodes.count(target.string())) return std::stoi(name);
    }
  }
  return 0;
}

machine_facts machine_from_maps(std::string_view maps, std::string_view exe, const std::vector<std::string>& args) {
  machine_facts m;
  auto base = [](std::string_view path) { return path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1); };
  auto undeleted = [](std::string_view path) {  // a file replaced on disk since it was mapped
    constexpr std::string_view deleted = " (deleted)";
    return path.ends_with(deleted) ? path.substr(0, path.size() - deleted.size()) : path;
  };
  std::string backends;
  std::set<std::string> mapped;
  std::istringstream lines{std::string(maps)};
  for (std::string line; std::getline(lines, line);) {
    // "7f..-7f.. r-xp 00000000 08:01 1234   /usr/lib/libggml-cpu-zen4.so": the path is the sixth field.
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode, path;
    if (!(fields >> range >> perms >> offset >> dev >> inode)) continue;
    std::getline(fields, path);
    const auto p = undeleted(trim(path));
    if (!p.starts_with("/") || !mapped.insert(std::string(p)).second) continue;
    const auto name = base(p);
    if (name.starts_with("libggml-") && !name.starts_with("libggml-base")) {
      auto backend = name.substr(8, name.find(".so") == std::string_view::npos ? std::string_view::npos : name.find(".so") - 8);
      backends += (backends.empty() ? "" : " ") + std::string(backend);
      if (backend.starts_with("cpu-")) m["ggml_cpu_variant"] = one_line(backend.substr(4));
    }
  }
  // A dynamic loader run by hand maps its program like any file: the program is the first
  // argument that names a mapped file (the loader's own options name folders).
  std::string executable(undeleted(exe));
  const auto exe_name = base(executable);
  if (exe_name.starts_with("ld-linux") || exe_name.starts_with("ld.so") || exe_name.starts_with("ld-musl"))
    for (std::size_t i = 1; i < args.size(); ++i)
      if (mapped.count(args[i])) {
        executable = args[i];
        break;
      }
  if (!executable.empty()) m["server_executable"] = one_line(executable);
  if (!backends.empty()) m["ggml_backends"] = one_line(backends);
  else if (base(executable).find("llama") != std::string_view::npos) m["ggml_backends"] = "none loaded as libraries";
  else  // a proxy in front of the server (socat, ssh -L, a container's port forwarder), or not llama.cpp
    m["server_process"] = "no ggml library mapped by " + one_line(executable) + " (a proxy, or not llama.cpp)";
  return m;
}

// The settings of the llama-server process at `proc` (server_flags.hpp): its arguments, its
// environment, its build's --help run as the process was started, up to its program.
void read_settings(const std::filesystem::path& proc, const std::vector<std::string>& resolved, machine_facts& facts) {
  std::vector<std::string> args, env;  // as given (`resolved`: the same, relative paths made absolute)
  std::istringstream cmdline(read_file(proc / "cmdline"));
  for (std::string a; std::getline(cmdline, a, '\0');) args.push_back(a);
  const auto environ = read_file(proc / "environ");
  std::istringstream vars(environ);
  for (std::string v; std::getline(vars, v, '\0');) env.push_back(v);
  std::vector<std::string> command;
  const auto program = facts.find("server_executable");
  for (std::size_t i = 0; i < args.size() && i < resolved.size(); ++i) {
    command.push_back(args[i]);
    if (program == facts.end() || resolved[i] == program->second) break;
  }
  const auto help = server_help(command, env);
  for (auto& [k, v] : settings_from(args, env, help_defaults(help))) facts[k] = one_line(v);
  // The model file with the server's working directory resolved (what advise and the sha256 take).
  for (std::size_t i = 0; i + 1 < args.size() && i + 1 < resolved.size(); ++i)
    if (args[i] == "-m" || args[i] == "--model") facts["server_model"] = one_line(resolved[i + 1]);
  std::string unread;
  if (environ.empty()) unread = "its environment cannot be read (another user's process)";
  if (help.empty()) unread += std::string(unread.empty() ? "" : "; ") + "its --help did not run, so its defaults are unknown";
  if (!unread.empty()) {
    auto& u = facts["server_settings_unread"];
    u = one_line(unread + (u.empty() ? "" : "; " + u));
  }
}

server_process listening_server(std::uint16_t port) {
  const int pid = listening_pid(port);
  if (pid == 0)
    return {{{"server_process", "not visible: no process this user can read listens on port " + std::to_string(port) +
                                    " (in this network and PID namespace)"}},
            ""};
  const auto proc = std::filesystem::path("/proc") / std::to_string(pid);
  std::error_code ec, cwd_ec;
  const auto exe = std::filesystem::read_symlink(proc / "exe", ec);
  const auto cwd = std::filesystem::read_symlink(proc / "cwd", cwd_ec);
  const auto maps = read_file(proc / "maps");
  if (maps.empty())
    return {{{"server_process", "not visible: the memory map of process " + std::to_string(pid) + " cannot be read"}}, ""};
  std::vector<std::string> args;  // relative ones as the process resolves them: against its own folder
  std::istringstream cmdline(read_file(proc / "cmdline"));
  for (std::string a; std::getline(cmdline, a, '\0');)
    args.push_back(!a.empty() && a.front() != '/' && !cwd_ec ? (cwd / a).lexically_normal().string() : a);
  server_process out{machine_from_maps(maps, ec ? "" : exe.string(), args), ""};
  if (out.facts.count("server_process") == 0) read_settings(proc, args, out.facts);
  // The image the process runs: /proc/PID/exe is it even when the file on disk was replaced;
  // behind a loader, the program's file.
  if (auto it = out.facts.find("server_executable"); it != out.facts.end())
    out.image = !ec && it->second == one_line(exe.string()) ? (proc / "exe").string() : it->second;
  return out;
}

std::string listed_devices(const std::string& executable, const std::vector<std::string>& env) {
  if (executable.empty()) return "";
  std::string command = "env";
  for (const auto& e : env) command += " " + shell_quoted(e);
  command += " timeout 20 " + shell_quoted(executable) + " --list-devices 2>/dev/null";
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return "";
  std::string out;
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int status = ::pclose(p);
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return "";
  // "Available devices:\n  CUDA0: NVIDIA H100 (81000 MiB, 80000 MiB free)\n" or "  (none)".
  std::string devices;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const auto t = trim(line);
    if (t.empty() || t.starts_with("Available devices") || t == "(none)") continue;
    // The memory in parentheses (free memory changes from one reading to the next) is not
    // the machine.
    auto name = t;
    if (auto paren = name.rfind(" ("); paren != std::string_view::npos && name.back() == ')') name = name.substr(0, paren);
    devices += (devices.empty() ? "" : "; ") + one_line(name);
  }
  return devices.empty() ? "none" : devices;
}

namespace {

// sched_setattr(2)'s argument; glibc 2.36 declares neither it nor the calls.
struct sched_attr_v1 {
  std::uint32_t size = sizeof(sched_attr_v1);
  std::uint32_t sched_policy = SCHED_OTHER;
  std::uint64_t sched_flags = 0;
  std::int32_t sched_nice = 0;
  std::uint32_t sched_priority = 0;
  std::uint64_t sched_runtime = 0, sched_deadline = 0, sched_period = 0;
  std::uint32_t sched_util_min = 0, sched_util_max = 0;
};

}  // namespace

std::string this_thread_scheduling() {
  sched_attr_v1 a;
  if (::syscall(SYS_sched_getattr, 0, &a, sizeof a, 0) != 0) return "unknown";
  switch (a.sched_policy) {
    case SCHED_FIFO: return "SCHED_FIFO " + std::to_string(a.sched_priority);
    case SCHED_RR: return "SCHED_RR " + std::to_string(a.sched_priority);
    default: break;
  }
  std::string s = a.sched_policy == SCHED_BATCH ? "SCHED_BATCH" : a.sched_policy == SCHED_IDLE ? "SCHED_IDLE" : "SCHED_OTHER";
  s += " nice " + std::to_string(a.sched_nice);
  if (a.sched_runtime > 0) s += " slice " + std::to_string(a.sched_runtime / 1000) + " us";
  return s;
}

bool set_this_thread_slice(std::uint64_t ns) {
  sched_attr_v1 a;
  if (::syscall(SYS_sched_getattr, 0, &a, sizeof a, 0) != 0 || a.sched_policy != SCHED_OTHER) return false;
  a.size = sizeof a;
  a.sched_flags = 0x01;  // SCHED_FLAG_RESET_ON_FORK: what it starts runs with the default slice
  a.sched_runtime = ns;
  return ::syscall(SYS_sched_setattr, 0, &a, 0) == 0;
}

}  // namespace logitaudit::clients
