// Micro-benchmarks of MUL_MAT with F32, Q8_0 and Q4_0 weights (activations
// F32) on one device (the CPU plugin; LOOM_BENCH_DEVICE=<name> picks another,
// e.g. vulkan0), next to OpenBLAS cblas_sgemm on the same shapes when
// OpenBLAS was found, and a multi-threaded memory read-bandwidth probe.
//
// Shapes: weights [K, M] (M rows of K), activations [K, N], out [M, N].
// Counters: FLOP/s (2*M*N*K per iteration) and, for loom, blas_time_ratio =
// loom time / cblas_sgemm time on the same shape (1.0: as fast as OpenBLAS;
// measured once per shape, f32 operands, before the loom loop).
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "loom/sched/executor.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/registry/registry.hpp"
#include "loom/runtime/types.hpp"

#ifdef LOOM_BENCH_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

double now_s() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

const char* device_name() {
  const char* env = std::getenv("LOOM_BENCH_DEVICE");
  return env != nullptr && *env != '\0' ? env : "cpu";
}

// The registry with the build tree's plugins, loaded once; the device named
// by LOOM_BENCH_DEVICE (default cpu).
loom::registry::Device* bench_device() {
  static std::unique_ptr<loom::registry::Registry> reg = [] {
    loom::registry::Options o;
    o.paths.push_back(LOOM_BENCH_PLUGIN_DIR);
    return loom::registry::Registry::load(o);
  }();
  return reg ? reg->device(device_name()) : nullptr;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// n words on 2 MiB boundaries with transparent huge pages asked for
// (MADV_HUGEPAGE), as the cpu plugin's large buffers are: the bandwidth
// probes read memory the way the kernels do.
class HugeBuffer {
 public:
  explicit HugeBuffer(size_t n) : bytes_((n * sizeof(uint64_t) + kHuge - 1) / kHuge * kHuge) {
    p_ = static_cast<uint64_t*>(std::aligned_alloc(kHuge, bytes_));
    if (p_ == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    (void)::madvise(p_, bytes_, MADV_HUGEPAGE);
#endif
  }
  ~HugeBuffer() { std::free(p_); }
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;
  uint64_t& operator[](size_t i) { return p_[i]; }
  const uint64_t& operator[](size_t i) const { return p_[i]; }

 private:
  static constexpr size_t kHuge = size_t{2} << 20;
  size_t bytes_;
  uint64_t* p_;
};

// Sum of a slice of buf (4 independent chains), for the bandwidth probes.
uint64_t sum_slice(const HugeBuffer& buf, size_t lo, size_t hi) {
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  size_t i = lo;
  for (; i + 4 <= hi; i += 4) {
    a0 += buf[i];
    a1 += buf[i + 1];
    a2 += buf[i + 2];
    a3 += buf[i + 3];
  }
  for (; i < hi; ++i) a0 += buf[i];
  return a0 + a1 + a2 + a3;
}

// Read bandwidth in GB/s with `threads` threads over a 256 MiB buffer, best
// of 5 passes; measured once per run for the bw_fraction counters.
double measured_bandwidth_gbs(int threads = 2) {
  static const double gbs = [threads] {
    const size_t n = (size_t{256} << 20) / sizeof(uint64_t);
    HugeBuffer buf(n);
    for (size_t i = 0; i < n; ++i) buf[i] = i;
    std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      const double t0 = now_s();
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          sums[static_cast<size_t>(t) * 8] += sum_slice(buf, n * t / threads, n * (t + 1) / threads);
        });
      }
      for (auto& th : pool) th.join();
      best = std::min(best, now_s() - t0);
    }
    benchmark::DoNotOptimize(sums.data());
    return static_cast<double>(n * sizeof(uint64_t)) / best / 1e9;
  }();
  return gbs;
}

#ifdef LOOM_BENCH_HAVE_OPENBLAS
// Seconds per cblas_sgemm of out[N][M] = x[N][K] * w[M][K]^T, best of a few.
double blas_seconds(int64_t k, int64_t m, int64_t n) {
  static std::map<std::tuple<int64_t, int64_t, int64_t>, double> cache;
  auto key = std::make_tuple(k, m, n);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  std::vector<float> w = random_floats(static_cast<size_t>(k * m), 1);
  std::vector<float> x = random_floats(static_cast<size_t>(k * n), 2);
  std::vector<float> out(static_cast<size_t>(m * n));
  auto once = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n), static_cast<int>(m),
                static_cast<int>(k), 1.0f, x.data(), static_cast<int>(k), w.data(), static_cast<int>(k), 0.0f,
                out.data(), static_cast<int>(m));
  };
  once();  // warm-up: threads, pages
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const int iters = n >= 64 ? 3 : 20;
    const double t0 = now_s();
    for (int i = 0; i < iters; ++i) once();
    best = std::min(best, (now_s() - t0) / iters);
  }
  benchmark::DoNotOptimize(out.data());
  cache[key] = best;
  return best;
}

void BM_blas_sgemm(benchmark::State& state) {
  const int64_t k = state.range(0), m = state.range(1), n = state.range(2);
  std::vector<float> w = random_floats(static_cast<size_t>(k * m), 1);
  std::vector<float> x = random_floats(static_cast<size_t>(k * n), 2);
  std::vector<float> out(static_cast<size_t>(m * n));
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n), static_cast<int>(m),
                static_cast<int>(k), 1.0f, x.data(), static_cast<int>(k), w.data(), static_cast<int>(k), 0.0f,
                out.data(), static_cast<int>(m));
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(k * m * n), benchmark::Counter::kIsIterationInvariantRate);
}
#endif

// MUL_MAT on the bench device with `type` weights.
// Byte offsets of the f16 scales in one block of a weight type no
// quantizer writes (plugin.h's layouts), or nullptr for the others.
const std::vector<size_t>* weight_scale_offsets(loom_type_t type) {
  static const std::vector<size_t> q4_k = {0, 2}, q6_k = {208}, q3_k = {108}, q2_k = {80, 82}, d_m = {0, 2}, d = {0};
  switch (type) {
    case LOOM_TYPE_Q4_K:
    case LOOM_TYPE_Q5_K: return &q4_k;
    case LOOM_TYPE_Q6_K: return &q6_k;
    case LOOM_TYPE_Q3_K: return &q3_k;
    case LOOM_TYPE_Q2_K: return &q2_k;
    case LOOM_TYPE_Q4_1:
    case LOOM_TYPE_Q5_1: return &d_m;
    case LOOM_TYPE_Q5_0:
    case LOOM_TYPE_IQ4_NL:
    case LOOM_TYPE_IQ4_XS: return &d;
    default: return nullptr;
  }
}

void fill_weight_blocks(loom_type_t type, const std::vector<size_t>& scales, std::vector<uint8_t>& out) {
  std::mt19937 rng(3);
  for (uint8_t& b : out) b = static_cast<uint8_t>(rng());
  const size_t bs = loom::type_size(type);
  const uint16_t one_1024 = 0x1400;  // f16 2^-10
  for (size_t blk = 0; blk + bs <= out.size(); blk += bs) {
    for (size_t off : scales) std::memcpy(out.data() + blk + off, &one_1024, 2);
  }
}

void BM_loom_mul_mat(benchmark::State& state, loom_type_t type) {
  const int64_t k = state.range(0), m = state.range(1), n = state.range(2);
  loom::registry::Device* dev = bench_device();
  if (!dev) {
    const std::string why = std::string("no device '") + device_name() +
                            "' (plugins under " LOOM_BENCH_PLUGIN_DIR "; see 'loom devices')";
    state.SkipWithError(why.c_str());
    return;
  }
  loom::Context ctx;
  auto w = ctx.new_tensor(type, {k, m}, "w");
  auto x = w.ok() ? ctx.new_tensor(LOOM_TYPE_F32, {k, n}, "x") : w;
  auto y = x.ok() ? loom::op::mul_mat(ctx, *w, *x) : x;
  if (!y.ok()) {
    state.SkipWithError(y.status().message().c_str());
    return;
  }
  auto g = loom::Graph::build({*y});
  auto ex = loom::Executor::create(dev);
  if (!g.ok() || !ex.ok()) {
    state.SkipWithError(!g.ok() ? g.status().message().c_str() : ex.status().message().c_str());
    return;
  }
  // Weights where a model load puts them: the device's weight layout when it
  // offers one (loom.weight_layout; LOOM_BENCH_CANONICAL=1 keeps GGUF bytes).
  loom::Status st;
  loom::Buffer weights;
  const char* canonical = std::getenv("LOOM_BENCH_CANONICAL");
  loom_buffer_type_t* wbt = canonical != nullptr && canonical[0] == '1' ? nullptr : dev->weight_buffer_type(*w);
  if (wbt != nullptr) {
    auto wb = loom::allocate_tensors(*dev, {*w}, wbt);
    if (wb.ok()) weights = std::move(wb).value();
    st = wb.status();
  }
  if (st.ok()) st = (*ex)->allocate(*g);
  // Weights: random floats quantized row by row to `type`; the read-only
  // weight types (K-quants, ...) get random bytes with every scale 1/1024
  // (their speed does not depend on the values).
  std::vector<float> wf = random_floats(static_cast<size_t>(k * m), 1);
  std::vector<uint8_t> wq(loom::type_row_size(type, k) * static_cast<size_t>(m));
  if (const auto* scales = weight_scale_offsets(type)) {
    fill_weight_blocks(type, *scales, wq);
  } else {
    for (int64_t r = 0; st.ok() && r < m; ++r) {
      loom::from_float(type, wf.data() + r * k, wq.data() + static_cast<size_t>(r) * loom::type_row_size(type, k), k);
    }
  }
  std::vector<float> xf = random_floats(static_cast<size_t>(k * n), 2);
  if (st.ok()) st = loom::tensor_set(*w, wq.data(), wq.size());
  if (st.ok()) st = loom::tensor_set(*x, xf.data(), xf.size() * sizeof(float));
  if (st.ok()) st = (*ex)->compute(*g);  // warm-up
  if (!st.ok()) {
    state.SkipWithError(st.message().c_str());
    return;
  }
#ifdef LOOM_BENCH_HAVE_OPENBLAS
  const double blas = blas_seconds(k, m, n);
#endif
  const double t0 = now_s();
  for (auto _ : state) {
    st = (*ex)->compute(*g);
    if (!st.ok()) {
      state.SkipWithError(st.message().c_str());
      break;
    }
  }
  const double per_iter = (now_s() - t0) / static_cast<double>(std::max<benchmark::IterationCount>(1, state.iterations()));
  state.counters["FLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(k * m * n), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["weight_bytes"] = static_cast<double>(wq.size());
  state.counters["relaid"] = wbt != nullptr ? 1 : 0;
  // Weight bytes read per second, and that over the read bandwidth measured
  // once per run (2 threads, 256 MiB): ~1 is the memory bound of a GEMV
  // whose weights are not in cache (small ones are, and can exceed 1).
  const double gbs = static_cast<double>(wq.size()) / per_iter / 1e9;
  state.counters["weight_GB/s"] = gbs;
  state.counters["bw_fraction"] = gbs / measured_bandwidth_gbs();
#ifdef LOOM_BENCH_HAVE_OPENBLAS
  if (blas > 0) state.counters["blas_time_ratio"] = per_iter / blas;
#endif
}

// Shapes of a 768-dim model: a projection (768x768), the FFN up (768x2048),
// for one token (decode) and for 64 and 256 tokens (prefill); and the
// 1024x1024x1024 product quoted in comparisons.
void mul_mat_args(benchmark::internal::Benchmark* b) {
  for (int64_t m : {768, 2048}) {
    for (int64_t n : {1, 16, 64, 256}) b->Args({768, m, n});
  }
  b->Args({1024, 1024, 1024});
  b->ArgNames({"K", "M", "N"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}

// Decode shapes of the K-quant file's matrices (synth768-q4_k_m: Q4_K
// projections and FFN up/gate, Q6_K FFN down and V): K = 768 and K = 2048
// rows, 1 and 4 columns; and one matrix larger than the last-level cache.
// F32 / F16 rows too (the float decode GEMV, issue 10).
void decode_args(benchmark::internal::Benchmark* b) {
  for (int64_t n : {1, 2, 4}) {
    b->Args({768, 768, n});
    b->Args({768, 2048, n});
    b->Args({2048, 768, n});
  }
  // 150-220 MB: far past the caches; 2 and 4 columns: a server's few
  // streams, whose products should cost what one column's does.
  for (int64_t n : {1, 2, 4}) b->Args({2048, 131072, n});
  b->ArgNames({"K", "M", "N"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}

// A server's batched decode step (loom serve, issue 31): one token of each
// of 8, 16 or 32 sequences through the 768-dim model's matrices.
void serve_batch_args(benchmark::internal::Benchmark* b) {
  for (int64_t n : {8, 16, 32}) {
    b->Args({768, 768, n});
    b->Args({768, 2048, n});
    b->Args({2048, 768, n});
  }
  b->ArgNames({"K", "M", "N"})->Unit(benchmark::kMicrosecond)->UseRealTime();
}

// The weight stream of a decode step alone: 12 "layers" of a 768-dim model
// (four 768x768 projections, then 768 -> 2048 -> 768), every matrix its
// own, chained as one graph of 72 GEMVs over one column: 260 MB of F32
// weights, far past the caches, read once per graph. weight_GB/s over the
// probe says what a decode loses between nodes and to short streams (the
// single GEMV over a 1 GB matrix reads at the probe's rate).
void BM_decode_chain(benchmark::State& state, loom_type_t type) {
  constexpr int64_t kDim = 768, kFfn = 2048, kLayers = 12;
  loom::registry::Device* dev = bench_device();
  if (!dev) {
    state.SkipWithError("no bench device");
    return;
  }
  loom::Context ctx;
  auto x = ctx.new_tensor(LOOM_TYPE_F32, {kDim, 1}, "x");
  if (!x.ok()) {
    state.SkipWithError(x.status().message().c_str());
    return;
  }
  std::vector<loom::Tensor*> weights;
  loom::Tensor* cur = *x;
  for (int64_t l = 0; l < kLayers; ++l) {
    for (int64_t out : {kDim, kDim, kDim, kDim, kFfn, kDim}) {
      auto w = ctx.new_tensor(type, {cur->ne[0], out}, "w" + std::to_string(weights.size()));
      auto y = w.ok() ? loom::op::mul_mat(ctx, *w, cur) : w;
      if (!y.ok()) {
        state.SkipWithError(y.status().message().c_str());
        return;
      }
      weights.push_back(*w);
      cur = *y;
    }
  }
  auto g = loom::Graph::build({cur});
  auto ex = loom::Executor::create(dev);
  if (!g.ok() || !ex.ok()) {
    state.SkipWithError(!g.ok() ? g.status().message().c_str() : ex.status().message().c_str());
    return;
  }
  // Weights where a model load puts them (as BM_loom_mul_mat): all those
  // of one weight buffer type in one buffer, as the llama loader does (one
  // buffer per matrix would give the quantized ones, under 1 MiB each, 4
  // KiB pages instead of huge pages: a TLB miss and a restart of the
  // hardware prefetcher every 4 KiB).
  loom::Status st;
  std::vector<loom::Buffer> relaid;
  std::vector<std::pair<loom_buffer_type_t*, std::vector<loom::Tensor*>>> by_type;
  for (loom::Tensor* w : weights) {
    loom_buffer_type_t* wbt = dev->weight_buffer_type(w);
    if (wbt == nullptr) continue;
    auto it = std::find_if(by_type.begin(), by_type.end(), [&](const auto& e) { return e.first == wbt; });
    if (it == by_type.end()) it = by_type.insert(by_type.end(), {wbt, {}});
    it->second.push_back(w);
  }
  for (auto& [wbt, ts] : by_type) {
    if (!st.ok()) break;
    auto wb = loom::allocate_tensors(*dev, ts, wbt);
    st = wb.status();
    if (wb.ok()) relaid.push_back(std::move(wb).value());
  }
  if (st.ok()) st = (*ex)->allocate(*g);
  // Values scaled by 1/sqrt(K) so the chain's activations stay near 1.
  size_t bytes = 0;
  for (size_t i = 0; st.ok() && i < weights.size(); ++i) {
    const int64_t k = weights[i]->ne[0], m = weights[i]->ne[1];
    std::vector<float> wf = random_floats(static_cast<size_t>(k * m), static_cast<uint32_t>(10 + i));
    for (float& v : wf) v *= 1.7f / std::sqrt(static_cast<float>(k));
    std::vector<uint8_t> wq(loom::type_row_size(type, k) * static_cast<size_t>(m));
    loom::from_float(type, wf.data(), wq.data(), k * m);
    st = loom::tensor_set(weights[i], wq.data(), wq.size());
    bytes += wq.size();
  }
  std::vector<float> xf = random_floats(static_cast<size_t>(kDim), 2);
  if (st.ok()) st = loom::tensor_set(*x, xf.data(), xf.size() * sizeof(float));
  if (st.ok()) st = (*ex)->compute(*g);  // warm-up
  const double t0 = now_s();
  while (st.ok() && state.KeepRunning()) st = (*ex)->compute(*g);
  if (!st.ok()) {
    state.SkipWithError(st.message().c_str());
    return;
  }
  const double per_iter = (now_s() - t0) / static_cast<double>(std::max<benchmark::IterationCount>(1, state.iterations()));
  const double gbs = static_cast<double>(bytes) / per_iter / 1e9;
  state.counters["weight_bytes"] = static_cast<double>(bytes);
  state.counters["weight_GB/s"] = gbs;
  state.counters["bw_fraction"] = gbs / measured_bandwidth_gbs();
}

// Read bandwidth: each of range(0) threads sums its slice of a 256 MiB
// buffer per iteration.
void BM_memory_read(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const size_t n = (size_t{256} << 20) / sizeof(uint64_t);
  // Transparent huge pages, like the cpu plugin's large buffers (and `loom
  // bench`'s probe): the TLB misses of 4 KiB pages cost 10-20% here.
  HugeBuffer buf(n);
  for (size_t i = 0; i < n; ++i) buf[i] = i;
  std::vector<uint64_t> sums(static_cast<size_t>(threads) * 8);
  auto slice = [&](int t) {
    const size_t lo = n * static_cast<size_t>(t) / static_cast<size_t>(threads);
    const size_t hi = n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
    sums[static_cast<size_t>(t) * 8] += sum_slice(buf, lo, hi);
  };
  for (auto _ : state) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(slice, t);
    slice(0);
    for (auto& th : pool) th.join();
    benchmark::DoNotOptimize(sums.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n * sizeof(uint64_t)));
}

// One input's bytes for time_graph.
struct Upload {
  loom::Tensor* t;
  const void* data;
  size_t bytes;
};

// Builds the graph of `outputs` on dev, uploads the inputs, then computes it
// once per benchmark iteration; a failure skips the benchmark with the reason.
void time_graph(benchmark::State& state, loom::registry::Device* dev, const std::vector<loom::Tensor*>& outputs,
                const std::vector<Upload>& inputs) {
  auto g = loom::Graph::build(outputs);
  if (!g.ok()) {
    state.SkipWithError(g.status().message().c_str());
    return;
  }
  auto ex = loom::Executor::create(dev);
  if (!ex.ok()) {
    state.SkipWithError(ex.status().message().c_str());
    return;
  }
  loom::Status st = (*ex)->allocate(*g);
  for (const Upload& u : inputs) {
    if (st.ok()) st = loom::tensor_set(u.t, u.data, u.bytes);
  }
  while (st.ok() && state.KeepRunning()) st = (*ex)->compute(*g);
  if (!st.ok()) state.SkipWithError(st.message().c_str());
}

// Dispatch cost: a chain of range(0) tiny nodes (ADD of 16 floats, each
// reading the previous result) run as one graph on the bench device;
// s_per_node = time per graph / nodes (printed with an SI prefix: 500n = 500 ns).
void BM_dispatch(benchmark::State& state) {
  const int64_t nodes = state.range(0);
  loom::registry::Device* dev = bench_device();
  if (!dev) {
    state.SkipWithError("no bench device");
    return;
  }
  loom::Context ctx;
  auto x = ctx.new_tensor(LOOM_TYPE_F32, {16}, "x");
  auto one = x.ok() ? ctx.new_tensor(LOOM_TYPE_F32, {16}, "one") : x;
  if (!one.ok()) {
    state.SkipWithError(one.status().message().c_str());
    return;
  }
  loom::Tensor* cur = *x;
  for (int64_t i = 0; i < nodes; ++i) {
    auto next = loom::op::add(ctx, cur, *one);
    if (!next.ok()) {
      state.SkipWithError(next.status().message().c_str());
      return;
    }
    cur = *next;
  }
  std::vector<float> v(16, 1.0f);
  time_graph(state, dev, {cur}, {{*x, v.data(), 64}, {*one, v.data(), 64}});
  state.counters["s_per_node"] = benchmark::Counter(static_cast<double>(nodes),
                                                     benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
}

// The small nodes of a batched step, range(0) tokens (1: decode; 16: a
// server's 16-sequence step) of a 768-wide llama layer: ROPE over 12 heads
// of 64 (normal mode, positions 100..), SWIGLU over an FFN of 2,048.
void BM_rope(benchmark::State& state) {
  const int64_t tokens = state.range(0), d = 64, h = 12;
  loom::registry::Device* dev = bench_device();
  if (!dev) {
    state.SkipWithError("no bench device");
    return;
  }
  loom::Context ctx;
  auto x = ctx.new_tensor(LOOM_TYPE_F32, {d, h, tokens}, "x");
  auto pos = x.ok() ? ctx.new_tensor(LOOM_TYPE_I32, {tokens}, "pos") : x;
  auto out = pos.ok() ? loom::op::rope(ctx, *x, *pos, static_cast<int>(d), LOOM_ROPE_MODE_NORMAL, 10000.0f, 1.0f) : pos;
  if (!out.ok()) {
    state.SkipWithError(out.status().message().c_str());
    return;
  }
  std::vector<float> xv = random_floats(static_cast<size_t>(d * h * tokens), 5);
  std::vector<int32_t> pv;
  for (int64_t t = 0; t < tokens; ++t) pv.push_back(static_cast<int32_t>(100 + t));
  time_graph(state, dev, {*out}, {{*x, xv.data(), xv.size() * 4}, {*pos, pv.data(), pv.size() * 4}});
}

void BM_swiglu(benchmark::State& state) {
  const int64_t tokens = state.range(0), ffn = 2048;
  loom::registry::Device* dev = bench_device();
  if (!dev) {
    state.SkipWithError("no bench device");
    return;
  }
  loom::Context ctx;
  auto g = ctx.new_tensor(LOOM_TYPE_F32, {ffn, tokens}, "gate");
  auto u = g.ok() ? ctx.new_tensor(LOOM_TYPE_F32, {ffn, tokens}, "up") : g;
  auto out = u.ok() ? loom::op::swiglu(ctx, *g, *u) : u;
  if (!out.ok()) {
    state.SkipWithError(out.status().message().c_str());
    return;
  }
  std::vector<float> gv = random_floats(static_cast<size_t>(ffn * tokens), 6);
  std::vector<float> uv = random_floats(static_cast<size_t>(ffn * tokens), 7);
  time_graph(state, dev, {*out}, {{*g, gv.data(), gv.size() * 4}, {*u, uv.data(), uv.size() * 4}});
}

// Decode attention over a KV cache: ATTENTION of one query token, H heads
// of D, over `visible` rows of a cache of `type` (F32 or F16) laid out as
// the llama graph does ([D, n_kv, H]: a head's rows contiguous, n_kv = 512). bytes_per_second
// counts the K and V bytes read (visible * H * D * element size * 2).
void BM_attention(benchmark::State& state, loom_type_t type) {
  const int64_t visible = state.range(0), h = 12, d = 64, n_kv = std::max<int64_t>(512, visible);
  loom::registry::Device* dev = bench_device();
  if (!dev) {
    state.SkipWithError("no bench device");
    return;
  }
  loom::Context ctx;
  auto q = ctx.new_tensor(LOOM_TYPE_F32, {d, h, 1}, "q");
  auto kc = ctx.new_tensor(type, {d, n_kv, h}, "k_cache");
  auto vc = ctx.new_tensor(type, {d, n_kv, h}, "v_cache");
  auto vis = ctx.new_tensor(LOOM_TYPE_I32, {1}, "visible");
  if (!q.ok() || !kc.ok() || !vc.ok() || !vis.ok()) {
    state.SkipWithError("tensors");
    return;
  }
  const size_t row_bytes = loom::type_row_size(type, d);  // one head's row (Q8_0: two blocks)
  auto kv = ctx.view(*kc, {d, n_kv, h}, {(*kc)->nb[1], (*kc)->nb[2]}, 0);
  auto vv = ctx.view(*vc, {d, n_kv, h}, {(*vc)->nb[1], (*vc)->nb[2]}, 0);
  auto out = kv.ok() && vv.ok() ? loom::op::attention(ctx, *q, *kv, *vv, *vis, 0.125f) : kv;
  if (!out.ok()) {
    state.SkipWithError(out.status().message().c_str());
    return;
  }
  std::vector<float> qv = random_floats(static_cast<size_t>(d * h), 3);
  std::vector<float> cf = random_floats(static_cast<size_t>(d * h * n_kv), 4);
  std::vector<uint8_t> cache(loom::type_row_size(type, d * h * n_kv));
  loom::from_float(type, cf.data(), cache.data(), d * h * n_kv);
  const int32_t nv = static_cast<int32_t>(visible);
  time_graph(state, dev, {*out},
             {{*q, qv.data(), qv.size() * 4}, {*kc, cache.data(), cache.size()},
              {*vc, cache.data(), cache.size()}, {*vis, &nv, 4}});
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * visible * h * static_cast<int64_t>(row_bytes) * 2);
}

// The same node with the cache coming from memory, as in a model's decode
// step (the weights stream through every cache level between two layers'
// attention): before each timed run, a SUM_ROWS over 64 MiB on the same
// device evicts the cache (and leaves the device's threads awake, as a
// model's matmuls do); only the attention node is timed (manual time).
// range(1) sequences (a server's batched decode step): one query each over
// `visible` rows of its own slot of the cache (ATTENTION's ranges form).
void BM_attention_cold(benchmark::State& state, loom_type_t type) {
  const int64_t visible = state.range(0), seqs = state.range(1), h = 12, d = 64;
  const int64_t slot = std::max<int64_t>(512, visible), n_kv = slot * seqs;
  loom::registry::Device* dev = bench_device();
  if (!dev) {
    state.SkipWithError("no bench device");
    return;
  }
  loom::Context ctx;
  auto q = ctx.new_tensor(LOOM_TYPE_F32, {d, h, seqs}, "q");
  auto kc = ctx.new_tensor(type, {d, n_kv, h}, "k_cache");
  auto vc = ctx.new_tensor(type, {d, n_kv, h}, "v_cache");
  auto vis = seqs == 1 ? ctx.new_tensor(LOOM_TYPE_I32, {1}, "visible") : ctx.new_tensor(LOOM_TYPE_I32, {2, seqs}, "ranges");
  if (!q.ok() || !kc.ok() || !vc.ok() || !vis.ok()) {
    state.SkipWithError("tensors");
    return;
  }
  const size_t row_bytes = loom::type_row_size(type, d);  // one head's row (Q8_0: two blocks)
  auto kv = ctx.view(*kc, {d, n_kv, h}, {(*kc)->nb[1], (*kc)->nb[2]}, 0);
  auto vv = ctx.view(*vc, {d, n_kv, h}, {(*vc)->nb[1], (*vc)->nb[2]}, 0);
  auto out = kv.ok() && vv.ok() ? loom::op::attention(ctx, *q, *kv, *vv, *vis, 0.125f) : kv;
  auto g = out.ok() ? loom::Graph::build({*out}) : loom::StatusOr<loom::Graph>(out.status());
  auto ex = loom::Executor::create(dev);
  if (!g.ok() || !ex.ok()) {
    state.SkipWithError(!g.ok() ? g.status().message().c_str() : ex.status().message().c_str());
    return;
  }
  loom::Status st = (*ex)->allocate(*g);
  // The eviction: SUM_ROWS of 4096 x 4096 floats, its own graph.
  auto big = ctx.new_tensor(LOOM_TYPE_F32, {4096, 4096}, "flush");
  auto sums = big.ok() ? loom::op::sum_rows(ctx, *big) : big;
  auto fg = sums.ok() ? loom::Graph::build({*sums}) : loom::StatusOr<loom::Graph>(sums.status());
  auto fex = loom::Executor::create(dev);
  if (!fg.ok() || !fex.ok()) {
    state.SkipWithError(!fg.ok() ? fg.status().message().c_str() : fex.status().message().c_str());
    return;
  }
  if (st.ok()) st = (*fex)->allocate(*fg);
  std::vector<float> ones(size_t{4096} * 4096, 1.0f);
  if (st.ok()) st = loom::tensor_set(*big, ones.data(), ones.size() * 4);
  std::vector<float> qv = random_floats(static_cast<size_t>(d * h * seqs), 3);
  std::vector<float> cf = random_floats(static_cast<size_t>(d * h * n_kv), 4);
  std::vector<uint8_t> cache(loom::type_row_size(type, d * h * n_kv));
  loom::from_float(type, cf.data(), cache.data(), d * h * n_kv);
  std::vector<int32_t> rows;  // [T] lengths, or [first, end) per sequence
  for (int64_t s = 0; s < seqs; ++s) {
    if (seqs > 1) rows.push_back(static_cast<int32_t>(s * slot));
    rows.push_back(static_cast<int32_t>(s * slot + visible));
  }
  if (st.ok()) st = loom::tensor_set(*q, qv.data(), qv.size() * 4);
  if (st.ok()) st = loom::tensor_set(*kc, cache.data(), cache.size());
  if (st.ok()) st = loom::tensor_set(*vc, cache.data(), cache.size());
  if (st.ok()) st = loom::tensor_set(*vis, rows.data(), rows.size() * 4);
  while (st.ok() && state.KeepRunning()) {
    st = (*fex)->compute(*fg);
    if (!st.ok()) break;
    const auto t0 = std::chrono::steady_clock::now();
    st = (*ex)->compute(*g);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  if (!st.ok()) state.SkipWithError(st.message().c_str());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * seqs * visible * h *
                          static_cast<int64_t>(row_bytes) * 2);
}

// Peak arithmetic measured on the spot, per thread and for range(0)
// threads: independent chains of 256-bit FMAs (f32 multiply-adds) and of
// 8-bit multiply-adds (AVX512-VNNI vpdpbusd where the CPU has it, else AVX2
// vpmaddubsw + vpmaddwd), enough chains to cover latency. Counters:
// multiply-adds per second over all threads (MAC/s), the ceiling the
// kernels' FLOP/s rows compare with (FLOP = 2 MAC).
#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) double fma_loop(int64_t iters) {
  __m256 acc[10];
  for (int i = 0; i < 10; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 10; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < 10; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  benchmark::DoNotOptimize(out);
  return static_cast<double>(iters) * 10 * 8;
}

__attribute__((target("avx2"))) double int8_loop_avx2(int64_t iters) {
  __m256i acc[10];
  for (int i = 0; i < 10; ++i) acc[i] = _mm256_set1_epi32(i);
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2), one = _mm256_set1_epi16(1);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 10; ++i) {
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
    }
  }
  __m256i s = acc[0];
  for (int i = 1; i < 10; ++i) s = _mm256_add_epi32(s, acc[i]);
  benchmark::DoNotOptimize(s);
  return static_cast<double>(iters) * 10 * 32;
}

__attribute__((target("avx2,avx512f,avx512vl,avx512vnni"))) double int8_loop_vnni(int64_t iters) {
  __m256i acc[10];
  for (int i = 0; i < 10; ++i) acc[i] = _mm256_set1_epi32(i);
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < 10; ++i) acc[i] = _mm256_dpbusd_epi32(acc[i], a, b);
  }
  __m256i s = acc[0];
  for (int i = 1; i < 10; ++i) s = _mm256_add_epi32(s, acc[i]);
  benchmark::DoNotOptimize(s);
  return static_cast<double>(iters) * 10 * 32;
}

void peak(benchmark::State& state, bool int8) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    state.SkipWithError("no AVX2/FMA");
    return;
  }
  const bool vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl");
  const int threads = static_cast<int>(state.range(0));
  constexpr int64_t kIters = 1 << 22;
  double macs = 0;
  for (auto _ : state) {
    std::vector<double> per(static_cast<size_t>(threads));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        per[static_cast<size_t>(t)] = int8 ? (vnni ? int8_loop_vnni(kIters) : int8_loop_avx2(kIters)) : fma_loop(kIters);
      });
    }
    for (auto& th : pool) th.join();
    for (double m : per) macs += m;
  }
  state.counters["MAC/s"] = benchmark::Counter(macs, benchmark::Counter::kIsRate);
  state.SetLabel(int8 ? (vnni ? "int8 vpdpbusd (ymm)" : "int8 vpmaddubsw+vpmaddwd") : "f32 vfmadd (ymm)");
}
void BM_peak_fma(benchmark::State& state) { peak(state, false); }
void BM_peak_int8(benchmark::State& state) { peak(state, true); }
#endif

}  // namespace

#if defined(__x86_64__)
BENCHMARK(BM_peak_fma)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_peak_int8)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
#endif
BENCHMARK_CAPTURE(BM_attention, f32, LOOM_TYPE_F32)->Arg(64)->Arg(300)->Arg(512)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_attention, f16, LOOM_TYPE_F16)->Arg(64)->Arg(300)->Arg(512)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_attention, q8_0, LOOM_TYPE_Q8_0)->Arg(300)->Arg(512)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_attention_cold, f32, LOOM_TYPE_F32)->Args({300, 1})->Unit(benchmark::kMicrosecond)->UseManualTime();
BENCHMARK_CAPTURE(BM_attention_cold, f16, LOOM_TYPE_F16)
    ->Args({300, 1})
    ->Args({1024, 1})
    ->Args({80, 16})
    ->Args({256, 16})
    ->Unit(benchmark::kMicrosecond)
    ->UseManualTime();
BENCHMARK_CAPTURE(BM_attention_cold, q8_0, LOOM_TYPE_Q8_0)
    ->Args({1024, 1})
    ->Args({80, 16})
    ->Args({256, 16})
    ->Unit(benchmark::kMicrosecond)
    ->UseManualTime();
BENCHMARK_CAPTURE(BM_decode_chain, f32, LOOM_TYPE_F32)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_decode_chain, f16, LOOM_TYPE_F16)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_decode_chain, q8_0, LOOM_TYPE_Q8_0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_decode_chain, q4_0, LOOM_TYPE_Q4_0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_dispatch)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_rope)->Arg(1)->Arg(16)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_swiglu)->Arg(1)->Arg(16)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_loom_mul_mat, f32, LOOM_TYPE_F32)->Apply(mul_mat_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, q8_0, LOOM_TYPE_Q8_0)->Apply(mul_mat_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, q4_0, LOOM_TYPE_Q4_0)->Apply(mul_mat_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, q4_k, LOOM_TYPE_Q4_K)->Apply(mul_mat_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, q6_k, LOOM_TYPE_Q6_K)->Apply(mul_mat_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, f32_decode, LOOM_TYPE_F32)->Apply(decode_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, f16_decode, LOOM_TYPE_F16)->Apply(decode_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, q4_0_decode, LOOM_TYPE_Q4_0)->Apply(decode_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, q4_k_decode, LOOM_TYPE_Q4_K)->Apply(decode_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, q6_k_decode, LOOM_TYPE_Q6_K)->Apply(decode_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, q8_0_serve, LOOM_TYPE_Q8_0)->Apply(serve_batch_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, q4_0_serve, LOOM_TYPE_Q4_0)->Apply(serve_batch_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, q5_k, LOOM_TYPE_Q5_K)->Apply(mul_mat_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, q3_k, LOOM_TYPE_Q3_K)->Apply(mul_mat_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, q2_k, LOOM_TYPE_Q2_K)->Apply(mul_mat_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, iq4_nl, LOOM_TYPE_IQ4_NL)->Apply(mul_mat_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, iq4_xs, LOOM_TYPE_IQ4_XS)->Apply(mul_mat_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, iq4_nl_decode, LOOM_TYPE_IQ4_NL)->Apply(decode_args);
BENCHMARK_CAPTURE(BM_loom_mul_mat, iq4_xs_decode, LOOM_TYPE_IQ4_XS)->Apply(decode_args);
#ifdef LOOM_BENCH_HAVE_OPENBLAS
BENCHMARK(BM_blas_sgemm)->Apply(mul_mat_args);
#endif
BENCHMARK(BM_memory_read)->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
