// MUL_MAT: A in F32/F16/BF16/Q8_0/Q4_0, the ABI 1.2 weight types and IQ4_XS, B F32,
// broadcast over dims 2 and 3,
// odd sizes, strided A and B, 1 vs 3 threads.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <cstring>
#include <cstdlib>
#include <random>

#include "loom/sched/executor.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/registry/plugin_calls.hpp"
#include "conformance/matmul_ref.hpp"
#include "conformance/suite.hpp"

namespace loom::conformance {

// Whether a device may round B to 8-bit blocks for this product (ActQ8,
// harness.hpp): A quantized and B's rows dense f32 (the cpu plugin's int8
// path's conditions; other layouts take its f32 path). The reference then
// rounds B the same way (matmul.h's ActBlock rule) and the tolerance stays
// the f32 one, so an error beyond that rounding still fails.
bool may_round_b(loom_type_t ta, const Tensor* b) {
  const bool dense_rows = b->nb[0] == sizeof(float) && b->nb[1] % 4 == 0 && b->nb[2] % 4 == 0 && b->nb[3] % 4 == 0;
  return is_quant(ta) && dense_rows;
}

// The block of B the int8 path rounds together for A of type ta: 256
// (one super-block) for the K-quants, else 32.
int64_t act_block(loom_type_t ta) { return block_elems(ta) == 256 ? 256 : 32; }

// B column (n, i2, i3) as the int8 path sees it: per block of `block` along
// k, d = max|b| / 127, q = nearbyint(b * (1 / d)), b' = d * q.
std::vector<double> q8_column(const HostView& b, int64_t n, int64_t i2, int64_t i3, int64_t block) {
  const int64_t k_len = b.ne[0];
  std::vector<double> out(static_cast<size_t>(k_len));
  for (int64_t k0 = 0; k0 < k_len; k0 += block) {
    float amax = 0.0f;
    for (int64_t k = k0; k < k0 + block; ++k) amax = std::max(amax, std::fabs(static_cast<float>(b.at(k, n, i2, i3))));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int64_t k = k0; k < k0 + block; ++k) {
      const float q = std::nearbyint(static_cast<float>(b.at(k, n, i2, i3)) * id);
      out[static_cast<size_t>(k)] = static_cast<double>(d) * static_cast<double>(q);
    }
  }
  return out;
}

std::vector<MatRounding> mat_roundings(ActQ8 mode, bool may_round_b, int64_t n_cols) {
  if (mode == ActQ8::kExact) return {MatRounding::kNone};
  if (mode == ActQ8::kRounded) return {may_round_b ? MatRounding::kQ8B : MatRounding::kNone};
  std::vector<MatRounding> out{MatRounding::kNone};
  if (may_round_b) out.push_back(MatRounding::kQ8B);
  if (n_cols >= kF16InputsMinCols) out.push_back(MatRounding::kF16);
  return out;
}

double f16_rounded(double v) {
  const double x = static_cast<double>(static_cast<float>(v));
  if (!std::isfinite(x) || x == 0.0) return x;
  // Halfway between the largest finite F16 (65504) and the next step
  // (65536) and beyond: infinity.
  if (std::fabs(x) >= 65520.0) return x > 0 ? INFINITY : -INFINITY;
  int e = 0;
  std::frexp(x, &e);  // |x| = f * 2^e, f in [0.5, 1): the leading bit is 2^(e-1)
  // 11 significant bits for normals; a fixed step of 2^-24 below 2^-14.
  const int step_exp = std::max(e - 1 - 10, -24);
  return std::ldexp(std::nearbyint(std::ldexp(x, -step_exp)), step_exp);
}

std::vector<double> b_column(const HostView& b, int64_t n, int64_t i2, int64_t i3, MatRounding r, int64_t block) {
  if (r == MatRounding::kQ8B) return q8_column(b, n, i2, i3, block);
  std::vector<double> out(static_cast<size_t>(b.ne[0]));
  for (int64_t k = 0; k < b.ne[0]; ++k) out[static_cast<size_t>(k)] = a_value(b.at(k, n, i2, i3), r);
  return out;
}

void pick_reference(const std::vector<MatRounding>& modes, const std::vector<double>& got,
                    const std::function<void(MatRounding, std::vector<double>*, std::vector<double>*)>& make,
                    std::vector<double>* ref, std::vector<double>* tol) {
  for (size_t i = 0; i < modes.size(); ++i) {
    make(modes[i], ref, tol);
    if (count_mismatches(got, *ref, *tol) == 0) return;
  }
  make(modes.front(), ref, tol);
}

namespace {

const loom_type_t kATypes[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0};

struct MatCase {
  int64_t k, m, n;
  int64_t a2, a3, b2, b3;
};

class MatMulTest : public OpTest {
 protected:
  void check(loom_type_t ta, const MatCase& c, Layout la, Layout lb) {
    const Shape sa{c.k, c.m, c.a2, c.a3};
    const Shape sb{c.k, c.n, c.b2, c.b3};
    LOOM_TRACE("mul_mat " + type_str(ta) + " A " + shape_str(sa) + " " + layout_name(la) + ", B " +
                 shape_str(sb) + " " + layout_name(lb));
    Operand a = make(ta, sa, la);
    Operand b = make(LOOM_TYPE_F32, sb, lb);
    Tensor* out = unwrap(op::mul_mat(ctx_, a.t, b.t), "mul_mat");
    // A graph the device declines is not run (harness.hpp: "not claimed").
    LOOM_ASSERT_OK(run_threads({out}));
    const Shape so{c.m, c.n, c.b2, c.b3};
    const int64_t r2 = c.b2 / c.a2;
    const int64_t r3 = c.b3 / c.a3;
    auto reference = [&](MatRounding r, std::vector<double>* ref, std::vector<double>* tol) {
      ref->clear();
      tol->clear();
      for_each_index(so, [&](int64_t m, int64_t n, int64_t i2, int64_t i3) {
        double sum = 0.0, mag = 0.0;
        const std::vector<double> bc = b_column(b.h, n, i2, i3, r, act_block(ta));
        for (int64_t k = 0; k < c.k; ++k) {
          const double p = a_value(a.h.at(k, m, i2 / r2, i3 / r3), r) * bc[static_cast<size_t>(k)];
          sum += p;
          mag += std::fabs(p);
        }
        ref->push_back(sum);
        tol->push_back(tol_for(LOOM_TYPE_F32, sum, mag, c.k));
      });
    };
    std::vector<double> ref, tol;
    const std::vector<double> got = read(out);
    pick_reference(mat_roundings(act_q8_, may_round_b(ta, b.t), c.n), got, reference, &ref, &tol);
    expect_close(got, ref, tol, so, "mul_mat result");
  }

  // `got` (a [m, n] product A^T B of 2-D dense operands) against the
  // reference under the rounding rules the suite accepts for it.
  void expect_product(loom_type_t ta, const Operand& a, const Operand& b, const std::vector<double>& got,
                      const std::string& what) {
    const int64_t k = a.t->ne[0], m = a.t->ne[1], n = b.t->ne[1];
    auto reference = [&](MatRounding mode, std::vector<double>* ref, std::vector<double>* tol) {
      ref->clear();
      tol->clear();
      for_each_index({m, n, 1, 1}, [&](int64_t mi, int64_t ni, int64_t, int64_t) {
        const std::vector<double> bc = b_column(b.h, ni, 0, 0, mode, act_block(ta));
        double s = 0.0, mag = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double p = a_value(a.h.at(kk, mi), mode) * bc[static_cast<size_t>(kk)];
          s += p;
          mag += std::fabs(p);
        }
        ref->push_back(s);
        tol->push_back(tol_for(LOOM_TYPE_F32, s, mag, k));
      });
    };
    std::vector<double> ref, tol;
    pick_reference(mat_roundings(act_q8_, may_round_b(ta, b.t), n), got, reference, &ref, &tol);
    expect_close(got, ref, tol, {m, n, 1, 1}, what);
  }
};

LOOM_CASE(MatMulTest, FloatTypesOddSizes) {
  seed(401);
  const MatCase cases[] = {
      {1, 1, 1, 1, 1, 1, 1},  {3, 17, 5, 1, 1, 1, 1}, {17, 3, 1, 2, 1, 2, 1},
      {33, 5, 3, 1, 1, 2, 3}, {65, 7, 2, 2, 3, 4, 3},
  };
  int k = 0;
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16}) {
    for (const MatCase& c : cases) {
      check(t, c, layouts_for(t)[k % 4], layouts_for(LOOM_TYPE_F32)[(k / 4 + k) % 4]);
      ++k;
    }
  }
}

LOOM_CASE(MatMulTest, QuantizedA) {
  seed(402);
  const MatCase cases[] = {
      {32, 1, 1, 1, 1, 1, 1}, {64, 17, 3, 1, 1, 1, 1}, {96, 5, 2, 2, 1, 4, 3}, {32, 3, 5, 1, 3, 2, 3},
  };
  int k = 0;
  for (loom_type_t t : {LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0}) {
    for (const MatCase& c : cases) {
      check(t, c, layouts_for(t)[k % 3], layouts_for(LOOM_TYPE_F32)[k % 4]);
      ++k;
    }
  }
}

LOOM_CASE(MatMulTest, EveryLayoutPair) {
  seed(403);
  const MatCase c{33, 4, 3, 1, 2, 2, 2};
  const MatCase cq{64, 4, 3, 1, 2, 2, 2};
  for (loom_type_t t : kATypes) {
    for (Layout la : layouts_for(t)) {
      for (Layout lb : layouts_for(LOOM_TYPE_F32)) check(t, is_quant(t) ? cq : c, la, lb);
    }
  }
}

// A decode product and a residual added to it (the llama graph's attention
// output and FFN down projection): the cuda plugin runs the ADD in the
// GEMV's store. Both orders of the ADD's sources, product and sum read.
LOOM_CASE(MatMulTest, ResidualAddAfterADecodeProduct) {
  seed(409);
  for (loom_type_t ta : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_K}) {
    const int64_t k = block_elems(ta) == 256 ? 512 : 96, m = 40;
    for (int64_t n : {1, 3, 8}) {
      for (bool residual_first : {false, true}) {
        LOOM_TRACE(type_str(ta) + " N " + std::to_string(n) + (residual_first ? " r + A^T B" : " A^T B + r"));
        Operand a = make(ta, {k, m, 1, 1}, Layout::kDense);
        Operand b = make(LOOM_TYPE_F32, {k, n, 1, 1}, Layout::kDense);
        Operand r = make(LOOM_TYPE_F32, {m, n, 1, 1}, Layout::kDense);
        Tensor* prod = unwrap(op::mul_mat(ctx_, a.t, b.t), "mul_mat");
        Tensor* sum = unwrap(residual_first ? op::add(ctx_, r.t, prod) : op::add(ctx_, prod, r.t), "add");
        LOOM_ASSERT_OK(run_threads({sum, prod}));
        const std::vector<double> got_prod = read(prod), got_sum = read(sum);
        expect_product(ta, a, b, got_prod, "the product");
        // The sum is the product the device computed plus r, rounded once.
        std::vector<double> want(got_prod.size()), exact_tol(got_prod.size(), 0.0);
        for (size_t i = 0; i < want.size(); ++i) {
          want[i] = static_cast<double>(static_cast<float>(got_prod[i]) + static_cast<float>(r.h.at(static_cast<int64_t>(i) % m, static_cast<int64_t>(i) / m)));
        }
        expect_close(got_sum, want, exact_tol, {m, n, 1, 1}, "the sum (product + r)");
      }
    }
  }
}

// Decode products whose B another kernel just wrote (the norm x weight
// before Q, K and V, SWIGLU before the down projection): the cuda plugin
// rounds B to 8-bit blocks in that kernel instead of a kernel of its own.
// Each product against its B as the device computed it.
LOOM_CASE(MatMulTest, ProductsOfANormAndOfASwiglu) {
  seed(410);
  for (loom_type_t ta : {LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_K, LOOM_TYPE_F16}) {
    const int64_t k = 256, m = 24;
    for (int64_t n : {1, 5}) {
      LOOM_TRACE(type_str(ta) + " N " + std::to_string(n));
      Operand x = make(LOOM_TYPE_F32, {k, n, 1, 1}, Layout::kDense, -2.0f, 2.0f);
      Operand w = make(LOOM_TYPE_F32, {k, 1, 1, 1}, Layout::kDense, 0.5f, 1.5f);
      Operand g = make(LOOM_TYPE_F32, {k, n, 1, 1}, Layout::kDense, -3.0f, 3.0f);
      Operand u = make(LOOM_TYPE_F32, {k, n, 1, 1}, Layout::kDense);
      Operand a1 = make(ta, {k, m, 1, 1}, Layout::kDense);
      Operand a2 = make(ta, {k, m, 1, 1}, Layout::kDense);
      Tensor* normed = unwrap(op::mul(ctx_, unwrap(op::rms_norm(ctx_, x.t, 1e-5f), "rms_norm"), w.t), "mul");
      Tensor* act = unwrap(op::swiglu(ctx_, g.t, u.t), "swiglu");
      Tensor* p1 = unwrap(op::mul_mat(ctx_, a1.t, normed), "mul_mat");
      Tensor* p2 = unwrap(op::mul_mat(ctx_, a2.t, act), "mul_mat");
      LOOM_ASSERT_OK(run_threads({p1, p2, normed, act}));
      for (int which = 0; which < 2; ++which) {
        const Operand& a = which == 0 ? a1 : a2;
        const std::vector<double> bv = read(which == 0 ? normed : act);
        Operand b = input_values(LOOM_TYPE_F32, {k, n, 1, 1}, std::vector<float>(bv.begin(), bv.end()));
        expect_product(ta, a, b, read(which == 0 ? p1 : p2), which == 0 ? "the product of the norm" : "the product of SWIGLU");
      }
    }
  }
}

// A decode product of an ATTENTION's result (the attention output
// projection): the cuda plugin rounds B to 8-bit blocks in the attention's
// last kernel. The product against the attention result the device gave.
LOOM_CASE(MatMulTest, ProductOfAnAttention) {
  seed(412);
  const int64_t d = 64, heads = 4, n_kv = 40, m = 24;
  for (loom_type_t ta : {LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_F16}) {
    for (int64_t t : {1, 3}) {
      LOOM_TRACE(type_str(ta) + " T " + std::to_string(t));
      Operand q = make(LOOM_TYPE_F32, {d, heads, t, 1}, Layout::kDense);
      Operand k = make(LOOM_TYPE_F16, {d, n_kv, heads, 1}, Layout::kDense);
      Operand v = make(LOOM_TYPE_F16, {d, n_kv, heads, 1}, Layout::kDense);
      std::vector<int64_t> vis;
      for (int64_t i = 0; i < t; ++i) vis.push_back(n_kv - 2 * i);
      Operand visible = input_ints(LOOM_TYPE_I32, {t, 1, 1, 1}, vis);
      Tensor* att = unwrap(op::attention(ctx_, q.t, k.t, v.t, visible.t, 0.125f), "attention");
      Tensor* flat = unwrap(ctx_.reshape(att, {d * heads, t}), "reshape");
      Operand a = make(ta, {d * heads, m, 1, 1}, Layout::kDense);
      Tensor* out = unwrap(op::mul_mat(ctx_, a.t, flat), "mul_mat");
      LOOM_ASSERT_OK(run_threads({out, att}));
      const std::vector<double> bv = read(att);
      Operand b = input_values(LOOM_TYPE_F32, {d * heads, t, 1, 1}, std::vector<float>(bv.begin(), bv.end()));
      expect_product(ta, a, b, read(out), "the product of the attention");
    }
  }
}

// Decode products over one B back to back (gate and up): the cuda plugin
// runs up to three in one GEMV grid. Members of different row counts, each
// against its own reference.
LOOM_CASE(MatMulTest, ProductsOfOneB) {
  seed(411);
  for (loom_type_t ta : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_Q6_K}) {
    const int64_t k = 256;
    for (int64_t n : {1, 3}) {
      LOOM_TRACE(type_str(ta) + " N " + std::to_string(n));
      Operand b = make(LOOM_TYPE_F32, {k, n, 1, 1}, Layout::kDense);
      const int64_t rows[] = {40, 7, 24};
      std::vector<Operand> as;
      std::vector<Tensor*> outs;
      for (int64_t m : rows) {
        as.push_back(make(ta, {k, m, 1, 1}, Layout::kDense));
        outs.push_back(unwrap(op::mul_mat(ctx_, as.back().t, b.t), "mul_mat"));
      }
      LOOM_ASSERT_OK(run_threads(outs));
      for (size_t i = 0; i < outs.size(); ++i) {
        expect_product(ta, as[i], b, read(outs[i]), "product " + std::to_string(i) + " of one B");
      }
    }
  }
}

LOOM_CASE(MatMulTest, DecodeShapesEveryTypeAndLayout) {
  // Rows of 128 and more with up to 8 columns: the decode kernels of GPU
  // plugins (a workgroup per row; one column with contiguous B has its own
  // path), with B dense and strided.
  const MatCase cases[] = {{256, 40, 1, 1, 1, 1, 1}, {160, 7, 3, 2, 1, 2, 1}, {1024, 9, 1, 1, 2, 2, 2},
                           {128, 5, 8, 1, 1, 1, 1}};
  int k = 0;
  for (loom_type_t t : kATypes) {
    for (const MatCase& c : cases) {
      check(t, c, Layout::kDense, Layout::kDense);
      check(t, c, layouts_for(t)[1 + k % (layouts_for(t).size() - 1)], layouts_for(LOOM_TYPE_F32)[1 + k % 3]);
      ++k;
    }
  }
}

LOOM_CASE(MatMulTest, PrefillShapesEveryFloatType) {
  // Many columns: the CPU's packed GEMM (k in blocks of 256, tiles of up to
  // 32 rows x 12 columns) with every edge: k past one block, rows and
  // columns not multiples of the tile, broadcast batches, strided A rows.
  seed(406);
  const MatCase cases[] = {{300, 45, 29, 1, 1, 1, 1}, {600, 70, 13, 2, 1, 4, 1}, {64, 33, 40, 1, 1, 1, 1},
                           {17, 9, 8, 1, 2, 1, 2}};
  int k = 0;
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16}) {
    for (const MatCase& c : cases) {
      check(t, c, Layout::kDense, Layout::kDense);
      check(t, c, layouts_for(t)[1 + k % 2], Layout::kDense);
      ++k;
    }
  }
}

LOOM_CASE(MatMulTest, WeightTypesOfAbi12) {
  // Random blocks of every ABI 1.2 weight type and of IQ4_XS (1.4; it and
  // the K-quants: super-blocks of 256): decode (1..4 columns, each thread quantizes B), prefill (rows of B
  // split over the threads, then the dots), column tiles with remainders,
  // broadcast batches, strided A and B (transposed B: the f32 path).
  seed(407);
  const loom_type_t types[] = {LOOM_TYPE_Q4_K, LOOM_TYPE_Q6_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q3_K, LOOM_TYPE_Q2_K,
                               LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_IQ4_NL, LOOM_TYPE_IQ4_XS};
  int k = 0;
  for (loom_type_t t : types) {
    const int64_t kb = block_elems(t);
    const MatCase cases[] = {{kb, 1, 1, 1, 1, 1, 1},     {2 * kb, 17, 1, 1, 1, 1, 1}, {3 * kb, 9, 3, 1, 1, 1, 1},
                             {kb, 5, 4, 1, 1, 1, 1},     {2 * kb, 7, 6, 1, 1, 1, 1},  {kb, 6, 9, 1, 2, 2, 2},
                             {2 * kb, 33, 13, 1, 1, 1, 1}};
    for (const MatCase& c : cases) {
      check(t, c, Layout::kDense, Layout::kDense);
      check(t, c, layouts_for(t)[1 + k % 2], layouts_for(LOOM_TYPE_F32)[1 + k % 3]);
      ++k;
    }
  }
}

LOOM_CASE(MatMulTest, LongRowsOfWeightTypes) {
  // Rows of ~2M elements: past what one invocation of a per-output kernel
  // may loop over on lavapipe (65535 iterations, one per 32 elements), so a
  // vulkan device there takes a workgroup kernel instead.
  seed(408);
  check(LOOM_TYPE_Q4_K, {256 * 8400, 2, 1, 1, 1, 1, 1}, Layout::kDense, Layout::kDense);
  check(LOOM_TYPE_Q5_0, {32 * 67000, 1, 2, 1, 1, 1, 1}, Layout::kDense, Layout::kDense);
}

LOOM_CASE(MatMulTest, LargerProductStaysAccurate) {
  seed(404);
  check(LOOM_TYPE_Q4_0, {256, 48, 9, 1, 1, 1, 1}, Layout::kDense, Layout::kDense);
  check(LOOM_TYPE_F16, {255, 33, 17, 1, 1, 1, 1}, Layout::kDense, Layout::kPermuted);
  // Prefill-sized B (more rows than the int8 path quantizes per thread):
  // rows split over threads, then the dots.
  check(LOOM_TYPE_Q8_0, {256, 37, 19, 1, 1, 1, 1}, Layout::kDense, Layout::kDense);
  check(LOOM_TYPE_Q4_0, {96, 9, 6, 1, 2, 2, 2}, Layout::kDense, Layout::kDense);
  // More than one 64x64 tile both ways, ragged at both ends (GPU prefill
  // kernels), with K not a multiple of their k step for float A.
  check(LOOM_TYPE_Q4_K, {256, 130, 67, 1, 1, 1, 1}, Layout::kDense, Layout::kDense);
  check(LOOM_TYPE_F32, {41, 65, 129, 1, 1, 1, 1}, Layout::kDense, Layout::kDense);
}

// Weights in the device's own layout (loom.weight_layout; the cpu plugin's
// repacked Q8_0 / Q4_0 / Q4_1 / IQ4_NL / Q4_K / Q5_K / Q6_K, the cuda
// plugin's split Q8_0 / Q4_0): MUL_MAT over them computes what it computes over
// the canonical bytes, get_tensor gives those bytes back, and ops other
// than MUL_MAT's A do not read them in place.
class WeightLayoutTest : public MatMulTest {
 protected:
  // A copy of `a` (canonical, graph-allocated) in the weight buffer type,
  // or nullptr when the device offers none for it.
  Tensor* relaid_copy(const Operand& a, Buffer* keep) {
    Tensor* t = unwrap(a.t->ne[2] > 1 ? ctx_.new_tensor(static_cast<loom_type_t>(a.t->type),
                                                        {a.t->ne[0], a.t->ne[1], a.t->ne[2]}, "relaid")
                                      : ctx_.new_tensor(static_cast<loom_type_t>(a.t->type), {a.t->ne[0], a.t->ne[1]},
                                                        "relaid"),
                       "new_tensor");
    loom_buffer_type_t* bt = dev_->weight_buffer_type(t);
    if (bt == nullptr) return nullptr;
    *keep = unwrap(allocate_tensors(*dev_, {t}, bt), "allocate_tensors");
    const std::vector<uint8_t>& bytes = a.h.base->bytes;
    LOOM_EXPECT_TRUE(tensor_set(t, bytes.data(), bytes.size()).ok());
    return t;
  }
};

LOOM_CASE(WeightLayoutTest, MatMulMatchesCanonicalAndBytesRoundTrip) {
  // Every type the cpu plugin repacks (Q8_0 / Q4_0 / Q4_1 / Q5_0 / Q5_1 / IQ4_NL blocks of 32, Q4_K /
  // Q5_K / Q6_K super-blocks of 256: their scales and quants spread over 8 rows),
  // decode (1..4 columns) and prefill column counts, one and several groups
  // of 8 rows (threads split the groups), one and three super-blocks.
  // 16 and 37 columns: whole tiles of 16 and a rest (the cpu plugin's AMX
  // path for Q8_0 / Q4_0: pairs of groups and a lone third, an odd and an
  // even count of blocks).
  seed(405);
  struct Shape2 {
    loom_type_t type;
    int64_t k, m;
  };
  // Q8_0 / Q4_0 at K 1056 (33 blocks): the cuda plugin's split GEMV gives a
  // lane whole blocks, so a row of more blocks than lanes and a rest.
  const Shape2 shapes[] = {{LOOM_TYPE_Q8_0, 96, 24},   {LOOM_TYPE_Q4_0, 96, 24},  {LOOM_TYPE_Q4_0, 128, 16},
                           {LOOM_TYPE_Q8_0, 1056, 16}, {LOOM_TYPE_Q4_0, 1056, 16},
                           {LOOM_TYPE_IQ4_NL, 96, 24},
                           {LOOM_TYPE_Q4_1, 96, 24},  {LOOM_TYPE_Q5_0, 96, 24},  {LOOM_TYPE_Q5_1, 96, 24},
                           {LOOM_TYPE_Q4_K, 256, 8},
                           {LOOM_TYPE_Q4_K, 768, 40}, {LOOM_TYPE_Q5_K, 256, 8},  {LOOM_TYPE_Q5_K, 768, 40},
                           {LOOM_TYPE_Q6_K, 256, 16}, {LOOM_TYPE_Q6_K, 768, 24}};
  const int64_t kColumns[] = {1, 3, 4, 9, 16, 37};
  const int per_type = static_cast<int>(std::size(kColumns));
  int ran = 0, offered_32 = 0, offered_k = 0;
  for (const Shape2& sh : shapes) {
    const loom_type_t ta = sh.type;
    const int64_t k = sh.k, m = sh.m;
    for (int64_t n : kColumns) {
      LOOM_TRACE(type_str(ta) + " K " + std::to_string(k) + " M " + std::to_string(m) + " N " + std::to_string(n));
      Operand a = input(ta, {k, m, 1, 1});
      Operand b = input(LOOM_TYPE_F32, {k, n, 1, 1});
      Buffer keep;
      Tensor* ar = relaid_copy(a, &keep);
      if (ar == nullptr) continue;
      ++ran;
      ++(block_elems(ta) == 256 ? offered_k : offered_32);
      std::vector<uint8_t> back(a.h.base->bytes.size());
      LOOM_ASSERT_OK(tensor_get(ar, back.data(), back.size()));
      LOOM_EXPECT_EQ(back, a.h.base->bytes) << "get_tensor must give the canonical bytes back";
      if (reference_device()) {
        // The cpu plugin's layout really moves the bytes (so a kernel that
        // read them as canonical blocks would fail below).
        LOOM_EXPECT_NE(std::memcmp(ar->data, a.h.base->bytes.data(), back.size()), 0) << "stored interleaved";
      }
      Tensor* out = unwrap(op::mul_mat(ctx_, ar, b.t), "mul_mat");
      Tensor* twin = unwrap(op::mul_mat(ctx_, a.t, b.t), "mul_mat");
      LOOM_ASSERT_OK(run_threads({out, twin}));
      expect_product(ta, a, b, read(out), "mul_mat over relaid A");
      expect_product(ta, a, b, read(twin), "mul_mat over canonical A");
      // Other readers (here GET_ROWS) are declined, not fed the relaid bytes.
      Operand idx = input_ints(LOOM_TYPE_I32, {2, 1, 1, 1}, {0, 5});
      Tensor* rows = unwrap(op::get_rows(ctx_, ar, idx.t), "get_rows");
      LOOM_EXPECT_FALSE(dev_->supports_op(rows));
    }
  }
  if (ran == 0) LOOM_SKIP() << dev_->name() << " offers no weight layout for quantized matrices (baseline build or another plugin)";
  if (reference_device()) {
    LOOM_EXPECT_EQ(offered_k, 6 * per_type) << "the cpu plugin repacks Q4_K, Q5_K and Q6_K where it repacks Q8_0 / Q4_0";
    LOOM_EXPECT_EQ(offered_32, 9 * per_type) << "the cpu plugin repacks Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL";
  }
}

// A column's result does not depend on how many columns the product has:
// the cpu plugin runs 1-2 columns and 3 or more (its AVX2 batched paths:
// quants unpacked once, tiles of 4 (Q4_K: 2) columns and a rest) through
// different kernels whose integer sums and f32 steps are the same, so
// there the columns must agree to the bit; elsewhere within the f32
// tolerance of each other, among decode-sized products (at most 8 columns:
// from 9 on a device may round A and B to F16, the F16-inputs rule).
LOOM_CASE(WeightLayoutTest, ColumnsDoNotDependOnTheColumnCount) {
  seed(406);
  const int64_t k = 256, m = 24;
  const int64_t kCounts[] = {1, 2, 3, 6, 8, 9};
  int ran = 0;
  for (loom_type_t ta : {LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_Q8_0,
                         LOOM_TYPE_IQ4_NL, LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K}) {
    LOOM_TRACE(type_str(ta));
    Operand a = input(ta, {k, m, 1, 1});
    Buffer keep;
    Tensor* ar = relaid_copy(a, &keep);
    if (ar == nullptr) continue;
    ++ran;
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> bvals(static_cast<size_t>(k * 9));
    for (float& v : bvals) v = dist(rng_);
    std::vector<Tensor*> outs;
    for (int64_t n : kCounts) {
      const std::vector<float> prefix(bvals.begin(), bvals.begin() + k * n);
      outs.push_back(unwrap(op::mul_mat(ctx_, ar, input_values(LOOM_TYPE_F32, {k, n, 1, 1}, prefix).t), "mul_mat"));
    }
    LOOM_ASSERT_OK(run_threads(outs));
    // The reference device against 9 columns, others against 8.
    const size_t against = reference_device() ? outs.size() - 1 : outs.size() - 2;
    const std::vector<double> widest = read(outs[against]);
    for (size_t o = 0; o < against; ++o) {
      const std::vector<double> got = read(outs[o]);
      for (size_t i = 0; i < got.size(); ++i) {
        const double w = widest[i];
        if (reference_device()) {
          LOOM_EXPECT_EQ(got[i], w) << kCounts[o] << " columns against " << kCounts[against] << ", element " << i;
        } else {
          LOOM_EXPECT_TRUE(std::fabs(got[i] - w) <= 1e-5 * (std::fabs(w) + 1.0))
              << kCounts[o] << " columns against " << kCounts[against] << ", element " << i << ": " << got[i]
              << " vs " << w;
        }
      }
    }
  }
  if (ran == 0) LOOM_SKIP() << dev_->name() << " offers no weight layout for quantized matrices (baseline build or another plugin)";
}

// The largest quants against the largest 8-bit activations: A's blocks all
// at the type's extremes (Q4_0 nibbles 15 and 0, Q5_0 31 and 0, Q8_0 127
// and -128), B's columns all +1 or all -1 (every activation quantized to
// +-127). Integer dot paths that sum several products in 16 bits (the cpu
// plugin's AVX2 Q4_0 kernels sum a block's 8 pair sums there: 8 x 2 x 15 x
// 127 = 30,480; its Q5_0 kernel for 3 and more columns 4: 4 x 2 x 31 x 127
// = 31,496) must neither saturate nor wrap: the results are small integers.
LOOM_CASE(WeightLayoutTest, ExtremeQuantsDoNotOverflow) {
  const int64_t k = 256, m = 16, n = 3;
  for (loom_type_t ta : {LOOM_TYPE_Q4_0, LOOM_TYPE_Q5_0, LOOM_TYPE_Q8_0}) {
    LOOM_TRACE(type_str(ta));
    Operand a = input(ta, {k, m, 1, 1});  // its bytes overwritten below
    std::vector<uint8_t>& bytes = a.h.base->bytes;
    const size_t block = bytes.size() / static_cast<size_t>(m * (k / 32));
    for (size_t b0 = 0; b0 < bytes.size(); b0 += block) {
      const int64_t row = static_cast<int64_t>(b0 / block) / (k / 32);
      bytes[b0] = 0x00;  // d = 1.0 (f16 0x3C00, little-endian)
      bytes[b0 + 1] = 0x3C;
      // Rows alternate the two extremes; every fourth row mixes them.
      // Q5_0: the fifth bits (qh, bytes 2..5) and the nibbles alike.
      const bool nibbles = ta != LOOM_TYPE_Q8_0;
      const uint8_t hi = nibbles ? 0xFF : 0x7F, lo = nibbles ? 0x00 : 0x80;
      for (size_t i = 2; i < block; ++i) {
        bytes[b0 + i] = row % 4 == 3 ? (i % 2 ? hi : lo) : (row % 2 ? lo : hi);
      }
    }
    a.h.base->values = decode(ta, bytes.data(), k * m);
    std::vector<float> bvals(static_cast<size_t>(k * n));
    for (int64_t c = 0; c < n; ++c) {
      for (int64_t i = 0; i < k; ++i) bvals[static_cast<size_t>(c * k + i)] = c == 0 ? 1.0f : c == 1 ? -1.0f : (i % 2 ? 1.0f : -1.0f);
    }
    Operand b = input_values(LOOM_TYPE_F32, {k, n, 1, 1}, bvals);
    Buffer keep;
    Tensor* ar = relaid_copy(a, &keep);
    std::vector<Tensor*> outs{unwrap(op::mul_mat(ctx_, a.t, b.t), "mul_mat")};
    if (ar != nullptr) outs.push_back(unwrap(op::mul_mat(ctx_, ar, b.t), "mul_mat"));
    LOOM_ASSERT_OK(run_threads(outs));
    for (size_t o = 0; o < outs.size(); ++o) {
      const std::vector<double> got = read(outs[o]);
      for (int64_t c = 0; c < n; ++c) {
        for (int64_t r = 0; r < m; ++r) {
          double want = 0.0;
          for (int64_t i = 0; i < k; ++i) want += a.h.at(i, r) * bvals[static_cast<size_t>(c * k + i)];
          // B rounds to 127 x (1 / 127.f), 1 within an f32 step: the sums
          // agree to a few steps; a saturated or wrapped 16-bit sum is off
          // by thousands.
          const double g = got[static_cast<size_t>(c * m + r)];
          LOOM_EXPECT_TRUE(std::fabs(g - want) <= 1e-5 * (std::fabs(want) + static_cast<double>(k)))
              << (o == 0 ? "canonical" : "relaid") << " A, row " << r << ", column " << c << ": got " << g
              << ", want " << want;
        }
      }
    }
  }
}

// A stack of expert matrices [K, 16, 4] in the weight layout: MUL_MAT_ID
// reads each chosen expert's matrix in place and gives what it gives over
// the canonical bytes (the same rounding of B; sums in another order).
LOOM_CASE(WeightLayoutTest, ExpertStacksForMulMatId) {
  seed(407);
  int ran = 0;
  for (loom_type_t ta : {LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_Q5_1, LOOM_TYPE_Q4_K, LOOM_TYPE_Q6_K}) {
    const int64_t k = block_elems(ta) == 256 ? 256 : 64;
    for (int64_t n_tok : {1, 5}) {
      LOOM_TRACE(type_str(ta) + " experts [" + std::to_string(k) + ", 16, 4], " + std::to_string(n_tok) + " tokens");
      Operand a = input(ta, {k, 16, 4, 1});
      Operand b = input(LOOM_TYPE_F32, {k, 1, n_tok, 1});
      std::vector<int64_t> id_vals;
      for (int64_t i = 0; i < 2 * n_tok; ++i) id_vals.push_back(rand_int(0, 2));  // expert 3 never picked
      Operand ids = input_ints(LOOM_TYPE_I32, {2, n_tok, 1, 1}, id_vals);
      Buffer keep;
      Tensor* ar = relaid_copy(a, &keep);
      if (ar == nullptr) continue;
      ++ran;
      std::vector<uint8_t> back(a.h.base->bytes.size());
      LOOM_ASSERT_OK(tensor_get(ar, back.data(), back.size()));
      LOOM_EXPECT_EQ(back, a.h.base->bytes) << "get_tensor must give the canonical bytes back";
      Tensor* out = unwrap(op::mul_mat_id(ctx_, ar, b.t, ids.t), "mul_mat_id");
      Tensor* twin = unwrap(op::mul_mat_id(ctx_, a.t, b.t, ids.t), "mul_mat_id");
      LOOM_ASSERT_OK(run_threads({out, twin}));
      const std::vector<double> want = read(twin);
      std::vector<double> tol;
      for (double v : want) tol.push_back(1e-5 * (std::fabs(v) + 1.0));
      expect_close(read(out), want, tol, {16, 2, n_tok, 1}, "mul_mat_id over relaid experts");
    }
  }
  if (ran == 0) LOOM_SKIP() << dev_->name() << " offers no weight layout for expert stacks";
}

LOOM_CASE(WeightLayoutTest, RowsNotAMultipleOf8StayCanonical) {
  // A matrix whose rows do not fill groups of 8 gets no relaid type from
  // the cpu plugin: the loader keeps it in the canonical buffer and MUL_MAT
  // reads it in place (the WeightTypes cases cover that path's results).
  if (!reference_device()) LOOM_SKIP() << "the cpu plugin's rule";
  for (loom_type_t ta :
       {LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_IQ4_NL, LOOM_TYPE_Q4_K,
        LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K}) {
    const int64_t k = block_elems(ta) == 256 ? 512 : 64;
    LOOM_TRACE(type_str(ta));
    Tensor* odd = unwrap(ctx_.new_tensor(ta, {k, 12}, "odd"), "new_tensor");
    LOOM_EXPECT_EQ(dev_->weight_buffer_type(odd), nullptr) << "12 rows: no group layout";
    Tensor* stack_odd = unwrap(ctx_.new_tensor(ta, {k, 12, 2}, "stack_odd"), "new_tensor");
    LOOM_EXPECT_EQ(dev_->weight_buffer_type(stack_odd), nullptr) << "matrices of 12 rows: no group layout";
    Tensor* four_d = unwrap(ctx_.new_tensor(ta, {k, 16, 2, 2}, "four_d"), "new_tensor");
    LOOM_EXPECT_EQ(dev_->weight_buffer_type(four_d), nullptr) << "4-D: no group layout";
  }
}

// Large float matrices: the device may offer a host buffer type (the cpu
// variants: their huge-page buffers) that keeps the canonical bytes; every
// op reads them, MUL_MAT gives what it gives over the mapping's copy. Small
// ones (under 1 MiB on the cpu) get none: they stay where the file is.
LOOM_CASE(WeightLayoutTest, LargeFloatMatricesInHostMemory) {
  seed(406);
  int ran = 0;
  for (loom_type_t ta : {LOOM_TYPE_F32, LOOM_TYPE_F16}) {
    const int64_t k = 512, m = ta == LOOM_TYPE_F32 ? 512 : 1024;  // 1 MiB
    LOOM_TRACE(type_str(ta));
    Tensor* small = unwrap(ctx_.new_tensor(ta, {64, 64}, "small"), "new_tensor");
    loom_buffer_type_t* small_bt = dev_->weight_buffer_type(small);
    Operand a = input(ta, {k, m, 1, 1});
    Operand b = input(LOOM_TYPE_F32, {k, 1, 1, 1});
    Buffer keep;
    Tensor* ar = relaid_copy(a, &keep);
    if (ar == nullptr) continue;
    ++ran;
    if (reference_device()) {
      LOOM_EXPECT_EQ(small_bt, nullptr) << "a 16 KiB matrix stays in the file's mapping";
    }
    LOOM_ASSERT_NE(ar->buffer, nullptr);
    LOOM_ASSERT_TRUE(registry::buffer_type_is_host(ar->buffer->buffer_type)) << "canonical bytes in host memory";
    LOOM_EXPECT_EQ(std::memcmp(ar->data, a.h.base->bytes.data(), a.h.base->bytes.size()), 0);
    Tensor* out = unwrap(op::mul_mat(ctx_, ar, b.t), "mul_mat");
    Tensor* twin = unwrap(op::mul_mat(ctx_, a.t, b.t), "mul_mat");
    Operand idx = input_ints(LOOM_TYPE_I32, {2, 1, 1, 1}, {0, 5});
    Tensor* rows = unwrap(op::get_rows(ctx_, ar, idx.t), "get_rows");
    LOOM_EXPECT_TRUE(dev_->supports_op(rows));
    LOOM_ASSERT_OK(run_threads({out, twin, rows}));
    LOOM_EXPECT_EQ(read_bytes(out), read_bytes(twin));
    std::vector<double> want;
    for (int64_t r : {0, 5}) {
      for (int64_t i = 0; i < k; ++i) want.push_back(a.h.at(i, r));
    }
    expect_equal(read(rows), want, {k, 2, 1, 1}, "get_rows over the copy");
  }
  if (ran == 0) LOOM_SKIP() << dev_->name() << " offers no buffer type for float weights (baseline build or another plugin)";
}

}  // namespace
}  // namespace loom::conformance
