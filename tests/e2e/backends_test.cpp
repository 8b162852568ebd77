// e2e: ggml's other compute backends as managed servers (scripts/get-llama-server.sh --backends).
// A Vulkan server (lavapipe where the host has no GPU driver) audited beside the CPU server of the
// same model, where the migration matrix must be what the stored streams say, pair by pair; a
// model split over two ggml-rpc-servers answering an audit, with its helpers gone afterwards;
// a device this host cannot run, refused with what it can. What the backends do to the numbers
// is never asserted: only that the product's verdict is its own stored evidence's.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "audit/evidence.hpp"
#include "clients/llama_process.hpp"
#include "clients/managed_servers.hpp"
#include "support/daemon_harness.hpp"
#include "support/http_call.hpp"
#include "support/llama_server.hpp"
#include "support/preamble.hpp"
#include "support/process.hpp"

namespace {

// Whether the provisioned llama-server has the backend `device` needs; when not, the reason the
// test is skipped (a user's own llama-server, or a checkout without --backends).
std::string missing(const std::string& device) {
  const auto host = clients::host_devices("");
  if (const auto why = host.problem(device); !why.empty()) return why;
  return "";
}

// The spec: the CPU server and another device's, the same tiny model, two prompts; a burst of
// four per prompt, and a positive control, so that the comparator is shown to see differences.
json spec_for(const std::string& other, const std::string& device) {
  return json::parse(R"({"n_predict":8,"top_k":3,"prompts":["The capital of France is","Once upon a time"],
    "backends":[{"name":"cpu","managed":{"model":"tiny","parallel":4}},
                {"name":")" + other + R"(","managed":{"model":"tiny","parallel":4,"device":")" + device + R"("}}],
    "conditions":[{"name":"c4","kind":"concurrent","concurrency":4,"replicates":1,"all_prompts":true},
                  {"name":"control_prompt","kind":"control_prompt"}]})");
}

// The matrix recomputed from the stored runs alone: solo, the baselines that were alone, paired
// by prompt and sampling; under load, the counted burst members, paired by condition,
// replicate and place; the diagonal, each backend's counted members against its baselines.
struct side {
  int n = 0, identical = 0;
};
std::map<std::tuple<std::string, std::string, std::string>, side> recomputed(const json& runs) {
  std::map<std::string, std::map<std::string, std::string>> solo, load;  // backend -> key -> logit digest
  std::map<std::tuple<std::string, std::string, std::string>, side> out;
  for (const auto& r : runs) {
    if (r["status"] != "ok") continue;
    const std::string backend = r["backend"];
    const std::string key = r["prompt"].get<std::string>() + "|" + r["params"].dump();
    if (r["condition"] == "baseline") {
      const bool alone = !r.contains("company") || r["company"].get<double>() <= audit::evidence_thresholds{}.max_solo_busy_slots;
      const auto& cached = r["server"]["timings"]["cache_n"];
      if (alone && (cached.is_null() || cached.get<long long>() == 0)) solo[backend][key] = r["digests"]["logit"];
      continue;
    }
    if (r["condition"] != "c4" || !r.contains("verdict") || !r["verdict"]["counted"].get<bool>()) continue;
    auto& own = out[{backend, backend, "load"}];
    ++own.n;
    own.identical += r["verdict"]["logit_identical"].get<bool>();
    load[backend][r["replicate"].dump() + "|" + r["request"].dump() + "|" + key] = r["digests"]["logit"];
  }
  for (auto a = solo.begin(); a != solo.end(); ++a)
    for (auto b = std::next(a); b != solo.end(); ++b)
      for (const auto& [k, d] : a->second)
        if (auto it = b->second.find(k); it != b->second.end()) {
          auto& c = out[{a->first, b->first, "solo"}];
          ++c.n;
          c.identical += it->second == d;
        }
  for (auto a = load.begin(); a != load.end(); ++a)
    for (auto b = std::next(a); b != load.end(); ++b)
      for (const auto& [k, d] : a->second)
        if (auto it = b->second.find(k); it != b->second.end()) {
          auto& c = out[{a->first, b->first, "load"}];
          ++c.n;
          c.identical += it->second == d;
        }
  return out;
}

// The stored matrix is the recomputed one, cell by cell, and the report prints it.
void expect_matrix_is_the_streams(test_support::daemon_harness& d, std::int64_t id, const std::string& other) {
  const std::string self = "/v1/audits/" + std::to_string(id);
  const auto report = d.call(http::verb::get, self + "/report").json();
  ASSERT_EQ(report["migration"].size(), 1u) << report.dump();
  const auto& m = report["migration"][0];
  EXPECT_EQ(m["backends"], json::array({"cpu", other}));
  const auto want = recomputed(d.call(http::verb::get, self + "/runs").json()["runs"]);
  int cells = 0;
  for (const auto& c : m["cells"]) {
    std::string a = c["a"], b = c["b"];
    if (a > b) std::swap(a, b);
    for (const char* which : {"solo", "load"}) {
      const auto it = want.find({a, b, which});
      const side expected = it == want.end() ? side{} : it->second;
      EXPECT_EQ(c[which]["n"].get<int>(), expected.n) << a << " " << b << " " << which << ": " << c.dump();
      EXPECT_EQ(c[which]["logit_identical"].get<int>(), expected.identical) << a << " " << b << " " << which << ": " << c.dump();
      const bool differs = c[which]["logit_identical"].get<int>() < c[which]["n"].get<int>();
      EXPECT_EQ(c[which]["first_difference"].get<int>() >= 0, differs) << c.dump();
    }
    ++cells;
  }
  EXPECT_EQ(cells, 3) << "two diagonals and one pair";
  const auto text = d.call(http::verb::get, self + "/report?format=text").body;
  EXPECT_NE(text.find("Migration matrix"), std::string::npos) << text;
  // The independent verifier recounts it too, from the digests it recomputes from the bytes.
  const auto verified = test_support::run_process({LOGITAUDIT_CLI, "verify", d.database()});
  EXPECT_EQ(verified.code, 0) << verified.out << verified.err;
}

// The machine of `backend`'s fingerprint taken before the audit.
json fingerprint_machine(test_support::daemon_harness& d, std::int64_t id, const std::string& backend) {
  const auto all = d.call(http::verb::get, "/v1/audits/" + std::to_string(id) + "/fingerprints").json();
  for (const auto& fp : all["fingerprints"])
    if (fp["backend"] == backend && fp["phase"] == "before") return fp["machine"];
  ADD_FAILURE() << "no fingerprint of " << backend << " before the audit: " << all.dump();
  return json::object();
}

// A daemon whose one managed model is the tiny one, its servers' logs under `dir`.
test_support::harness_options managed_tiny(const fs::path& dir) {
  test_support::harness_options o;
  o.managed.models = {{"tiny", test_support::model_path("tiny")}};
  o.managed.log_dir = dir / "logs";
  return o;
}

// The audit of the CPU server beside `other` on `device`, done, its matrix its streams': its id.
std::int64_t audited_beside_the_cpu(test_support::daemon_harness& d, const std::string& other, const std::string& device) {
  auto job = d.run(spec_for(other, device).dump());
  EXPECT_EQ(job["status"], "done") << job.dump();
  const auto id = job["id"].get<std::int64_t>();
  expect_matrix_is_the_streams(d, id, other);
  return id;
}

// Every layer of the model offloaded, as the fingerprint says ("5/5").
void expect_every_layer(const json& machine) {
  const std::string layers = machine.value("layers_offloaded", "");
  ASSERT_NE(layers.find('/'), std::string::npos) << machine.dump();
  EXPECT_EQ(layers.substr(0, layers.find('/')), layers.substr(layers.find('/') + 1)) << "every layer: " << layers;
}

}  // namespace

TEST(backends_e2e, a_vulkan_server_beside_the_cpu_one_gives_the_matrix_its_streams_say) {
  if (const auto why = missing("vulkan"); !why.empty()) GTEST_SKIP() << why;
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-vulkan-" + std::to_string(::getpid()));
  test_support::daemon_harness d(managed_tiny(dir));
  const auto id = audited_beside_the_cpu(d, "vk", "vulkan");

  // The fingerprint names the device the model ran on as the server's own listing describes it
  // (lavapipe here; a GPU where the host has its driver), every layer offloaded, and the CPU
  // server none.
  const auto host = clients::host_devices("");
  const std::string listed = host.listed.at("vulkan");
  const auto vk = fingerprint_machine(d, id, "vk");
  ASSERT_TRUE(vk.contains("offload_devices")) << vk.dump();
  EXPECT_EQ(vk["offload_devices"].get<std::string>(), listed.substr(0, listed.find(':')) + " " + listed.substr(listed.find(": ") + 2))
      << vk.dump();
  expect_every_layer(vk);
  EXPECT_NE(vk.value("ggml_backends", "").find("vulkan"), std::string::npos) << vk.dump();
  const auto cpu = fingerprint_machine(d, id, "cpu");
  EXPECT_FALSE(cpu.contains("offload_devices")) << cpu.dump();
  EXPECT_EQ(cpu.value("ggml_backends", "").find("vulkan"), std::string::npos) << cpu.dump();
  fs::remove_all(dir);
}

TEST(backends_e2e, a_model_split_over_two_rpc_servers_answers_an_audit_and_its_helpers_stop) {
  if (const auto why = missing("rpc:2"); !why.empty()) GTEST_SKIP() << why;
  const fs::path dir = fs::temp_directory_path() / ("logitaudit-rpc-" + std::to_string(::getpid()));
  test_support::daemon_harness d(managed_tiny(dir));
  const auto id = audited_beside_the_cpu(d, "rpc2", "rpc:2");
  const auto rpc = fingerprint_machine(d, id, "rpc2");
  EXPECT_EQ(rpc.value("offload_devices", ""), "RPC0 ggml-rpc-server; RPC1 ggml-rpc-server") << rpc.dump();
  expect_every_layer(rpc);
  // Each ggml-rpc-server wrote its log beside the server's and was stopped with it: a process
  // that still has one of those logs open would be a leak.
  int logs = 0;
  for (const auto& e : fs::directory_iterator(dir / "logs")) {
    const auto name = e.path().filename().string();
    logs += name.ends_with("-rpc0.log") || name.ends_with("-rpc1.log");
  }
  EXPECT_EQ(logs, 2);
  for (const auto& p : fs::directory_iterator("/proc")) {
    const auto name = p.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ec;
    for (fs::directory_iterator fd(p.path() / "fd", ec), end; !ec && fd != end; fd.increment(ec)) {
      std::error_code link;
      const auto target = fs::read_symlink(fd->path(), link).string();
      const bool helper_log = target.starts_with(dir.string()) && (target.ends_with("-rpc0.log") || target.ends_with("-rpc1.log"));
      EXPECT_FALSE(!link && helper_log)
          << "process " << name << " still holds " << target;
    }
  }
  fs::remove_all(dir);
}

// No CUDA backend is in Debian's main archive, so the provisioned llama-server never lists one:
// the spec is refused before anything is stored, naming the field, the reason and what this host
// can run. A server of one's own may have CUDA, and then the test has nothing to refuse.
TEST(backends_e2e, a_device_this_host_cannot_run_is_refused_with_what_it_can) {
  if (missing("cuda").empty()) GTEST_SKIP() << "this host's llama-server lists a CUDA device";
  test_support::daemon_harness d(managed_tiny(fs::temp_directory_path() / ("logitaudit-cuda-" + std::to_string(::getpid()))));
  auto spec = spec_for("gpu", "cuda");
  auto r = d.call(http::verb::post, "/v1/audits", spec.dump());
  ASSERT_EQ(r.status, 400) << r.body;
  const auto error = r.json()["error"];
  EXPECT_EQ(error["field"], "backends[1].managed.device") << r.body;
  const std::string message = error["message"];
  EXPECT_NE(message.find("this host cannot run device 'cuda'"), std::string::npos) << message;
  EXPECT_NE(message.find("it can run: cpu"), std::string::npos) << message;
  EXPECT_EQ(d.call(http::verb::get, "/v1/audits").json()["audits"].size(), 0u) << "nothing stored";
}
