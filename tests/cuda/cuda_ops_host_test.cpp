// Every op of the op set, computed on the host with the CUDA kernels'
// per-element functions and reduction order (plugins/cuda/ops/*.cuh,
// launch.cuh), against the CPU plugin running the same node. Inputs are
// dense; the kernels' stride handling is only compiled here (the GPU suite
// covers it: tests/ops with LOOM_TEST_DEVICE=cuda0).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "loom/runtime/ops.hpp"
#include "conformance/check.hpp"
#include "conformance/harness.hpp"
#include "ops/test_device.hpp"
#include "plugins/cuda/ops/attention.cuh"
#include "plugins/cuda/ops/dequant.cuh"
#include "plugins/cuda/ops/elementwise.cuh"
#include "plugins/cuda/ops/gemv.cuh"
#include "plugins/cuda/ops/launch.cuh"
#include "plugins/cuda/ops/quantize.cuh"
#include "plugins/cuda/ops/reduce.cuh"
#include "plugins/cuda/ops/rope.cuh"

namespace loom::optest {
namespace {

namespace cu = loom::cuda;
using namespace conformance;  // NOLINT(google-build-using-namespace): the harness's fixture vocabulary

// A row reduction as the row kernels run it: kRowThreads strided partials,
// then the halving tree.
template <typename T, typename Step, typename Combine>
T row_reduce(int64_t n, T init, Step step, Combine combine) {
  std::vector<T> p;
  for (int t = 0; t < cu::kRowThreads; ++t) p.push_back(cu::strided_fold(n, t, cu::kRowThreads, init, step));
  return cu::tree_reduce(p.data(), cu::kRowThreads, combine);
}

float round_to(loom_type_t t, float v) {
  alignas(8) uint8_t buf[8] = {};
  cu::store_elem(t, buf, v);
  return cu::load_elem(t, buf);
}

std::vector<float> as_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

// The conformance harness's OpTest on the cpu plugin (the device test_ops
// runs on by default), as a gtest fixture.
class CudaOpsOnHost : public ::testing::Test, public OpTest {
 protected:
  void SetUp() override {
    dev_ = test_device();
    ASSERT_NE(dev_, nullptr) << "cpu plugin not loaded" << registry_report();
  }
  // got (the CPU plugin) vs emu (the CUDA functions), tolerance from the
  // magnitude of each term.
  void compare(const std::vector<double>& got, const std::vector<float>& emu, const std::vector<double>& mag,
               loom_type_t out, int64_t n_terms, const Shape& ne, const std::string& what) {
    ASSERT_EQ(got.size(), emu.size()) << what;
    std::vector<double> ref(emu.begin(), emu.end()), tol;
    for (size_t i = 0; i < ref.size(); ++i) tol.push_back(2.0 * tol_for(out, ref[i], mag[i], n_terms));
    expect_close(got, ref, tol, ne, what);
  }
};

TEST_F(CudaOpsOnHost, UnaryOpsEveryFloatType) {
  seed(1301);
  const Shape ne{37, 3, 2, 1};
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16}) {
    for (int op : {LOOM_OP_SILU, LOOM_OP_GELU, LOOM_OP_RELU, LOOM_OP_SCALE}) {
      SCOPED_TRACE(std::string(type_str(t)) + " op " + std::to_string(op));
      Operand a = input(t, ne, -4.0f, 4.0f);
      Tensor* out = op == LOOM_OP_SILU   ? unwrap(op::silu(ctx_, a.t))
                    : op == LOOM_OP_GELU ? unwrap(op::gelu(ctx_, a.t))
                    : op == LOOM_OP_RELU ? unwrap(op::relu(ctx_, a.t))
                                         : unwrap(op::scale(ctx_, a.t, 0.75f, -0.5f));
      LOOM_ASSERT_OK(run({out}));
      std::vector<float> x = as_float(a.h.values()), emu;
      std::vector<double> mag;
      for (float v : x) {
        emu.push_back(round_to(t, cu::unary_op(op, v, 0.75f, -0.5f)));
        mag.push_back(std::fabs(v) + 1.0);
      }
      compare(read(out), emu, mag, t, 2, ne, "unary");
    }
  }
}

TEST_F(CudaOpsOnHost, BinaryOpsBroadcastAndSwiglu) {
  seed(1302);
  const Shape ne{19, 4, 3, 2}, nb{19, 1, 3, 1};
  for (int op : {LOOM_OP_ADD, LOOM_OP_SUB, LOOM_OP_MUL, LOOM_OP_DIV, LOOM_OP_SWIGLU}) {
    const bool sw = op == LOOM_OP_SWIGLU;
    Operand a = input(LOOM_TYPE_F32, ne, -2.0f, 2.0f);
    Operand b = input(LOOM_TYPE_F16, sw ? ne : nb, 0.5f, 2.0f);
    Tensor* out = op == LOOM_OP_ADD   ? unwrap(op::add(ctx_, a.t, b.t))
                  : op == LOOM_OP_SUB ? unwrap(op::sub(ctx_, a.t, b.t))
                  : op == LOOM_OP_MUL ? unwrap(op::mul(ctx_, a.t, b.t))
                  : op == LOOM_OP_DIV ? unwrap(op::div(ctx_, a.t, b.t))
                                      : unwrap(op::swiglu(ctx_, a.t, b.t));
    LOOM_ASSERT_OK(run({out}));
    std::vector<float> emu;
    std::vector<double> mag;
    const Shape bs = sw ? ne : nb;
    for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
      const float x = static_cast<float>(a.h.at(i0, i1, i2, i3));
      const float y = static_cast<float>(b.h.at(cu::broadcast_index(i0, bs[0]), cu::broadcast_index(i1, bs[1]),
                                                cu::broadcast_index(i2, bs[2]), cu::broadcast_index(i3, bs[3])));
      emu.push_back(cu::binary_op(op, x, y));
      mag.push_back(std::fabs(emu.back()) + std::fabs(x) + std::fabs(y));
    });
    compare(read(out), emu, mag, LOOM_TYPE_F32, 2, ne, "binary op " + std::to_string(op));
  }
}

TEST_F(CudaOpsOnHost, NormsWithTheKernelsReduction) {
  seed(1303);
  const Shape ne{300, 3, 2, 1};
  for (int op : {LOOM_OP_RMS_NORM, LOOM_OP_NORM}) {
    Operand a = input(LOOM_TYPE_F32, ne, -3.0f, 3.0f);
    Tensor* out = op == LOOM_OP_NORM ? unwrap(op::norm(ctx_, a.t, 1e-5f)) : unwrap(op::rms_norm(ctx_, a.t, 1e-5f));
    LOOM_ASSERT_OK(run({out}));
    std::vector<float> x = as_float(a.h.values()), emu;
    std::vector<double> mag;
    const int64_t n = ne[0];
    for (int64_t r = 0; r < ne[1] * ne[2] * ne[3]; ++r) {
      const float* row = x.data() + r * n;
      auto add = [](float p, float q) { return p + q; };
      float mean = 0.0f;
      if (op == LOOM_OP_NORM) {
        mean = row_reduce<float>(n, 0.0f, [&](float p, int64_t i) { return p + row[i]; }, add) / static_cast<float>(n);
      }
      const float sq = row_reduce<float>(n, 0.0f, [&](float p, int64_t i) { return p + (row[i] - mean) * (row[i] - mean); }, add);
      const float s = cu::norm_scale(sq, n, 1e-5f);
      for (int64_t i = 0; i < n; ++i) {
        emu.push_back((row[i] - mean) * s);
        mag.push_back((std::fabs(row[i]) + std::fabs(mean)) * s + 1.0);
      }
    }
    compare(read(out), emu, mag, LOOM_TYPE_F32, n, ne, op == LOOM_OP_NORM ? "norm" : "rms_norm");
  }
}

TEST_F(CudaOpsOnHost, SumRowsAndArgmax) {
  seed(1304);
  const Shape ne{515, 3, 1, 2};
  Operand a = input(LOOM_TYPE_F32, ne, -1.0f, 1.0f);
  Tensor* s = unwrap(op::sum_rows(ctx_, a.t));
  Tensor* m = unwrap(op::argmax(ctx_, a.t));
  LOOM_ASSERT_OK(run({s, m}));
  std::vector<float> x = as_float(a.h.values()), emu;
  std::vector<double> mag, idx;
  for (int64_t r = 0; r < ne[1] * ne[2] * ne[3]; ++r) {
    const float* row = x.data() + r * ne[0];
    emu.push_back(row_reduce<float>(ne[0], 0.0f, [&](float p, int64_t i) { return p + row[i]; },
                                    [](float p, float q) { return p + q; }));
    mag.push_back(static_cast<double>(ne[0]));
    idx.push_back(row_reduce<cu::ArgMax>(ne[0], cu::argmax_init(),
                                         [&](cu::ArgMax p, int64_t i) { return cu::argmax_step(p, row[i], static_cast<int32_t>(i)); },
                                         cu::argmax_combine).index);
  }
  compare(read(s), emu, mag, LOOM_TYPE_F32, ne[0], {1, ne[1], ne[2], ne[3]}, "sum_rows");
  expect_equal(read(m), idx, {ne[1], ne[2], ne[3], 1}, "argmax");
}

TEST_F(CudaOpsOnHost, SoftMaxWithMaskAndScale) {
  seed(1305);
  const Shape ne{290, 4, 2, 1};
  Operand a = input(LOOM_TYPE_F32, ne, -5.0f, 5.0f);
  std::vector<float> mv(static_cast<size_t>(ne[0] * ne[1]));
  for (size_t i = 0; i < mv.size(); ++i) mv[i] = (i % 7 == 3) ? -INFINITY : static_cast<float>(i % 5) * 0.1f;
  for (int64_t i = 0; i < ne[0]; ++i) mv[static_cast<size_t>(2 * ne[0] + i)] = -INFINITY;  // a fully masked row
  Operand mask = input_values(LOOM_TYPE_F32, {ne[0], ne[1], 1, 1}, mv);
  Tensor* out = unwrap(op::soft_max(ctx_, a.t, mask.t, 0.5f));
  LOOM_ASSERT_OK(run({out}));
  std::vector<float> x = as_float(a.h.values()), emu;
  std::vector<double> mag;
  for (int64_t r = 0; r < ne[1] * ne[2]; ++r) {
    std::vector<float> y(static_cast<size_t>(ne[0]));
    for (int64_t i = 0; i < ne[0]; ++i) y[i] = x[r * ne[0] + i] * 0.5f + mv[(r % ne[1]) * ne[0] + i];
    const cu::MaxSum ms = row_reduce<cu::MaxSum>(ne[0], cu::maxsum_init(),
                                                 [&](cu::MaxSum p, int64_t i) { return cu::maxsum_step(p, y[i]); },
                                                 cu::maxsum_combine);
    for (int64_t i = 0; i < ne[0]; ++i) {
      emu.push_back(cu::softmax_value(ms, y[i]));
      mag.push_back(std::fabs(emu.back()) * 8.0 + 1e-7);
    }
  }
  compare(read(out), emu, mag, LOOM_TYPE_F32, ne[0], ne, "soft_max");
}

TEST_F(CudaOpsOnHost, RopeBothModesWithFactors) {
  seed(1306);
  const Shape ne{16, 3, 5, 1};
  for (int mode : {LOOM_ROPE_MODE_NORMAL, LOOM_ROPE_MODE_NEOX}) {
    Operand a = input(LOOM_TYPE_F32, ne, -1.0f, 1.0f);
    Operand pos = input_ints(LOOM_TYPE_I32, {ne[2], 1, 1, 1}, {0, 7, 4096, 100000, 3});
    Operand ff = input(LOOM_TYPE_F32, {6, 1, 1, 1}, 1.0f, 4.0f);
    Tensor* out = unwrap(op::rope(ctx_, a.t, pos.t, 12, mode, 10000.0f, 0.5f, ff.t));
    LOOM_ASSERT_OK(run({out}));
    std::vector<float> x = as_float(a.h.values());
    std::vector<float> emu = x;
    const int32_t p[5] = {0, 7, 4096, 100000, 3};
    for (int64_t t = 0; t < ne[2]; ++t)
      for (int64_t h = 0; h < ne[1]; ++h)
        for (int64_t i = 0; i < 6; ++i) {
          const cu::RopePair pr = cu::rope_pair(mode, i, 12);
          float* row = emu.data() + (t * ne[1] + h) * ne[0];
          cu::rope_rotate(cu::rope_theta(p[t], i, 12, 10000.0f, 0.5f, static_cast<float>(ff.h.at(i))), &row[pr.j0],
                          &row[pr.j1]);
        }
    compare(read(out), emu, std::vector<double>(emu.size(), 2.0), LOOM_TYPE_F32, 2, ne, "rope");
  }
}

TEST_F(CudaOpsOnHost, GetRowsOfEveryWeightType) {
  seed(1307);
  for (loom_type_t t : {LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0,
                        LOOM_TYPE_Q5_1, LOOM_TYPE_IQ4_NL, LOOM_TYPE_Q2_K, LOOM_TYPE_Q3_K, LOOM_TYPE_Q4_K,
                        LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K, LOOM_TYPE_IQ4_XS}) {
    SCOPED_TRACE(type_str(t));
    const int64_t n0 = block_elems(t) * 2;
    Operand a = input(t, {n0, 5, 1, 1});
    Operand idx = input_ints(LOOM_TYPE_I32, {3, 1, 1, 1}, {4, 0, 2});
    Tensor* out = unwrap(op::get_rows(ctx_, a.t, idx.t));
    LOOM_ASSERT_OK(run({out}));
    std::vector<double> emu;
    const size_t rb = row_bytes(t, n0);
    for (int64_t r : {4, 0, 2})
      for (int64_t i = 0; i < n0; ++i)
        emu.push_back(cu::row_elem(t, a.h.base->bytes.data() + r * rb, i, static_cast<int64_t>(block_bytes(t))));
    expect_equal(read(out), emu, {n0, 3, 1, 1}, "get_rows");
  }
}

TEST_F(CudaOpsOnHost, CpyQuantizesAndSetRowsWritesQuantizedRows) {
  seed(1308);
  for (loom_type_t t : {LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_F16}) {
    SCOPED_TRACE(type_str(t));
    Operand a = input(LOOM_TYPE_F32, {64, 3, 1, 1}, -2.0f, 2.0f);
    Operand dst = input(t, {64, 3, 1, 1});
    Tensor* out = unwrap(op::cpy(ctx_, a.t, dst.t));
    Operand cache = input(t, {64, 6, 1, 1});
    Operand rows = input(LOOM_TYPE_F32, {64, 2, 1, 1}, -1.0f, 1.0f);
    Operand where = input_ints(LOOM_TYPE_I64, {2, 1, 1, 1}, {5, 1});
    Tensor* set = unwrap(op::set_rows(ctx_, cache.t, rows.t, where.t));
    LOOM_ASSERT_OK(run({out, set}));
    std::vector<float> x = as_float(a.h.values()), r = as_float(rows.h.values());
    std::vector<uint8_t> got = read_bytes(out), got_cache = read_bytes(set);
    const size_t rb = row_bytes(t, 64);
    for (int64_t row = 0; row < 3; ++row) {
      std::vector<uint8_t> emu(rb);
      for (int64_t b = 0; b < 64 / block_elems(t); ++b) {
        const float* src = x.data() + row * 64 + b * block_elems(t);
        uint8_t* o = emu.data() + b * block_bytes(t);
        if (!cu::quantize_block(t, src, o)) cu::store_elem(t, o, src[0]);
      }
      EXPECT_EQ(std::memcmp(emu.data(), got.data() + row * rb, rb), 0) << "cpy row " << row;
    }
    for (int k = 0; k < 2; ++k) {
      const int64_t target = k == 0 ? 5 : 1;
      std::vector<uint8_t> emu(rb);
      for (int64_t b = 0; b < 64 / block_elems(t); ++b) {
        const float* src = r.data() + k * 64 + b * block_elems(t);
        uint8_t* o = emu.data() + b * block_bytes(t);
        if (!cu::quantize_block(t, src, o)) cu::store_elem(t, o, src[0]);
      }
      EXPECT_EQ(std::memcmp(emu.data(), got_cache.data() + target * rb, rb), 0) << "set_rows row " << target;
    }
  }
}

TEST_F(CudaOpsOnHost, CpyDequantizesAndContCopiesViews) {
  seed(1309);
  Operand q = input(LOOM_TYPE_Q8_0, {64, 2, 1, 1});
  Operand f = input(LOOM_TYPE_F32, {64, 2, 1, 1});
  Tensor* out = unwrap(op::cpy(ctx_, q.t, f.t));
  Operand a = make(LOOM_TYPE_F16, {7, 3, 2, 1}, Layout::kPermuted);
  Tensor* c = unwrap(op::cont(ctx_, a.t));
  LOOM_ASSERT_OK(run({out, c}));
  std::vector<double> emu;
  for (int64_t i = 0; i < 128; ++i) emu.push_back(cu::row_elem(LOOM_TYPE_Q8_0, q.h.base->bytes.data(), i, 34));
  expect_equal(read(out), emu, {64, 2, 1, 1}, "cpy q8_0 -> f32");
  expect_equal(read(c), a.h.values(), a.h.ne, "cont");
}

// MUL_MAT as the exact GEMV (matmul.cu's fallback) runs it: a warp per
// output, lane l takes blocks l, l + 32, ... of the row (block_dot), then
// the lanes' tree. The decode GEMVs: cuda_gemv_host_test.cpp.
TEST_F(CudaOpsOnHost, MulMatGemvOfEveryType) {
  seed(1310);
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_1,
                        LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_IQ4_NL, LOOM_TYPE_Q2_K, LOOM_TYPE_Q3_K,
                        LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K, LOOM_TYPE_IQ4_XS}) {
    SCOPED_TRACE(type_str(t));
    const int64_t k = block_elems(t) == 256 ? 512 : 96, m = 5, n = 2;
    Operand a = input(t, {k, m, 1, 1});
    Operand b = input(LOOM_TYPE_F32, {k, n, 1, 1});
    Tensor* out = unwrap(op::mul_mat(ctx_, a.t, b.t));
    LOOM_ASSERT_OK(run({out}));
    std::vector<float> x = as_float(b.h.values()), emu;
    std::vector<double> mag;
    const size_t bb = block_bytes(t), rb = row_bytes(t, k);
    std::vector<double> av = a.h.values();
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        float lanes[cu::kWarp];
        for (int lane = 0; lane < cu::kWarp; ++lane) {
          lanes[lane] = cu::gemv_lane_sum(t, a.h.base->bytes.data() + i * rb, static_cast<int64_t>(bb), k,
                                          x.data() + j * k, lane);
        }
        emu.push_back(cu::tree_reduce(lanes, cu::kWarp, [](float p, float q) { return p + q; }));
        double s = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) s += std::fabs(av[i * k + kk] * x[j * k + kk]);
        mag.push_back(s);
      }
    compare(read(out), emu, mag, LOOM_TYPE_F32, k, {m, n, 1, 1}, "mul_mat");
  }
}

// ATTENTION as the kernel runs it: KV rows in chunks of kAttnChunk, each
// chunk's exact softmax merged into the running state.
TEST_F(CudaOpsOnHost, AttentionChunkedOnlineSoftmax) {
  seed(1311);
  const int64_t D = 8, H = 4, T = 3, n_kv = 150, Hkv = 2;
  Operand q = input(LOOM_TYPE_F32, {D, H, T, 1});
  Operand k = input(LOOM_TYPE_F16, {D, n_kv, Hkv, 1});
  Operand v = input(LOOM_TYPE_F16, {D, n_kv, Hkv, 1});
  Operand vis = input_ints(LOOM_TYPE_I32, {T, 1, 1, 1}, {150, 0, 70});
  Tensor* out = unwrap(op::attention(ctx_, q.t, k.t, v.t, vis.t, 0.35f));
  LOOM_ASSERT_OK(run({out}));
  std::vector<float> emu;
  const int64_t visible[3] = {150, 0, 70};
  const int chunk = cu::kAttnChunk;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / (H / Hkv);
      cu::OnlineState st = cu::online_init();
      std::vector<float> acc(D, 0.0f);
      for (int64_t j0 = 0; j0 < visible[t]; j0 += chunk) {
        const int64_t j1 = std::min<int64_t>(visible[t], j0 + chunk);
        std::vector<float> s;
        cu::OnlineState cs = cu::online_init();
        std::vector<float> qrow(D);
        for (int64_t d = 0; d < D; ++d) qrow[d] = static_cast<float>(q.h.at(d, h, t));
        for (int64_t j = j0; j < j1; ++j) {
          const uint8_t* krow = k.h.base->bytes.data() + (g * n_kv + j) * D * 2;  // dense F16 K
          s.push_back(cu::attn_score(qrow.data(), krow, LOOM_TYPE_F16, 2, D, 0.35f));
          cs.m = std::max(cs.m, s.back());
        }
        std::vector<float> cacc(D, 0.0f);
        for (int64_t j = j0; j < j1; ++j) {
          const float p = std::exp(s[j - j0] - cs.m);
          cs.l += p;
          for (int64_t d = 0; d < D; ++d) cacc[d] += p * static_cast<float>(v.h.at(d, j, g));
        }
        const cu::MergeFactors f = cu::online_factors(st, cs);
        for (int64_t d = 0; d < D; ++d) acc[d] = cu::online_merge_acc(acc[d], cacc[d], f);
        st = cu::online_merge(st, cs, f);
      }
      for (int64_t d = 0; d < D; ++d) emu.push_back(cu::online_finish(st, acc[d]));
    }
  compare(read(out), emu, std::vector<double>(emu.size(), 4.0), LOOM_TYPE_F32, n_kv, {D, H, T, 1}, "attention");
}

}  // namespace
}  // namespace loom::optest
