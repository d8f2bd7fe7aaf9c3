#include "vulkan_test_util.hpp"

#include "cli/run_loom.hpp"

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <random>
#include <sstream>

#include "conformance/reference.hpp"
#include "loom/sched/executor.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/types.hpp"

namespace loom::vktest {

std::unique_ptr<registry::Registry> load_registry() {
  registry::Options o;
  o.paths = {LOOM_TEST_PLUGIN_DIR};
  o.use_env = false;
  o.search_library_dir = false;
  o.search_install_dir = false;
  return registry::Registry::load(o);
}

std::string report(const registry::Registry& reg) {
  std::ostringstream os;
  for (const registry::Candidate& c : reg.candidates()) {
    os << "\n  " << c.path << ": " << registry::fate_name(c.fate) << " at "
       << registry::stage_name(c.stage) << " " << c.reason;
  }
  return os.str();
}

const registry::Candidate* candidate(const registry::Registry& reg, const std::string& name) {
  for (const registry::Candidate& c : reg.candidates()) {
    if (c.plugin == name) return &c;
  }
  return nullptr;
}

Status run_small_graph(registry::Device* dev, std::vector<float>* out) {
  Context ctx;
  LOOM_ASSIGN_OR_RETURN(Tensor * a, ctx.new_tensor(LOOM_TYPE_Q8_0, {64, 24}, "a"));
  LOOM_ASSIGN_OR_RETURN(Tensor * b, ctx.new_tensor(LOOM_TYPE_F32, {64, 5}, "b"));
  a->flags |= LOOM_TENSOR_FLAG_INPUT;
  b->flags |= LOOM_TENSOR_FLAG_INPUT;
  LOOM_ASSIGN_OR_RETURN(Tensor * mm, op::mul_mat(ctx, a, b));
  LOOM_ASSIGN_OR_RETURN(Tensor * sm, op::soft_max(ctx, mm, nullptr, 0.5f));
  LOOM_ASSIGN_OR_RETURN(Tensor * nm, op::rms_norm(ctx, sm, 1e-5f));
  LOOM_ASSIGN_OR_RETURN(Tensor * y, op::silu(ctx, nm));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> av(64 * 24), bv(64 * 5);
  for (float& v : av) v = dist(rng);
  // B on the 8-bit grid of each block of 32 (k/127, one of them 127/127): a
  // device that rounds B to 8 bits for quantized A (the cpu plugin's int8
  // path) computes the same products as one that keeps it f32.
  std::uniform_int_distribution<int> q(-127, 127);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = (i % 32 == 0 ? 127 : q(rng)) / 127.0f;
  std::vector<uint8_t> aq(34 * 2 * 24);
  loom::from_float(LOOM_TYPE_Q8_0, av.data(), aq.data(), static_cast<int64_t>(av.size()));
  LOOM_ASSIGN_OR_RETURN(Graph g, Graph::build({y}));
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex, Executor::create(dev));
  LOOM_RETURN_IF_ERROR(ex->allocate(g));
  LOOM_RETURN_IF_ERROR(tensor_set(a, aq.data(), aq.size()));
  LOOM_RETURN_IF_ERROR(tensor_set(b, bv.data(), bv.size() * 4));
  LOOM_RETURN_IF_ERROR(ex->compute(g));
  out->assign(24 * 5, 0.0f);
  return tensor_get(y, out->data(), out->size() * 4);
}

#ifndef LOOM_MODELS_DIR_DEFAULT
#define LOOM_MODELS_DIR_DEFAULT "../shared/models"
#endif

std::string model_path() {
  const char* env = std::getenv("LOOM_MODELS_DIR");
  return std::string(env != nullptr && *env != '\0' ? env : LOOM_MODELS_DIR_DEFAULT) + "/stories260K.gguf";
}

ProcResult run_loom(const std::string& args, bool merge_stderr, const std::string& env) {
  const test::LoomResult r = test::run_loom(args, env, merge_stderr);
  return ProcResult{r.exit_code, r.out};
}

int mismatches(const std::vector<double>& got, const std::vector<double>& ref, const std::vector<double>& tol) {
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) bad += std::fabs(got[i] - ref[i]) > tol[i] ? 1 : 0;
  return bad;
}

Status run_random_product(registry::Device* dev, loom_type_t t, int64_t k, int64_t m, int64_t n, uint32_t seed,
                          std::vector<double>* a, std::vector<float>* b, std::vector<float>* out) {
  namespace cf = loom::conformance;
  std::mt19937 rng(seed);
  const size_t a_bytes = cf::row_bytes(t, k) * static_cast<size_t>(m);
  std::vector<uint8_t> aq(a_bytes);
  if (cf::is_weight_quant(t)) {
    cf::random_weight_blocks(t, static_cast<int64_t>(a_bytes / cf::block_bytes(t)), rng, aq.data());
  } else {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> af(static_cast<size_t>(k * m));
    for (float& v : af) v = dist(rng);
    loom::from_float(t, af.data(), aq.data(), k * m);
  }
  *a = cf::is_weight_quant(t) ? cf::decode_weight_blocks(t, aq.data(), k * m) : cf::decode(t, aq.data(), k * m);
  std::uniform_real_distribution<float> bdist(-2.0f, 2.0f);
  b->resize(static_cast<size_t>(k * n * 2));
  for (float& v : *b) v = bdist(rng);

  Context ctx;
  LOOM_ASSIGN_OR_RETURN(Tensor * ta, ctx.new_tensor(t, {k, m}, "a"));
  LOOM_ASSIGN_OR_RETURN(Tensor * tb, ctx.new_tensor(LOOM_TYPE_F32, {k, n, 2}, "b"));
  ta->flags |= LOOM_TENSOR_FLAG_INPUT;
  tb->flags |= LOOM_TENSOR_FLAG_INPUT;
  LOOM_ASSIGN_OR_RETURN(Tensor * y, op::mul_mat(ctx, ta, tb));
  LOOM_ASSIGN_OR_RETURN(Graph g, Graph::build({y}));
  LOOM_ASSIGN_OR_RETURN(std::unique_ptr<Executor> ex, Executor::create(dev));
  LOOM_RETURN_IF_ERROR(ex->allocate(g));
  LOOM_RETURN_IF_ERROR(tensor_set(ta, aq.data(), aq.size()));
  LOOM_RETURN_IF_ERROR(tensor_set(tb, b->data(), b->size() * 4));
  LOOM_RETURN_IF_ERROR(ex->compute(g));
  out->resize(static_cast<size_t>(m * n * 2));
  return tensor_get(y, out->data(), out->size() * 4);
}

void DisabledFeaturesTest::SetUp() {
  const char* old = std::getenv("LOOM_VULKAN_DISABLE");
  had_ = old != nullptr;
  if (had_) old_ = old;
  setenv("LOOM_VULKAN_DISABLE", GetParam(), 1);
  reg_ = load_registry();
  dev_ = reg_->device("vulkan0");
  if (dev_ == nullptr) GTEST_SKIP() << "no vulkan0 here:" << report(*reg_);
}

void DisabledFeaturesTest::TearDown() {
  reg_.reset();
  if (had_) {
    setenv("LOOM_VULKAN_DISABLE", old_.c_str(), 1);
  } else {
    unsetenv("LOOM_VULKAN_DISABLE");
  }
}

}  // namespace loom::vktest
