// The CUDA plugin on a GPU (labels cuda;gpu; every test skips with the
// registry's reason where there is no cuda0): device properties, out of
// memory leaving the device usable, a bad row index reported by
// synchronize, and stories260K greedy through the loom binary on cuda0,
// cuda0 beside the CPU, with CUDA graphs and without cuBLAS — each must
// print exactly the CPU's text.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/run_loom.hpp"
#include "loom/sched/executor.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/registry/registry.hpp"
#include "registry/registry_test_util.hpp"
#include "loom/runtime/tensor.hpp"

#ifndef LOOM_MODELS_DIR_DEFAULT
#define LOOM_MODELS_DIR_DEFAULT "../shared/models"
#endif

namespace loom {
namespace {

std::unique_ptr<registry::Registry> load_registry() {
  registry::Options o;
  o.paths = {LOOM_TEST_PLUGIN_DIR};
  // The emulated plugin (tests/cuda/emu: ctest's cuda_emu.* run these
  // cases on its cuda0 without a GPU).
  const char* dir = std::getenv("LOOM_TEST_DEVICE_PLUGIN_DIR");
  if (dir != nullptr && *dir != '\0') o.paths = {dir};
  o.use_env = false;
  o.search_library_dir = false;
  o.search_install_dir = false;
  return registry::Registry::load(o);
}

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    reg_ = load_registry();
    dev_ = reg_->device("cuda0");
    if (dev_ == nullptr) GTEST_SKIP() << "no cuda0 here:" << test::describe(*reg_);
  }
  std::unique_ptr<registry::Registry> reg_;
  registry::Device* dev_ = nullptr;
};

TEST_F(CudaDevice, PropertiesNameTheGpu) {
  const registry::DeviceInfo& info = dev_->info();
  EXPECT_EQ(info.plugin, "cuda");
  EXPECT_EQ(info.type, LOOM_DEVICE_TYPE_GPU);
  EXPECT_NE(info.description.find("compute capability"), std::string::npos) << info.description;
  EXPECT_EQ(info.uuid.size(), 32u);
  EXPECT_FALSE(info.pci_bus_id.empty());
  EXPECT_GT(info.memory_total, 0u);
  EXPECT_GT(info.memory_free, 0u);
  EXPECT_NE(info.caps & LOOM_DEVICE_CAP_ASYNC, 0u);
  EXPECT_NE(info.caps & LOOM_DEVICE_CAP_EVENTS, 0u);
  // The Vulkan plugin's view of the same card is hidden, never cuda0.
  for (const std::string& d : reg_->duplicates()) EXPECT_EQ(d.rfind("cuda", 0), std::string::npos) << d;
}

TEST_F(CudaDevice, OutOfMemoryNamesTheBytesAndTheDeviceStaysUsable) {
  const size_t huge = static_cast<size_t>(dev_->info().memory_total) * 4;
  StatusOr<Buffer> big = dev_->alloc_buffer(huge);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted) << big.status().to_string();
  EXPECT_NE(big.status().to_string().find("requested " + std::to_string(huge) + " bytes"), std::string::npos)
      << big.status().to_string();
  EXPECT_NE(big.status().to_string().find("bytes free"), std::string::npos) << big.status().to_string();
  StatusOr<Buffer> small = dev_->alloc_buffer(1 << 20);
  EXPECT_TRUE(small.ok()) << small.status().to_string();
}

TEST_F(CudaDevice, BadRowIndexIsAnErrorNotACrash) {
  Context ctx;
  StatusOr<Tensor*> a = ctx.new_tensor(LOOM_TYPE_F32, {8, 4}, "a");
  StatusOr<Tensor*> idx = ctx.new_tensor(LOOM_TYPE_I32, {2}, "idx");
  ASSERT_TRUE(a.ok() && idx.ok());
  (*a)->flags |= LOOM_TENSOR_FLAG_INPUT;
  (*idx)->flags |= LOOM_TENSOR_FLAG_INPUT;
  StatusOr<Tensor*> rows = op::get_rows(ctx, *a, *idx);
  ASSERT_TRUE(rows.ok());
  StatusOr<Graph> g = Graph::build({*rows});
  ASSERT_TRUE(g.ok());
  StatusOr<std::unique_ptr<Executor>> ex = Executor::create(dev_);
  ASSERT_TRUE(ex.ok()) << ex.status().to_string();
  ASSERT_TRUE((*ex)->allocate(*g).ok());
  std::vector<float> av(32, 1.0f);
  const int32_t bad[2] = {1, 9};
  ASSERT_TRUE(tensor_set(*a, av.data(), av.size() * 4).ok());
  ASSERT_TRUE(tensor_set(*idx, bad, sizeof bad).ok());
  Status st = (*ex)->compute(*g);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.to_string().find("row index"), std::string::npos) << st.to_string();
  // The device keeps working.
  const int32_t good[2] = {1, 3};
  ASSERT_TRUE(tensor_set(*idx, good, sizeof good).ok());
  EXPECT_TRUE((*ex)->compute(*g).ok());
}

std::string model_path() {
  const char* env = std::getenv("LOOM_MODELS_DIR");
  return std::string(env != nullptr && *env != '\0' ? env : LOOM_MODELS_DIR_DEFAULT) + "/stories260K.gguf";
}

class CudaStories : public CudaDevice {
 protected:
  void SetUp() override {
    CudaDevice::SetUp();
    if (IsSkipped()) return;
    if (!std::ifstream(model_path()).good()) GTEST_SKIP() << model_path() << " not found (LOOM_MODELS_DIR)";
    cpu_ = generate("cpu");
    ASSERT_EQ(cpu_.exit_code, 0) << cpu_.out;
    ASSERT_NE(cpu_.out.find("Once upon a time, there was a little girl named Lily."), std::string::npos) << cpu_.out;
  }
  static test::LoomResult generate(const std::string& devices, const std::string& env = "") {
    return test::run_loom("run -m " + model_path() + " -n 48 --device " + devices, plugin_env() + env, false);
  }
  // run_loom clears the plugin path: the emulated plugin's folder again.
  static std::string plugin_env() {
    const char* dir = std::getenv("LOOM_TEST_DEVICE_PLUGIN_DIR");
    if (dir == nullptr || *dir == '\0') return "";
    return std::string("LOOM_PLUGIN_PATH=") + dir + " LOOM_PLUGINS_SELECT='cuda,cpu*' ";
  }
  test::LoomResult cpu_;
};

TEST_F(CudaStories, Cuda0AloneMatchesCpu) {
  test::LoomResult r = generate("cuda0");
  EXPECT_EQ(r.exit_code, 0) << test::run_loom("run -m " + model_path() + " -n 4 --device cuda0", plugin_env()).out;
  EXPECT_EQ(r.out, cpu_.out);
}

TEST_F(CudaStories, Cuda0WithCpuMatchesCpu) {
  for (const char* layers : {"5", "3"}) {
    test::LoomResult r = generate(std::string("cuda0,cpu --n-gpu-layers ") + layers);
    EXPECT_EQ(r.exit_code, 0) << layers;
    EXPECT_EQ(r.out, cpu_.out) << "--n-gpu-layers " << layers;
  }
}

// CUDA graphs are on by default (Cuda0AloneMatchesCpu runs them); here
// the eager path.
TEST_F(CudaStories, CudaGraphsOffAndNoCublasMatchCpu) {
  test::LoomResult eager = generate("cuda0", "LOOM_CUDA_GRAPHS=0");
  EXPECT_EQ(eager.exit_code, 0);
  EXPECT_EQ(eager.out, cpu_.out) << "LOOM_CUDA_GRAPHS=0";
  test::LoomResult gemv = generate("cuda0", "LOOM_CUDA_CUBLAS=off");
  EXPECT_EQ(gemv.exit_code, 0);
  EXPECT_EQ(gemv.out, cpu_.out) << "LOOM_CUDA_CUBLAS=off";
}

}  // namespace
}  // namespace loom
