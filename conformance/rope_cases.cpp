// ROPE: normal and neox modes, n_dims < head_dim pass-through, freq_base and
// freq_scale, frequency factors (src2, dense and strided), every float type,
// strided views, in place, 1 vs 3 threads.
#include <algorithm>
#include <cstring>

#include "loom/runtime/ops.hpp"
#include "conformance/suite.hpp"

namespace loom::conformance {
namespace {

struct RopeCase {
  Shape ne;  // [head_dim, n_head, n_tok, n3]
  int n_dims;
  int mode;
  float base;
  float scale;
};

class RopeTest : public OpTest {
 protected:
  // factors: none, F32 [n_dims/2] dense, or the same values with a stride
  // of two elements (a transposed view).
  enum class Factors { kNone, kDense, kStrided };

  void check(loom_type_t t, const RopeCase& c, Layout layout, Factors factors = Factors::kNone) {
    LOOM_TRACE("rope " + type_str(t) + " " + shape_str(c.ne) + " " + layout_name(layout) + " n_dims " +
                 std::to_string(c.n_dims) + " mode " + std::to_string(c.mode) + " factors " +
                 std::to_string(static_cast<int>(factors)));
    Operand a = make(t, c.ne, layout);
    std::vector<int64_t> pos;
    for (int64_t i = 0; i < c.ne[2]; ++i) pos.push_back(rand_int(0, 300));
    Operand p = input_ints(LOOM_TYPE_I32, {c.ne[2], 1, 1, 1}, pos);
    const int64_t n_ff = c.n_dims / 2;
    Operand ff;
    if (factors == Factors::kDense) ff = input(LOOM_TYPE_F32, {n_ff, 1, 1, 1}, 0.5f, 40.0f);
    if (factors == Factors::kStrided) {
      Operand wide = input(LOOM_TYPE_F32, {2, n_ff, 1, 1}, 0.5f, 40.0f);
      const size_t row = 2 * sizeof(float);
      ff = transpose(view(wide, {1, n_ff, 1, 1}, {row, row * n_ff, row * n_ff}, 0));
    }
    Tensor* out = unwrap(op::rope(ctx_, a.t, p.t, c.n_dims, c.mode, c.base, c.scale, ff.t), "rope");
    LOOM_ASSERT_OK(run_threads({out}));
    expect_rope(out, t, a, pos, c, ff);
  }

  // out against the double reference of ROPE(a) at positions pos with c's
  // parameters and ff's factors (ff.t null: none).
  void expect_rope(Tensor* out, loom_type_t t, const Operand& a, const std::vector<int64_t>& pos, const RopeCase& c,
                   const Operand& ff) {
    std::vector<double> ref(static_cast<size_t>(nelements(c.ne)));
    std::vector<double> tol(ref.size());
    const int half = c.n_dims / 2;
    for (int64_t i3 = 0; i3 < c.ne[3]; ++i3)
      for (int64_t i2 = 0; i2 < c.ne[2]; ++i2)
        for (int64_t i1 = 0; i1 < c.ne[1]; ++i1) {
          for (int64_t i0 = 0; i0 < c.ne[0]; ++i0) {
            const double x = a.h.at(i0, i1, i2, i3);
            ref[flat(c.ne, i0, i1, i2, i3)] = x;  // pass-through unless rotated below
            tol[flat(c.ne, i0, i1, i2, i3)] = 0.0;
          }
          for (int i = 0; i < half; ++i) {
            const double factor = ff.t != nullptr ? ff.h.at(i) : 1.0;
            const double theta = static_cast<double>(pos[i2]) * c.scale *
                                 std::pow(static_cast<double>(c.base), -2.0 * i / c.n_dims) / factor;
            const int64_t j0 = c.mode == LOOM_ROPE_MODE_NEOX ? i : 2 * i;
            const int64_t j1 = c.mode == LOOM_ROPE_MODE_NEOX ? i + half : 2 * i + 1;
            const double x0 = a.h.at(j0, i1, i2, i3);
            const double x1 = a.h.at(j1, i1, i2, i3);
            const double y0 = x0 * std::cos(theta) - x1 * std::sin(theta);
            const double y1 = x0 * std::sin(theta) + x1 * std::cos(theta);
            // An f32 theta is off by about u * theta radians.
            const double mag = (std::fabs(x0) + std::fabs(x1)) * (1.0 + theta);
            ref[flat(c.ne, j0, i1, i2, i3)] = y0;
            ref[flat(c.ne, j1, i1, i2, i3)] = y1;
            tol[flat(c.ne, j0, i1, i2, i3)] = tol_for(t, y0, mag, 2);
            tol[flat(c.ne, j1, i1, i2, i3)] = tol_for(t, y1, mag, 2);
          }
        }
    expect_close(read(out), ref, tol, c.ne, "rope result");
  }
};

const RopeCase kRopeCases[] = {
    {{8, 3, 5, 1}, 8, LOOM_ROPE_MODE_NORMAL, 10000.0f, 1.0f},
    {{8, 3, 5, 1}, 8, LOOM_ROPE_MODE_NEOX, 10000.0f, 1.0f},
    {{16, 2, 3, 2}, 6, LOOM_ROPE_MODE_NORMAL, 500.0f, 0.5f},  // partial: dims 6..15 pass through
    {{16, 2, 3, 2}, 10, LOOM_ROPE_MODE_NEOX, 500.0f, 0.25f},
    {{2, 1, 1, 1}, 2, LOOM_ROPE_MODE_NORMAL, 10000.0f, 1.0f},
    {{34, 3, 7, 1}, 32, LOOM_ROPE_MODE_NEOX, 1e6f, 1.0f},
};

LOOM_CASE(RopeTest, ModesTypesAndLayouts) {
  seed(501);
  int k = 0;
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16}) {
    for (const RopeCase& c : kRopeCases) check(t, c, layouts_for(t)[k++ % 4]);
  }
}

LOOM_CASE(RopeTest, EveryLayout) {
  seed(502);
  for (Layout l : layouts_for(LOOM_TYPE_F32)) {
    check(LOOM_TYPE_F32, kRopeCases[2], l);
    check(LOOM_TYPE_F32, kRopeCases[3], l);
  }
}

// theta_i /= factor_i (llama-3's rope_freqs): both modes, every float type,
// dense and strided factors, partial rotation.
LOOM_CASE(RopeTest, FrequencyFactors) {
  seed(504);
  int k = 0;
  for (loom_type_t t : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16}) {
    for (const RopeCase& c : kRopeCases) {
      check(t, c, layouts_for(t)[k % 4], k % 2 == 0 ? Factors::kDense : Factors::kStrided);
      ++k;
    }
  }
}

// Two ROPE nodes in one graph at the same positions, with and without
// factors and with other factors: a kernel that caches a position's cos/sin
// must key the cache on the factors too.
LOOM_CASE(RopeTest, FactorsChangeTheAnglesBetweenNodes) {
  seed(505);
  const RopeCase c{{8, 2, 3, 1}, 8, LOOM_ROPE_MODE_NORMAL, 10000.0f, 1.0f};
  Operand a = input(LOOM_TYPE_F32, c.ne);
  const std::vector<int64_t> positions = {5, 9, 200};
  Operand p = input_ints(LOOM_TYPE_I32, {3, 1, 1, 1}, positions);
  Operand f1 = input_values(LOOM_TYPE_F32, {4, 1, 1, 1}, {1.0f, 2.0f, 4.0f, 8.0f});
  Operand f2 = input_values(LOOM_TYPE_F32, {4, 1, 1, 1}, {3.0f, 1.0f, 0.5f, 16.0f});
  Tensor* plain = unwrap(op::rope(ctx_, a.t, p.t, 8, c.mode, c.base, c.scale), "rope");
  Tensor* r1 = unwrap(op::rope(ctx_, a.t, p.t, 8, c.mode, c.base, c.scale, f1.t), "rope f1");
  Tensor* r2 = unwrap(op::rope(ctx_, a.t, p.t, 8, c.mode, c.base, c.scale, f2.t), "rope f2");
  LOOM_ASSERT_OK(run_threads({plain, r1, r2}));
  const Operand* fs[] = {nullptr, &f1, &f2};
  Tensor* outs[] = {plain, r1, r2};
  for (int n = 0; n < 3; ++n) {
    std::vector<double> ref(static_cast<size_t>(nelements(c.ne)));
    std::vector<double> tol(ref.size());
    for (int64_t i2 = 0; i2 < 3; ++i2) {
      for (int64_t i1 = 0; i1 < 2; ++i1) {
        for (int i = 0; i < 4; ++i) {
          const double f = fs[n] ? fs[n]->h.at(i) : 1.0;
          const double theta = static_cast<double>(positions[static_cast<size_t>(i2)]) * std::pow(1e4, -2.0 * i / 8) / f;
          const double x0 = a.h.at(2 * i, i1, i2), x1 = a.h.at(2 * i + 1, i1, i2);
          const double y0 = x0 * std::cos(theta) - x1 * std::sin(theta);
          const double y1 = x0 * std::sin(theta) + x1 * std::cos(theta);
          const double mag = (std::fabs(x0) + std::fabs(x1)) * (1.0 + theta);
          ref[flat(c.ne, 2 * i, i1, i2, 0)] = y0;
          ref[flat(c.ne, 2 * i + 1, i1, i2, 0)] = y1;
          tol[flat(c.ne, 2 * i, i1, i2, 0)] = tol_for(LOOM_TYPE_F32, y0, mag, 2);
          tol[flat(c.ne, 2 * i + 1, i1, i2, 0)] = tol_for(LOOM_TYPE_F32, y1, mag, 2);
        }
      }
    }
    expect_close(read(outs[n]), ref, tol, c.ne, "rope node " + std::to_string(n));
  }
}

// Nodes at the same positions with other base, scale and n_dims, in one
// graph: a kernel that keeps cos/sin rows per position must drop them when
// the parameters change. Positions past 65536 too (a kernel may keep only
// the first positions' rows).
LOOM_CASE(RopeTest, ParametersChangeBetweenNodesAtTheSamePositions) {
  seed(506);
  const std::vector<int64_t> pos = {3, 70000, 3, 150000};
  const RopeCase cases[] = {
      {{8, 2, 4, 1}, 8, LOOM_ROPE_MODE_NORMAL, 10000.0f, 1.0f},
      {{8, 2, 4, 1}, 8, LOOM_ROPE_MODE_NORMAL, 500000.0f, 1.0f},
      {{8, 2, 4, 1}, 4, LOOM_ROPE_MODE_NORMAL, 10000.0f, 0.5f},
      {{8, 2, 4, 1}, 8, LOOM_ROPE_MODE_NORMAL, 10000.0f, 1.0f},
  };
  Operand a = input(LOOM_TYPE_F32, cases[0].ne);
  Operand p = input_ints(LOOM_TYPE_I32, {4, 1, 1, 1}, pos);
  std::vector<Tensor*> outs;
  for (const RopeCase& c : cases) {
    outs.push_back(unwrap(op::rope(ctx_, a.t, p.t, c.n_dims, c.mode, c.base, c.scale), "rope"));
  }
  LOOM_ASSERT_OK(run_threads(outs));
  for (size_t n = 0; n < outs.size(); ++n) {
    LOOM_TRACE("rope node " + std::to_string(n));
    expect_rope(outs[n], LOOM_TYPE_F32, a, pos, cases[n], Operand{});
  }
}

LOOM_CASE(RopeTest, PositionZeroIsIdentityAndRunsInPlace) {
  seed(503);
  Operand a = input(LOOM_TYPE_F32, {8, 2, 3, 1});
  Operand p = input_ints(LOOM_TYPE_I32, {3, 1, 1, 1}, {0, 0, 0});
  Tensor* out = unwrap(op::rope(ctx_, a.t, p.t, 8, LOOM_ROPE_MODE_NORMAL, 10000.0f, 1.0f), "rope");
  LOOM_ASSERT_OK(run_threads({out}));
  LOOM_EXPECT_EQ(out->data, a.t->data) << "expected the allocator to run in place";
  expect_equal(read(out), a.h.values(), a.h.ne, "rope at position 0");
}

// The llama graph's Q, K and V: Q rotated, K rotated, permuted to the
// cache's [head_dim, tokens, kv heads] order and stored at the batch's rows,
// then V's rows stored at the same rows (the cuda plugin runs the four nodes
// as one kernel). ROPE's result against the reference; each written cache row
// holds that result (or V's row) converted once to the cache's type; the
// other rows keep their bytes. Partial rotation (n_dims < head_dim) and
// I32 / I64 indices too.
LOOM_CASE(RopeTest, RotatedRowsStoredInACache) {
  seed(507);
  const int64_t hd = 16, heads = 3, tokens = 5, n_ctx = 11;
  int k = 0;
  for (loom_type_t ct : {LOOM_TYPE_F16, LOOM_TYPE_F32, LOOM_TYPE_BF16}) {
    for (int mode : {LOOM_ROPE_MODE_NORMAL, LOOM_ROPE_MODE_NEOX}) {
      const RopeCase c{{hd, heads, tokens, 1}, k % 2 == 0 ? 16 : 12, mode, 10000.0f, 1.0f};
      const loom_type_t index_type = k % 3 == 0 ? LOOM_TYPE_I32 : LOOM_TYPE_I64;
      ++k;
      LOOM_TRACE("cache " + type_str(ct) + " mode " + std::to_string(mode) + " n_dims " + std::to_string(c.n_dims) +
                 " idx " + type_str(index_type));
      Operand a = make(LOOM_TYPE_F32, c.ne, Layout::kDense);
      Operand v = make(LOOM_TYPE_F32, c.ne, Layout::kDense);
      std::vector<int64_t> pos;
      for (int64_t i = 0; i < tokens; ++i) pos.push_back(rand_int(0, 300));
      Operand p = input_ints(LOOM_TYPE_I32, {tokens, 1, 1, 1}, pos);
      // Distinct rows per head: tokens of n_ctx.
      std::vector<int64_t> rows;
      for (int64_t h = 0; h < heads; ++h) {
        std::vector<int64_t> perm(static_cast<size_t>(n_ctx));
        for (int64_t i = 0; i < n_ctx; ++i) perm[static_cast<size_t>(i)] = i;
        std::shuffle(perm.begin(), perm.end(), rng_);
        rows.insert(rows.end(), perm.begin(), perm.begin() + tokens);
      }
      Operand idx = input_ints(index_type, {tokens, heads, 1, 1}, rows);
      Operand kc = input(ct, {hd, n_ctx, heads, 1});
      Operand vc = input(ct, {hd, n_ctx, heads, 1});
      // Q (twice the heads) rotated just before K, as the llama graph does.
      const RopeCase cq{{hd, 2 * heads, tokens, 1}, c.n_dims, c.mode, c.base, c.scale};
      Operand qa = make(LOOM_TYPE_F32, cq.ne, Layout::kDense);
      Tensor* q_roped = unwrap(op::rope(ctx_, qa.t, p.t, cq.n_dims, cq.mode, cq.base, cq.scale), "rope");
      Tensor* roped = unwrap(op::rope(ctx_, a.t, p.t, c.n_dims, c.mode, c.base, c.scale), "rope");
      Tensor* kp = unwrap(ctx_.permute(roped, 0, 2, 1, 3), "permute");
      Tensor* vp = unwrap(ctx_.permute(v.t, 0, 2, 1, 3), "permute");
      Tensor* ks = unwrap(op::set_rows(ctx_, kc.t, kp, idx.t), "set_rows");
      Tensor* vs = unwrap(op::set_rows(ctx_, vc.t, vp, idx.t), "set_rows");
      LOOM_ASSERT_OK(run_threads({q_roped, ks, vs, roped}));
      const std::vector<double> got_rope = read(roped);
      expect_rope(roped, LOOM_TYPE_F32, a, pos, c, Operand{});
      expect_rope(q_roped, LOOM_TYPE_F32, qa, pos, cq, Operand{});
      // Cache row r of head h: token t's row where idx[t, h] = r.
      for (int which = 0; which < 2; ++which) {
        const Operand& cache = which == 0 ? kc : vc;
        const std::vector<uint8_t> got = read_bytes(cache.t);
        const size_t rb = row_bytes(ct, hd);
        int64_t bad = 0;
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t r = 0; r < n_ctx; ++r) {
            const size_t off = static_cast<size_t>(h * n_ctx + r) * rb;
            int64_t t = -1;
            for (int64_t i = 0; i < tokens; ++i) {
              if (rows[static_cast<size_t>(h * tokens + i)] == r) t = i;
            }
            std::string err;
            if (t < 0) {
              if (std::memcmp(got.data() + off, cache.h.base->bytes.data() + off, rb) != 0) err = "untouched row changed";
            } else {
              const std::vector<double> row = decode(ct, got.data() + off, hd);
              for (int64_t i0 = 0; i0 < hd && err.empty(); ++i0) {
                const double want = which == 0 ? got_rope[static_cast<size_t>(flat(c.ne, i0, h, t, 0))] : v.h.at(i0, h, t);
                if (std::fabs(row[static_cast<size_t>(i0)] - want) > conv_tol(ct, want)) err = "value " + std::to_string(i0);
              }
            }
            if (!err.empty() && bad++ < 5) {
              LOOM_ADD_FAILURE() << (which == 0 ? "K" : "V") << " cache row " << r << " head " << h << ": " << err;
            }
          }
      }
    }
  }
}

}  // namespace
}  // namespace loom::conformance
