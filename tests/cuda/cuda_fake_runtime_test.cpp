// The cuda plugin's own code without a GPU: its objects linked against the
// fake CUDA runtime (tests/cuda/fake_runtime/fake_cudart.cpp: device memory
// is host memory, kernels are counted and not run) and loaded through the
// registry with the fake driver. Checks what needs no kernel: the weights
// buffer type (loom.weight_layout) is offered for Q8_0 / Q4_0 matrices and
// nothing else, stores them in the split layout and gives GGUF's bytes
// back, whole and in ranges; supports_op keeps other readers off them;
// LOOM_CUDA_REPACK=0 withdraws the offer. Skipped when the plugin is not
// built.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "loom/registry/registry.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/sched/executor.hpp"
#include "registry/registry_test_util.hpp"

namespace loom {
namespace {

using test::ScopedEnv;

class CudaOnFakeRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
#if !defined(LOOM_TEST_FAKE_CUDA_PLUGIN_DIR)
    GTEST_SKIP() << "the cuda plugin is not built (LOOM_PLUGIN_CUDA / no CUDA toolkit)";
#else
    registry::Options o;
    o.paths = {LOOM_TEST_FAKE_CUDA_PLUGIN_DIR};
    o.use_env = false;
    o.search_library_dir = false;
    o.search_install_dir = false;
    o.probe = registry::ProbeMode::kInline;
    reg_ = registry::Registry::load(o);
    dev_ = reg_->device("cuda0");
    ASSERT_NE(dev_, nullptr) << test::describe(*reg_);
#endif
  }

  // Q4_0 / Q8_0 matrix [k, m] of random canonical blocks.
  std::vector<uint8_t> blocks(loom_type_t type, int64_t k, int64_t m) {
    const size_t bb = type == LOOM_TYPE_Q4_0 ? 18 : 34;
    std::vector<uint8_t> out(static_cast<size_t>(k / 32 * m) * bb);
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& b : out) b = static_cast<uint8_t>(byte(rng_));
    return out;
  }

  // The environment the fake plugin needs, for the whole test.
  ScopedEnv driver_{"LOOM_CUDA_DRIVER", LOOM_TEST_FAKE_CUDA_DRIVER};
  ScopedEnv init_{"LOOM_FAKE_CUDA_INIT", std::string("0")};
  ScopedEnv devices_{"LOOM_FAKE_CUDA_DEVICES", std::string("1")};
  ScopedEnv cublas_{"LOOM_CUDA_CUBLAS", std::string("off")};
  ScopedEnv repack_{"LOOM_CUDA_REPACK", std::nullopt};
  std::unique_ptr<registry::Registry> reg_;
  registry::Device* dev_ = nullptr;
  Context ctx_;
  std::mt19937 rng_{2813};
};

TEST_F(CudaOnFakeRuntime, WeightsTypeHoldsQ8AndQ4MatricesSplitAndGivesGgufBytesBack) {
  for (loom_type_t type : {LOOM_TYPE_Q4_0, LOOM_TYPE_Q8_0}) {
    SCOPED_TRACE(type == LOOM_TYPE_Q4_0 ? "Q4_0" : "Q8_0");
    const int64_t k = 96, m = 5, nblk = k / 32 * m;
    const size_t bb = type == LOOM_TYPE_Q4_0 ? 18 : 34, q = bb - 2;
    Tensor* w = ctx_.new_tensor(type, {k, m}, "w").value();
    loom_buffer_type_t* bt = dev_->weight_buffer_type(w);
    ASSERT_NE(bt, nullptr);
    EXPECT_STREQ(bt->iface->name(bt), "cuda0_weights");
    Buffer keep = allocate_tensors(*dev_, {w}, bt).value();
    const std::vector<uint8_t> canonical = blocks(type, k, m);
    ASSERT_TRUE(tensor_set(w, canonical.data(), canonical.size()).ok());
    // The fake device's memory is host memory: the split layout in place.
    const auto* raw = static_cast<const uint8_t*>(w->data);
    for (int64_t i = 0; i < nblk; ++i) {
      ASSERT_EQ(std::memcmp(raw + i * q, canonical.data() + i * bb + 2, q), 0)
          << "quants of block " << i;
      ASSERT_EQ(std::memcmp(raw + nblk * q + 2 * i, canonical.data() + i * bb, 2), 0)
          << "scale of block " << i;
    }
    std::vector<uint8_t> back(canonical.size());
    ASSERT_TRUE(tensor_get(w, back.data(), back.size()).ok());
    EXPECT_EQ(back, canonical);
    // A range of whole blocks, then a range that is not.
    const std::vector<uint8_t> other = blocks(type, k, m);
    ASSERT_TRUE(tensor_set(w, other.data() + 4 * bb, 3 * bb, 4 * bb).ok());
    std::vector<uint8_t> want = canonical;
    std::memcpy(want.data() + 4 * bb, other.data() + 4 * bb, 3 * bb);
    ASSERT_TRUE(tensor_get(w, back.data(), back.size()).ok());
    EXPECT_EQ(back, want);
    std::vector<uint8_t> part(2 * bb);
    ASSERT_TRUE(tensor_get(w, part.data(), part.size(), 6 * bb).ok());
    EXPECT_EQ(0, std::memcmp(part.data(), want.data() + 6 * bb, part.size()));
    const Status bad = tensor_set(w, other.data(), bb + 1, bb);
    EXPECT_FALSE(bad.ok());
    EXPECT_NE(bad.message().find("whole blocks"), std::string::npos) << bad.message();
    // MUL_MAT reads it as A; GET_ROWS does not read it at all.
    Tensor* x = ctx_.new_tensor(LOOM_TYPE_F32, {k, 2}, "x").value();
    Tensor* idx = ctx_.new_tensor(LOOM_TYPE_I32, {2}, "idx").value();
    Buffer io = allocate_tensors(*dev_, {x, idx}).value();
    EXPECT_TRUE(dev_->supports_op(op::mul_mat(ctx_, w, x).value()));
    EXPECT_FALSE(dev_->supports_op(op::get_rows(ctx_, w, idx).value()));
  }
}

TEST_F(CudaOnFakeRuntime, WeightsTypeIsOfferedOnlyForWholeSplitableMatricesAndUnlessTurnedOff) {
  Tensor* q4k = ctx_.new_tensor(LOOM_TYPE_Q4_K, {256, 4}, "q4k").value();
  Tensor* f16 = ctx_.new_tensor(LOOM_TYPE_F16, {64, 4}, "f16").value();
  Tensor* experts = ctx_.new_tensor(LOOM_TYPE_Q4_0, {64, 4, 3}, "experts").value();
  Tensor* q4 = ctx_.new_tensor(LOOM_TYPE_Q4_0, {64, 4}, "q4").value();
  EXPECT_EQ(dev_->weight_buffer_type(q4k), nullptr);
  EXPECT_EQ(dev_->weight_buffer_type(f16), nullptr);
  EXPECT_EQ(dev_->weight_buffer_type(experts), nullptr);
  EXPECT_NE(dev_->weight_buffer_type(q4), nullptr);
  ScopedEnv off("LOOM_CUDA_REPACK", std::string("0"));
  EXPECT_EQ(dev_->weight_buffer_type(q4), nullptr);
}

}  // namespace
}  // namespace loom
