// The machine in the fingerprint: /proc/cpuinfo, a llama-server's -lv 4 log and its
// --list-devices read as the fingerprint records them; this host read for real.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "clients/llama_process.hpp"
#include "clients/machine.hpp"
#include "daemon/measurement_thread.hpp"

using namespace logitaudit;

namespace {

constexpr const char* kXeon = R"(processor	: 0
vendor_id	: GenuineIntel
model name	: Intel(R) Xeon(R) Platinum 8488C
flags		: fpu sse4_2 avx avx2 fma f16c bmi2 avx512f avx512vbmi avx512_vnni avx512_bf16 avx512_fp16 amx_tile amx_int8 amx_bf16

processor	: 1
vendor_id	: GenuineIntel
model name	: Intel(R) Xeon(R) Platinum 8488C
flags		: fpu sse4_2 avx avx2 fma f16c bmi2 avx512f avx512vbmi avx512_vnni avx512_bf16 avx512_fp16 amx_tile amx_int8 amx_bf16
)";

constexpr const char* kGraviton = R"(processor	: 0
BogoMIPS	: 243.75
Features	: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng
CPU implementer	: 0x41
)";

}  // namespace

TEST(machine, an_x86_host_names_its_cpu_cores_and_the_features_that_choose_ggml_kernels) {
  const auto m = clients::machine_from(kXeon, "6.1.0-27-cloud-amd64", "x86_64");
  EXPECT_EQ(m.at("cpu_vendor"), "GenuineIntel");
  EXPECT_EQ(m.at("cpu_model"), "Intel(R) Xeon(R) Platinum 8488C");
  EXPECT_EQ(m.at("logical_cores"), "2");
  EXPECT_EQ(m.at("cpu_features"),
            "sse4_2 avx avx2 fma f16c bmi2 avx512f avx512vbmi avx512_vnni avx512_bf16 avx512_fp16 amx_tile amx_int8 amx_bf16");
  EXPECT_EQ(m.at("kernel"), "6.1.0-27-cloud-amd64");
  EXPECT_EQ(m.at("arch"), "x86_64");
}

TEST(machine, an_aarch64_host_names_neon_dot_product_i8mm_and_sve) {
  const auto m = clients::machine_from(kGraviton, "6.1.0", "aarch64");
  EXPECT_EQ(m.at("cpu_vendor"), "0x41");
  EXPECT_EQ(m.at("logical_cores"), "1");
  EXPECT_EQ(m.at("cpu_features"), "asimd asimddp i8mm sve") << "svei8mm is not i8mm";
}

TEST(machine, a_server_log_names_the_ggml_cpu_variant_it_loaded_and_the_features_it_uses) {
  const auto m = clients::machine_from_log(
      "0.00.023.523 I load_backend: loaded CPU backend from /usr/lib/x86_64-linux-gnu/ggml/libggml-cpu-haswell.so\n"
      "0.00.023.998 I cmn  common_param: system_info: n_threads = 2 (n_threads_batch = 2) / 2 | CPU : SSE3 = 1 | "
      "AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | AVX512 = 0 | OPENMP = 1 | REPACK = 1 | \n");
  EXPECT_EQ(m.at("ggml_cpu_variant"), "haswell");
  EXPECT_EQ(m.at("ggml_cpu_features"), "SSE3 AVX AVX2 F16C FMA OPENMP REPACK");
  EXPECT_TRUE(clients::machine_from_log("a log at the default verbosity\n").empty()) << "nothing said, nothing claimed";
}

TEST(machine, a_server_log_names_its_backends_the_devices_it_offloads_to_and_how_many_layers) {
  // As b11669 logs a Vulkan server on lavapipe started with -lv 4 (scripts/get-llama-server.sh
  // --backends), lines trimmed.
  const auto vulkan = clients::machine_from_log(
      "0.00.057.783 I load_backend: loaded Vulkan backend from /r/run/all+vulkan/libggml-vulkan.so\n"
      "0.00.069.736 I load_backend: loaded CPU backend from /r/run/all+vulkan/libggml-cpu-zen4.so\n"
      "0.00.030.476 I llama_prepare_model_devices: using device Vulkan0 (llvmpipe (LLVM 22.1.8, 256 bits)) (unknown id) "
      "- 23464 MiB free\n"
      "0.00.079.479 I load_tensors: offloading output layer to GPU\n"
      "0.00.079.500 I load_tensors: offloaded 5/5 layers to GPU\n");
  EXPECT_EQ(vulkan.at("ggml_backends"), "vulkan cpu-zen4");
  EXPECT_EQ(vulkan.at("ggml_cpu_variant"), "zen4");
  EXPECT_EQ(vulkan.at("offload_devices"), "Vulkan0 llvmpipe (LLVM 22.1.8, 256 bits)");
  EXPECT_EQ(vulkan.at("layers_offloaded"), "5/5");
  // Split over two ggml-rpc-servers: their addresses (a new port at every start) are left out,
  // so that two starts of the same configuration have the same machine.
  const auto rpc = clients::machine_from_log(
      "I load_backend: loaded RPC backend from /r/run/all+rpc/libggml-rpc.so\n"
      "I load_backend: loaded RPC backend from /r/run/all+rpc/libggml-rpc.so\n"
      "I llama_prepare_model_devices: using device RPC0 (127.0.0.1:40111) (unknown id) - 24105 MiB free\n"
      "I llama_prepare_model_devices: using device RPC1 (127.0.0.1:40112) (unknown id) - 24105 MiB free\n"
      "I load_tensors: offloaded 5/5 layers to GPU\n");
  EXPECT_EQ(rpc.at("offload_devices"), "RPC0 ggml-rpc-server; RPC1 ggml-rpc-server");
  EXPECT_EQ(rpc.at("layers_offloaded"), "5/5");
  EXPECT_EQ(rpc.at("ggml_backends"), "rpc");
  EXPECT_FALSE(rpc.contains("ggml_cpu_variant"));
}

TEST(machine, a_server_process_map_names_its_ggml_backends_and_its_program) {
  // Debian's llama-server run by hand through its own loader (scripts/get-llama-server.sh): the
  // program is the first of its arguments that is a mapped file (the model is mapped too, and
  // before it), not the loader.
  const std::string root = "/opt/r/usr/lib/x86_64-linux-gnu";
  const auto m = clients::machine_from_maps(
      "55d0-55d1 r--p 00000000 08:01 11 " + root + "/ld-linux-x86-64.so.2\n"
      "7e00-7e01 r--s 00000000 08:01 17                         /m/tiny.gguf\n"
      "7f00-7f01 r-xp 00000000 08:01 13 " + root + "/libggml-base.so.0.27.0\n"
      "7f01-7f02 r-xp 00000000 08:01 14 " + root + "/libggml.so.0.27.0\n"
      "7f02-7f03 r-xp 00000000 08:01 15 " + root + "/ggml/backends0/libggml-cpu-haswell.so\n"
      "7f03-7f04 r--p 00001000 08:01 15 " + root + "/ggml/backends0/libggml-cpu-haswell.so\n"
      "7f04-7f05 r-xp 00000000 08:01 16 " + root + "/ggml/backends0/libggml-vulkan.so\n"
      "7f06-7f07 r-xp 00000000 08:01 12                         /opt/r/usr/bin/llama-server\n"
      "7ffd-7ffe rw-p 00000000 00:00 0                          [stack]\n",
      root + "/ld-linux-x86-64.so.2",
      {root + "/ld-linux-x86-64.so.2", "--library-path", root + ":" + root + "/ggml", "/opt/r/usr/bin/llama-server", "-m",
       "/m/tiny.gguf"});
  EXPECT_EQ(m.at("ggml_cpu_variant"), "haswell");
  EXPECT_EQ(m.at("ggml_backends"), "cpu-haswell vulkan") << "each library once, libggml and libggml-base are no backend";
  EXPECT_EQ(m.at("server_executable"), "/opt/r/usr/bin/llama-server");
  // A build with its backends linked in maps none; its executable is /proc/PID/exe itself.
  const auto linked = clients::machine_from_maps("55e0-55e1 r-xp 00000000 08:01 12 /usr/local/bin/llama-server\n",
                                                 "/usr/local/bin/llama-server", {"llama-server", "-m", "/m/tiny.gguf"});
  EXPECT_EQ(linked.at("ggml_backends"), "none loaded as libraries");
  // A binary replaced on disk since it started is still named by its path.
  const auto replaced = clients::machine_from_maps("55e0-55e1 r-xp 00000000 08:01 12 /usr/bin/llama-server (deleted)\n",
                                                   "/usr/bin/llama-server (deleted)", {"llama-server"});
  EXPECT_EQ(replaced.at("server_executable"), "/usr/bin/llama-server");
  EXPECT_FALSE(linked.count("ggml_cpu_variant")) << "nothing mapped, nothing claimed";
  EXPECT_EQ(linked.at("server_executable"), "/usr/local/bin/llama-server");
}

TEST(machine, the_process_listening_on_a_port_is_found_and_a_port_nobody_listens_on_is_not_visible) {
  namespace net = boost::asio;
  net::io_context io;
  net::ip::tcp::acceptor listening(io, {net::ip::make_address("127.0.0.1"), 0});
  const auto port = listening.local_endpoint().port();
  EXPECT_EQ(clients::listening_pid(port), static_cast<int>(::getpid())) << "this test process listens on " << port;
  // This test's own process maps no ggml library and is not llama.cpp: it is named, and no
  // backend is claimed for it (as for a proxy in front of a server).
  const auto me = clients::listening_server(port);
  EXPECT_EQ(me.facts.at("server_executable"), std::filesystem::read_symlink("/proc/self/exe").string());
  ASSERT_TRUE(me.facts.count("server_process"));
  EXPECT_TRUE(me.facts.at("server_process").starts_with("no ggml library mapped by ")) << me.facts.at("server_process");
  EXPECT_FALSE(me.facts.count("ggml_backends"));
  EXPECT_EQ(me.image, "/proc/" + std::to_string(::getpid()) + "/exe") << "the running image, even if its file is replaced";
  listening.close();
  const auto gone = clients::listening_server(port);
  ASSERT_TRUE(gone.facts.count("server_process"));
  EXPECT_TRUE(gone.facts.at("server_process").starts_with("not visible")) << gone.facts.at("server_process");
  EXPECT_FALSE(gone.facts.count("ggml_cpu_variant"));
  EXPECT_TRUE(gone.image.empty());
}

TEST(machine, this_host_and_the_provisioned_llama_server_are_read_for_real) {
  const auto m = clients::host_machine();
  EXPECT_FALSE(m.at("cpu_model").empty());
  EXPECT_GT(std::stoi(m.at("logical_cores")), 0);
  EXPECT_FALSE(m.at("kernel").empty());
  EXPECT_EQ(m.at("cpu_features").find('\t'), std::string::npos);
  const auto server = clients::find_llama_tool("llama-server");
  ASSERT_FALSE(server.empty()) << "the test command provisions llama-server first";
  // A CPU-only build lists no devices; a GPU build names them, without their free memory.
  const auto devices = clients::listed_devices(server);
  EXPECT_FALSE(devices.empty()) << "the binary answered --list-devices";
  EXPECT_EQ(devices.find("MiB free"), std::string::npos) << devices;
  EXPECT_EQ(clients::listed_devices("/nonexistent/llama-server"), "") << "a binary that cannot run lists nothing";
}

TEST(machine, a_cpu_variant_runs_where_the_cpu_has_every_feature_it_was_built_for) {
  const auto avx2_only = clients::machine_from(
      "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t\t: sse4_2 avx f16c avx2 bmi2 fma\n", "6.1", "x86_64");
  EXPECT_EQ(clients::cpu_variant_lacks("haswell", avx2_only), "");
  EXPECT_EQ(clients::cpu_variant_lacks("sapphirerapids", avx2_only),
            "avx512f avx512vbmi avx512_vnni avx512_bf16 amx_tile amx_int8");
  EXPECT_EQ(clients::runnable_cpu_variants(avx2_only),
            (std::vector<std::string>{"x64", "sse42", "sandybridge", "ivybridge", "piledriver", "haswell"}));
  const auto xeon = clients::machine_from(kXeon, "6.1", "x86_64");
  EXPECT_EQ(clients::runnable_cpu_variants(xeon).back(), "sapphirerapids");
  EXPECT_EQ(clients::cpu_variant_lacks("alderlake", xeon), "avx_vnni") << "the Xeon above lists no avx_vnni";
}

TEST(machine, the_measuring_thread_asks_for_sched_fifo_and_nothing_it_starts_inherits_it) {
  daemon::measurement_scheduling got;
  std::string after, child;
  std::thread measuring([&] {
    got = daemon::raise_this_thread(10);
    after = clients::this_thread_scheduling();
    std::thread([&] { child = clients::this_thread_scheduling(); }).join();
  });
  measuring.join();
  if (got.realtime) {
    EXPECT_EQ(after, "SCHED_FIFO 10");
  } else {  // refused (no CAP_SYS_NICE, RLIMIT_RTPRIO 0): the reason is said, the thread stays fair
    EXPECT_NE(got.description.find("SCHED_FIFO 10 refused: "), std::string::npos) << got.description;
    EXPECT_EQ(after.rfind("SCHED_OTHER", 0), 0u) << after;
  }
  EXPECT_EQ(got.description.rfind(after, 0), 0u) << "the description starts with what the thread is: " << got.description;
  EXPECT_EQ(child.rfind("SCHED_OTHER nice 0", 0), 0u) << "a thread it starts is reset: " << child;
  EXPECT_EQ(child.find("slice 100 us"), std::string::npos) << child;

  std::thread plain([&] { got = daemon::raise_this_thread(0); });
  plain.join();
  EXPECT_FALSE(got.realtime);
  EXPECT_NE(got.description.find("(measurement_priority 0)"), std::string::npos) << got.description;
}
