// The activation-sparse FFN against the dense one on one device (the CPU
// plugin; LOOM_BENCH_DEVICE=<name> picks another): one decode token through
// an FFN of n_embd -> n_ff -> n_embd, gate/up/down of one weight type.
//   dense:  relu(gate x) * (up x), then down (three MUL_MATs)
//   sparse: the predictor (rank r: [n_embd, 2r], [2r, n_ff], F32; the
//           _pq8 rows: Q8_0, as make_sparse_gguf.py --pred-type q8_0) then
//           MUL_MAT_SPARSE_ROWS for gate and up, MUL_MAT_SPARSE_COLS for
//           the neuron-major down, with random scores of which `active`
//           percent pass the threshold.
// Args: n_embd, n_ff, active percent (sparse only). The time of a sparse row
// over the dense row of the same shape and type is the FFN speed-up;
// bench/README.md has the command and a table.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "loom/sched/executor.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/registry/registry.hpp"
#include "loom/runtime/types.hpp"

namespace {

constexpr int64_t kRank = 64;

loom::registry::Device* bench_device() {
  static std::unique_ptr<loom::registry::Registry> reg = [] {
    loom::registry::Options o;
    o.paths.push_back(LOOM_BENCH_PLUGIN_DIR);
    return loom::registry::Registry::load(o);
  }();
  const char* env = std::getenv("LOOM_BENCH_DEVICE");
  return reg ? reg->device(env != nullptr && *env != '\0' ? env : "cpu") : nullptr;
}

// Random weights of `type` [ne0, ne1] (floats in [-1, 1) converted).
std::vector<uint8_t> random_weight(loom_type_t type, int64_t ne0, int64_t ne1, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> f(static_cast<size_t>(ne0));
  std::vector<uint8_t> out(loom::type_row_size(type, ne0) * static_cast<size_t>(ne1));
  for (int64_t r = 0; r < ne1; ++r) {
    for (float& v : f) v = u(rng);
    loom::from_float(type, f.data(), out.data() + static_cast<size_t>(r) * loom::type_row_size(type, ne0), ne0);
  }
  return out;
}

struct Leaf {
  loom::Tensor* t;
  std::vector<uint8_t> bytes;
};

void run(benchmark::State& state, loom_type_t type, bool sparse, loom_type_t pred_type = LOOM_TYPE_F32) {
  const int64_t d = state.range(0), ff = state.range(1);
  const double active = sparse ? static_cast<double>(state.range(2)) / 100.0 : 1.0;
  loom::registry::Device* dev = bench_device();
  if (!dev) {
    state.SkipWithError("no bench device");
    return;
  }
  std::mt19937 rng(7);
  loom::Context ctx;
  std::vector<Leaf> leaves;
  auto leaf = [&](loom_type_t t, int64_t ne0, int64_t ne1, const char* name) -> loom::Tensor* {
    loom::Tensor* x = ctx.new_tensor(t, {ne0, ne1}, name).value();
    leaves.push_back({x, random_weight(t, ne0, ne1, rng)});
    return x;
  };
  loom::Tensor* x = leaf(LOOM_TYPE_F32, d, 1, "x");
  loom::Tensor* gate = leaf(type, d, ff, "gate");
  loom::Tensor* up = leaf(type, d, ff, "up");
  loom::Tensor* out = nullptr;
  if (!sparse) {
    loom::Tensor* down = leaf(type, ff, d, "down");
    loom::Tensor* g = loom::op::relu(ctx, loom::op::mul_mat(ctx, gate, x).value()).value();
    loom::Tensor* h = loom::op::mul(ctx, g, loom::op::mul_mat(ctx, up, x).value()).value();
    out = loom::op::mul_mat(ctx, down, h).value();
  } else {
    loom::Tensor* down_t = leaf(type, d, ff, "down_t");
    loom::Tensor* p1 = leaf(pred_type, d, 2 * kRank, "pred_in");
    loom::Tensor* p2 = leaf(pred_type, 2 * kRank, ff, "pred_out");
    // The predictor's logits are computed (their cost counts), but which
    // neurons pass is set by an added score: 0 or -1e30 with P(active).
    loom::Tensor* mask = ctx.new_tensor(LOOM_TYPE_F32, {ff, 1}, "mask").value();
    std::vector<float> m(static_cast<size_t>(ff));
    std::bernoulli_distribution on(active);
    for (float& v : m) v = on(rng) ? 1e30f : -1e30f;
    leaves.push_back({mask, std::vector<uint8_t>(reinterpret_cast<uint8_t*>(m.data()),
                                                 reinterpret_cast<uint8_t*>(m.data() + m.size()))});
    loom::Tensor* z = loom::op::mul_mat(ctx, p2, loom::op::relu(ctx, loom::op::mul_mat(ctx, p1, x).value()).value()).value();
    z = loom::op::add(ctx, z, mask).value();
    loom::Tensor* g = loom::op::relu(ctx, loom::op::mul_mat_sparse_rows(ctx, gate, x, z, 0.0f).value()).value();
    loom::Tensor* h = loom::op::mul(ctx, g, loom::op::mul_mat_sparse_rows(ctx, up, x, z, 0.0f).value()).value();
    out = loom::op::mul_mat_sparse_cols(ctx, down_t, h, z, 0.0f).value();
  }
  auto graph = loom::Graph::build({out});
  auto ex = graph.ok() ? loom::Executor::create(dev) : loom::StatusOr<std::unique_ptr<loom::Executor>>(graph.status());
  loom::Status st = ex.ok() ? (*ex)->allocate(*graph) : ex.status();
  for (const Leaf& l : leaves) {
    if (st.ok()) st = loom::tensor_set(l.t, l.bytes.data(), l.bytes.size());
  }
  while (st.ok() && state.KeepRunning()) st = (*ex)->compute(*graph);
  if (!st.ok()) {
    state.SkipWithError(st.message().c_str());
    return;
  }
  state.SetLabel(std::string(loom::type_name(type)) + (sparse ? " sparse, predictor " + std::string(loom::type_name(pred_type)) : " dense"));
  // Weight bytes a dense pass reads (the sparse one reads ~active of them).
  state.counters["weight_MB"] = 3.0 * static_cast<double>(loom::type_row_size(type, d) * static_cast<size_t>(ff)) / 1e6;
}

void BM_ffn_dense(benchmark::State& state, loom_type_t type) { run(state, type, false); }
void BM_ffn_sparse(benchmark::State& state, loom_type_t type) { run(state, type, true); }
void BM_ffn_sparse_pq8(benchmark::State& state, loom_type_t type) { run(state, type, true, LOOM_TYPE_Q8_0); }

}  // namespace

#define LOOM_FFN_BENCH(name, type)                                                                             \
  BENCHMARK_CAPTURE(BM_ffn_dense, name, type)->Args({2048, 8192, 100})->Unit(benchmark::kMicrosecond)->UseRealTime(); \
  BENCHMARK_CAPTURE(BM_ffn_sparse, name, type)->Args({2048, 8192, 10})->Unit(benchmark::kMicrosecond)->UseRealTime(); \
  BENCHMARK_CAPTURE(BM_ffn_sparse_pq8, name, type)->Args({2048, 8192, 10})->Unit(benchmark::kMicrosecond)->UseRealTime();
LOOM_FFN_BENCH(q8_0, LOOM_TYPE_Q8_0)
LOOM_FFN_BENCH(q4_0, LOOM_TYPE_Q4_0)
LOOM_FFN_BENCH(f16, LOOM_TYPE_F16)

BENCHMARK_MAIN();
