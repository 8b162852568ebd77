// The machine in the fingerprint: /proc/cpuinfo, a llama-server's -lv 4 log and its
// --list-devices read as the fingerprint records them; this host read for real.
#include <gtest/gtest.h>

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
