// Helpers for the scheduler tests: a hermetic registry holding the
// simulated devices (configured through scoped env variables) and the CPU
// plugin, host <-> tensor helpers and the comparison rule.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "loom/sched/executor.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/registry/registry.hpp"
#include "loom/sched/scheduler.hpp"
#include "registry/registry_test_util.hpp"

namespace loom::schedtest {

using test::ScopedEnv;

inline std::string sim_path() { return std::string(LOOM_TEST_SIM_DIR) + "/libloom-sim.so"; }
inline std::string cpu_path() { return std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom-cpu.so"; }
inline std::string null_path() { return std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom-null.so"; }

// The sim plugin's configuration for one registry load: n devices, the op
// list of each (std::nullopt = every op). Variables are restored when the
// SimSetup dies; the plugin reads them at load, LOOM_SIM_FAIL_AT at compute.
class SimSetup {
 public:
  // host[i]: device i has host-readable memory (LOOM_SIM_HOST_<i>=1).
  SimSetup(int n, std::vector<std::optional<std::string>> ops, bool with_null = false,
           std::vector<bool> host = {})
      : devices_("LOOM_SIM_DEVICES", std::to_string(n)),
        null_("LOOM_NULL_DEVICES", with_null ? std::optional<std::string>("1") : std::nullopt),
        fail_("LOOM_SIM_FAIL_AT", std::nullopt) {
    ops.resize(4);
    for (size_t i = 0; i < 4; ++i) {
      env_.push_back(
          std::make_unique<ScopedEnv>(("LOOM_SIM_OPS_" + std::to_string(i)).c_str(), ops[i]));
      const bool h = i < host.size() && host[i];
      env_.push_back(
          std::make_unique<ScopedEnv>(("LOOM_SIM_HOST_" + std::to_string(i)).c_str(),
                                      h ? std::optional<std::string>("1") : std::nullopt));
    }
    // push_back, not an initializer list: GCC 12 at -O1 warns falsely
    // (-Warray-bounds) on a list of two std::string temporaries.
    std::vector<std::string> paths;
    paths.push_back(sim_path());
    paths.push_back(cpu_path());
    if (with_null) paths.push_back(null_path());
    reg_ = registry::Registry::load(test::only(paths));
  }
  registry::Registry& reg() { return *reg_; }
  registry::Device* dev(const std::string& name) { return reg_->device(name); }
  bool ready() const { return reg_->device("cpu") != nullptr && reg_->device("sim0") != nullptr; }
  std::string why() const { return test::describe(*reg_); }

 private:
  ScopedEnv devices_, null_, fail_;
  std::vector<std::unique_ptr<ScopedEnv>> env_;
  std::unique_ptr<registry::Registry> reg_;
};

inline std::vector<float> random_values(size_t n, std::mt19937& rng, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// sim0 .. sim<n_sim - 1>, then cpu: the device list of the equivalence tests.
inline std::vector<registry::Device*> sims_then_cpu(SimSetup& env, int n_sim) {
  std::vector<registry::Device*> devices;
  for (int i = 0; i < n_sim; ++i) devices.push_back(env.dev("sim" + std::to_string(i)));
  devices.push_back(env.dev("cpu"));
  return devices;
}

// Each weight in its own buffer on a device drawn from rng.
inline Status place_randomly(const std::vector<Tensor*>& weights, const std::vector<registry::Device*>& devices,
                             std::mt19937& rng, std::vector<Buffer>* buffers) {
  for (Tensor* w : weights) {
    registry::Device* d = devices[std::uniform_int_distribution<size_t>(0, devices.size() - 1)(rng)];
    StatusOr<Buffer> b = allocate_tensors(*d, {w});
    if (!b.ok()) return b.status();
    buffers->push_back(std::move(b).value());
  }
  return Status();
}

inline Status set_f32(Tensor* t, const std::vector<float>& v) {
  return tensor_set(t, v.data(), v.size() * sizeof(float));
}

inline std::vector<float> get_f32(const Tensor* t) {
  std::vector<float> v(static_cast<size_t>(t->nelements()));
  Status st = tensor_get(t, v.data(), v.size() * sizeof(float));
  EXPECT_TRUE(st.ok()) << st.to_string();
  return v;
}

// |a - b| <= 1e-5 (|b| + 1) elementwise.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_LE(std::fabs(got[i] - want[i]), 1e-5 * (std::fabs(want[i]) + 1.0))
        << what << " element " << i << ": got " << got[i] << ", want " << want[i];
  }
}

// The random graphs' activations are [kDim, kTok], their weights [kDim, kDim].
inline constexpr int64_t kDim = 16;
inline constexpr int64_t kTok = 4;

// A random non-empty subset of the ops the simulated devices may run
// (LOOM_SIM_OPS), so graphs split differently.
inline std::string random_ops(std::mt19937& rng) {
  static const char* const kOps[] = {"ADD",      "MUL",      "SCALE", "MUL_MAT",
                                     "RMS_NORM", "SOFT_MAX", "SILU",  "CONT"};
  std::string s;
  for (const char* op : kOps) {
    if (std::uniform_int_distribution<int>(0, 1)(rng)) s += std::string(s.empty() ? "" : ",") + op;
  }
  return s.empty() ? "ADD" : s;
}

}  // namespace loom::schedtest

#define SCHED_REQUIRE_DEVICES(setup)                                                          \
  do {                                                                                        \
    if (!(setup).ready()) GTEST_SKIP() << "sim or cpu plugin not loaded:\n" << (setup).why(); \
  } while (0)

// lhs = value of a StatusOr expression, or fail the test.
#define SCHED_ASSIGN(lhs, expr) SCHED_ASSIGN_IMPL_(LOOM_CONCAT_(sched_or_, __LINE__), lhs, expr)
#define SCHED_ASSIGN_IMPL_(tmp, lhs, expr)                            \
  auto tmp = (expr);                                                  \
  ASSERT_TRUE(tmp.ok()) << #expr << ": " << tmp.status().to_string(); \
  lhs = std::move(tmp).value()
#define SCHED_OK(expr)                                                     \
  do {                                                                     \
    ::loom::Status sched_st_ = (expr);                                     \
    ASSERT_TRUE(sched_st_.ok()) << #expr << ": " << sched_st_.to_string(); \
  } while (0)
