// Op builders: result shapes, types and params for every op, and a status
// naming the op for every bad input.
#include <gtest/gtest.h>

#include <array>
#include <limits>

#include "common/op_check.h"
#include "common/op_info.h"
#include "common/op_table.h"
#include "loom/runtime/ops.hpp"
#include "loom/runtime/types.hpp"
#include "loom/runtime/tensor.hpp"
#include "runtime_test_util.hpp"

namespace loom {
namespace {

using test::fails_with;
using test::must;
using Ne = std::array<int64_t, 4>;

Ne shape(const Tensor* t) { return {t->ne[0], t->ne[1], t->ne[2], t->ne[3]}; }

class Ops : public ::testing::Test {
 protected:
  Tensor* make(loom_type_t type, std::initializer_list<int64_t> dims, const char* name = "t") {
    return must(ctx_.new_tensor(type, dims, name));
  }
  Context ctx_;
  Context other_;
};

TEST_F(Ops, BinaryBroadcastShapesAndTypes) {
  Tensor* a = make(LOOM_TYPE_F32, {4, 6, 2}, "a");
  Tensor* b = make(LOOM_TYPE_F16, {4, 3, 1}, "b");
  for (auto fn : {op::add, op::sub, op::mul, op::div}) {
    Tensor* r = must(fn(ctx_, a, b));
    EXPECT_EQ(shape(r), (Ne{4, 6, 2, 1}));
    EXPECT_EQ(r->type, LOOM_TYPE_F32);
    EXPECT_EQ(r->src[0], a);
    EXPECT_EQ(r->src[1], b);
    EXPECT_TRUE(r->is_contiguous());
  }
  EXPECT_EQ(must(op::add(ctx_, a, b))->op, LOOM_OP_ADD);
  EXPECT_EQ(must(op::sub(ctx_, a, b))->op, LOOM_OP_SUB);
  EXPECT_EQ(must(op::mul(ctx_, a, b))->op, LOOM_OP_MUL);
  EXPECT_EQ(must(op::div(ctx_, a, b))->op, LOOM_OP_DIV);
  EXPECT_STREQ(must(op::add(ctx_, a, b))->name, "add");
  // Result follows src0's type.
  EXPECT_EQ(must(op::add(ctx_, b, b))->type, LOOM_TYPE_F16);

  Tensor* c = make(LOOM_TYPE_F32, {3, 2}, "c");
  Tensor* d = make(LOOM_TYPE_F32, {4, 2}, "d");
  EXPECT_TRUE(fails_with(op::add(ctx_, d, c),
                         {"[op.add] cannot broadcast b c f32 [3, 2, 1, 1] to a d f32 [4, 2, 1, 1]"}));
  // Broadcasting goes one way only: b into a.
  EXPECT_TRUE(fails_with(op::mul(ctx_, b, a), {"[op.mul]", "cannot broadcast"}));
  Tensor* i = make(LOOM_TYPE_I32, {4}, "i");
  EXPECT_TRUE(fails_with(op::sub(ctx_, i, i), {"[op.sub]", "i i32", "f32, f16 or bf16"}));
  Tensor* q = make(LOOM_TYPE_Q8_0, {32}, "q");
  EXPECT_TRUE(fails_with(op::div(ctx_, a, q), {"[op.div]", "q q8_0"}));
  EXPECT_TRUE(fails_with(op::add(ctx_, a, nullptr), {"[op.add]", "b is null"}));
  EXPECT_TRUE(fails_with(op::add(ctx_, nullptr, a), {"[op.add]", "a is null"}));
  Tensor* foreign = must(other_.new_tensor(LOOM_TYPE_F32, {4}, "f"));
  EXPECT_TRUE(fails_with(op::add(ctx_, a, foreign), {"[op.add]", "another context"}));
}

TEST_F(Ops, UnaryAndParams) {
  Tensor* a = make(LOOM_TYPE_BF16, {8, 3}, "a");
  for (auto fn : {op::silu, op::gelu, op::relu}) {
    Tensor* r = must(fn(ctx_, a));
    EXPECT_EQ(shape(r), (Ne{8, 3, 1, 1}));
    EXPECT_EQ(r->type, LOOM_TYPE_BF16);
  }
  EXPECT_EQ(must(op::silu(ctx_, a))->op, LOOM_OP_SILU);
  EXPECT_EQ(must(op::gelu(ctx_, a))->op, LOOM_OP_GELU);
  EXPECT_EQ(must(op::relu(ctx_, a))->op, LOOM_OP_RELU);
  Tensor* s = must(op::scale(ctx_, a, 0.5f, -2.0f));
  EXPECT_EQ(s->op, LOOM_OP_SCALE);
  EXPECT_EQ(s->type, LOOM_TYPE_BF16);
  EXPECT_EQ(s->param<float>(0), 0.5f);
  EXPECT_EQ(s->param<float>(1), -2.0f);
  Tensor* i = make(LOOM_TYPE_I32, {4}, "i");
  EXPECT_TRUE(fails_with(op::silu(ctx_, i), {"[op.silu]", "i32"}));
  EXPECT_TRUE(fails_with(op::gelu(ctx_, nullptr), {"[op.gelu]", "null"}));
  EXPECT_TRUE(fails_with(op::relu(other_, a), {"[op.relu]", "another context"}));
  EXPECT_TRUE(fails_with(op::scale(ctx_, i, 1.0f), {"[op.scale]"}));
}

TEST_F(Ops, Norms) {
  Tensor* a = make(LOOM_TYPE_F16, {8, 3}, "a");
  Tensor* r = must(op::rms_norm(ctx_, a, 1e-5f));
  EXPECT_EQ(r->op, LOOM_OP_RMS_NORM);
  EXPECT_EQ(r->type, LOOM_TYPE_F32);  // results are F32 unless plugin.h says otherwise
  EXPECT_EQ(shape(r), (Ne{8, 3, 1, 1}));
  EXPECT_EQ(r->param<float>(0), 1e-5f);
  Tensor* n = must(op::norm(ctx_, a, 0.0f));
  EXPECT_EQ(n->op, LOOM_OP_NORM);
  EXPECT_EQ(n->type, LOOM_TYPE_F32);
  EXPECT_TRUE(fails_with(op::rms_norm(ctx_, a, -1.0f), {"[op.rms_norm]", "eps"}));
  EXPECT_TRUE(fails_with(op::norm(ctx_, make(LOOM_TYPE_Q4_0, {32}), 1e-5f), {"[op.norm]", "q4_0"}));
  EXPECT_TRUE(fails_with(op::norm(ctx_, nullptr, 1e-5f), {"[op.norm]", "null"}));
}

TEST_F(Ops, MulMat) {
  Tensor* a = make(LOOM_TYPE_Q4_0, {64, 10, 2, 1}, "w");
  Tensor* b = make(LOOM_TYPE_F32, {64, 5, 6, 3}, "x");
  Tensor* r = must(op::mul_mat(ctx_, a, b));
  EXPECT_EQ(r->op, LOOM_OP_MUL_MAT);
  EXPECT_EQ(r->type, LOOM_TYPE_F32);
  EXPECT_EQ(shape(r), (Ne{10, 5, 6, 3}));
  EXPECT_TRUE(op::mul_mat(ctx_, make(LOOM_TYPE_F16, {64, 3}), b).ok());
  EXPECT_TRUE(op::mul_mat(ctx_, make(LOOM_TYPE_Q8_0, {64, 3}), b).ok());
  Tensor* bad_k = make(LOOM_TYPE_F32, {32, 5}, "y");
  EXPECT_TRUE(fails_with(op::mul_mat(ctx_, a, bad_k), {"[op.mul_mat]", "w q4_0 [64, 10, 2, 1]", "y f32 [32, 5, 1, 1]"}));
  Tensor* bad_b2 = make(LOOM_TYPE_F32, {64, 5, 3}, "z");
  EXPECT_TRUE(fails_with(op::mul_mat(ctx_, a, bad_b2), {"[op.mul_mat]", "b.ne[2] % a.ne[2]"}));
  // B must be F32 (plugin.h), A must not be an integer type.
  EXPECT_TRUE(fails_with(op::mul_mat(ctx_, a, make(LOOM_TYPE_F16, {64, 5}, "h")), {"[op.mul_mat]", "must be f32"}));
  EXPECT_TRUE(fails_with(op::mul_mat(ctx_, make(LOOM_TYPE_I32, {64}, "i"), b), {"[op.mul_mat]", "i i32"}));
  EXPECT_TRUE(fails_with(op::mul_mat(ctx_, a, nullptr), {"[op.mul_mat]", "null"}));
}

TEST_F(Ops, GetRows) {
  Tensor* a = make(LOOM_TYPE_Q8_0, {32, 100, 2}, "emb");
  Tensor* idx = make(LOOM_TYPE_I32, {7, 2}, "ids");
  Tensor* r = must(op::get_rows(ctx_, a, idx));
  EXPECT_EQ(r->op, LOOM_OP_GET_ROWS);
  EXPECT_EQ(r->type, LOOM_TYPE_F32);
  EXPECT_EQ(shape(r), (Ne{32, 7, 2, 1}));
  EXPECT_TRUE(fails_with(op::get_rows(ctx_, a, make(LOOM_TYPE_I64, {7, 2}, "l")), {"[op.get_rows]", "i32"}));
  EXPECT_TRUE(fails_with(op::get_rows(ctx_, a, make(LOOM_TYPE_I32, {7}, "k")), {"[op.get_rows]", "[k, 2, 1, 1]"}));
}

TEST_F(Ops, Rope) {
  Tensor* a = make(LOOM_TYPE_F32, {16, 4, 5}, "q");
  Tensor* pos = make(LOOM_TYPE_I32, {5}, "pos");
  Tensor* r = must(op::rope(ctx_, a, pos, 8, LOOM_ROPE_MODE_NEOX, 10000.0f, 0.5f));
  EXPECT_EQ(r->op, LOOM_OP_ROPE);
  EXPECT_EQ(r->type, LOOM_TYPE_F32);
  EXPECT_EQ(shape(r), (Ne{16, 4, 5, 1}));
  EXPECT_EQ(r->param<int32_t>(0), 8);
  EXPECT_EQ(r->param<int32_t>(1), 2);
  EXPECT_EQ(r->param<float>(2), 10000.0f);
  EXPECT_EQ(r->param<float>(3), 0.5f);
  EXPECT_EQ(r->src[1], pos);
  EXPECT_TRUE(fails_with(op::rope(ctx_, a, pos, 7, 0, 1e4f, 1.0f), {"[op.rope]", "n_dims 7"}));
  EXPECT_TRUE(fails_with(op::rope(ctx_, a, pos, 18, 0, 1e4f, 1.0f), {"[op.rope]", "n_dims 18", "16"}));
  EXPECT_TRUE(fails_with(op::rope(ctx_, a, pos, 8, 1, 1e4f, 1.0f), {"[op.rope]", "mode 1"}));
  EXPECT_TRUE(fails_with(op::rope(ctx_, a, pos, 8, 0, 0.0f, 1.0f), {"[op.rope]", "freq_base"}));
  EXPECT_TRUE(fails_with(op::rope(ctx_, a, make(LOOM_TYPE_I32, {4}, "p4"), 8, 0, 1e4f, 1.0f),
                         {"[op.rope]", "p4 i32 [4, 1, 1, 1]", "[5]"}));
  EXPECT_TRUE(fails_with(op::rope(ctx_, a, make(LOOM_TYPE_F32, {5}, "pf"), 8, 0, 1e4f, 1.0f), {"[op.rope]", "i32"}));
  EXPECT_EQ(r->src[2], nullptr);
}

TEST_F(Ops, RopeFreqFactors) {
  Tensor* a = make(LOOM_TYPE_F32, {16, 4, 5}, "q");
  Tensor* pos = make(LOOM_TYPE_I32, {5}, "pos");
  Tensor* ff = make(LOOM_TYPE_F32, {4}, "ff");
  Tensor* r = must(op::rope(ctx_, a, pos, 8, LOOM_ROPE_MODE_NORMAL, 10000.0f, 1.0f, ff));
  EXPECT_EQ(r->src[2], ff);
  EXPECT_EQ(shape(r), (Ne{16, 4, 5, 1}));
  EXPECT_TRUE(fails_with(op::rope(ctx_, a, pos, 16, 0, 1e4f, 1.0f, ff), {"[op.rope]", "freq_factors", "[8]"}));
  EXPECT_TRUE(fails_with(op::rope(ctx_, a, pos, 8, 0, 1e4f, 1.0f, make(LOOM_TYPE_F16, {4}, "fh")),
                         {"[op.rope]", "freq_factors", "f32"}));
  EXPECT_TRUE(fails_with(op::rope(ctx_, a, pos, 8, 0, 1e4f, 1.0f, make(LOOM_TYPE_F32, {4, 2}, "f2")),
                         {"[op.rope]", "freq_factors", "[4]"}));
}

TEST_F(Ops, SoftMax) {
  Tensor* a = make(LOOM_TYPE_F32, {6, 4, 8, 2}, "kq");
  Tensor* r = must(op::soft_max(ctx_, a, nullptr, 0.125f));
  EXPECT_EQ(r->op, LOOM_OP_SOFT_MAX);
  EXPECT_EQ(r->src[1], nullptr);
  EXPECT_EQ(r->param<float>(0), 0.125f);
  EXPECT_EQ(shape(r), (Ne{6, 4, 8, 2}));
  Tensor* mask = make(LOOM_TYPE_F16, {6, 5, 2, 1}, "mask");  // more rows than needed is fine
  Tensor* rm = must(op::soft_max(ctx_, a, mask, 1.0f));
  EXPECT_EQ(rm->src[1], mask);
  EXPECT_TRUE(fails_with(op::soft_max(ctx_, a, make(LOOM_TYPE_F32, {6, 3}, "m3"), 1.0f), {"[op.soft_max]", "m3"}));
  EXPECT_TRUE(fails_with(op::soft_max(ctx_, a, make(LOOM_TYPE_F32, {6, 4, 3}, "m"), 1.0f), {"[op.soft_max]", "ne2 % m2"}));
  EXPECT_TRUE(fails_with(op::soft_max(ctx_, a, make(LOOM_TYPE_F32, {5, 4}, "m"), 1.0f), {"[op.soft_max]"}));
}

TEST_F(Ops, CpyIsAViewOfItsDestination) {
  Tensor* a = make(LOOM_TYPE_F32, {64, 2}, "a");
  Tensor* cache = make(LOOM_TYPE_Q8_0, {64, 10}, "cache");
  Tensor* slot = must(ctx_.view(cache, {64, 2}, {cache->nb[1]}, 3 * cache->nb[1]));
  Tensor* c = must(op::cpy(ctx_, a, slot));
  EXPECT_EQ(c->op, LOOM_OP_CPY);
  EXPECT_EQ(c->src[0], a);
  EXPECT_EQ(c->src[1], slot);
  EXPECT_EQ(c->view_src, cache);  // the base, not the intermediate view
  EXPECT_EQ(c->view_offset, 3 * cache->nb[1]);
  EXPECT_EQ(c->type, LOOM_TYPE_Q8_0);
  EXPECT_EQ(shape(c), (Ne{64, 2, 1, 1}));
  EXPECT_EQ(c->nb[1], slot->nb[1]);
  // Different shape, same element count: fine.
  EXPECT_TRUE(op::cpy(ctx_, make(LOOM_TYPE_F16, {128}), must(ctx_.transpose(a))).ok());
  EXPECT_TRUE(op::cpy(ctx_, make(LOOM_TYPE_F16, {128}), a).ok());
  EXPECT_TRUE(op::cpy(ctx_, cache, make(LOOM_TYPE_BF16, {640})).ok());
  EXPECT_TRUE(op::cpy(ctx_, make(LOOM_TYPE_I32, {4}), make(LOOM_TYPE_I32, {2, 2})).ok());
  EXPECT_TRUE(fails_with(op::cpy(ctx_, a, make(LOOM_TYPE_F32, {10}, "small")), {"[op.cpy]", "128", "10"}));
  EXPECT_TRUE(fails_with(op::cpy(ctx_, cache, make(LOOM_TYPE_Q4_0, {640})), {"[op.cpy]", "q8_0 to q4_0"}));
  EXPECT_TRUE(fails_with(op::cpy(ctx_, make(LOOM_TYPE_I32, {4}), make(LOOM_TYPE_F32, {4})), {"[op.cpy]", "i32 to f32"}));
  EXPECT_TRUE(fails_with(op::cpy(ctx_, a, nullptr), {"[op.cpy]", "dst is null"}));

  // A base that already has memory gives the result its data too.
  alignas(16) static char memory[2048];
  Tensor* host = make(LOOM_TYPE_F32, {128}, "host");
  host->data = memory;
  Tensor* hv = must(ctx_.view(host, {64}, {}, 256));
  Tensor* ch = must(op::cpy(ctx_, must(ctx_.view(a, {64}, {}, 0)), hv));
  EXPECT_EQ(ch->data, memory + 256);
}

TEST_F(Ops, SetRowsIsAViewOfItsDestination) {
  Tensor* dst = make(LOOM_TYPE_F16, {8, 20, 2}, "kv");
  Tensor* rows = make(LOOM_TYPE_F32, {8, 3, 2}, "rows");
  Tensor* idx = make(LOOM_TYPE_I64, {3, 2}, "idx");
  Tensor* r = must(op::set_rows(ctx_, dst, rows, idx));
  EXPECT_EQ(r->op, LOOM_OP_SET_ROWS);
  EXPECT_EQ(r->src[0], dst);
  EXPECT_EQ(r->src[1], rows);
  EXPECT_EQ(r->src[2], idx);
  EXPECT_EQ(r->view_src, dst);
  EXPECT_EQ(r->type, LOOM_TYPE_F16);
  EXPECT_EQ(shape(r), (Ne{8, 20, 2, 1}));
  EXPECT_TRUE(op::set_rows(ctx_, dst, rows, make(LOOM_TYPE_I32, {3, 2})).ok());
  EXPECT_TRUE(fails_with(op::set_rows(ctx_, dst, rows, make(LOOM_TYPE_F32, {3, 2}, "fi")), {"[op.set_rows]", "i32 or i64"}));
  EXPECT_TRUE(fails_with(op::set_rows(ctx_, dst, make(LOOM_TYPE_F32, {4, 3, 2}, "r4"), idx), {"[op.set_rows]", "r4"}));
  EXPECT_TRUE(fails_with(op::set_rows(ctx_, dst, rows, make(LOOM_TYPE_I32, {2, 2}, "i2")), {"[op.set_rows]", "i2"}));
  EXPECT_TRUE(fails_with(op::set_rows(ctx_, dst, make(LOOM_TYPE_F16, {8, 3, 2}), idx), {"[op.set_rows]", "f32"}));
  EXPECT_TRUE(fails_with(op::set_rows(ctx_, make(LOOM_TYPE_I32, {8, 20, 2}), rows, idx), {"[op.set_rows]", "dst"}));
}

TEST_F(Ops, ContSwigluArgmaxSumRows) {
  Tensor* a = make(LOOM_TYPE_F32, {6, 4, 3}, "a");
  Tensor* t = must(ctx_.transpose(a));
  Tensor* c = must(op::cont(ctx_, t));
  EXPECT_EQ(c->op, LOOM_OP_CONT);
  EXPECT_EQ(shape(c), (Ne{4, 6, 3, 1}));
  EXPECT_TRUE(c->is_contiguous());
  EXPECT_EQ(must(op::cont(ctx_, make(LOOM_TYPE_Q4_0, {32})))->type, LOOM_TYPE_Q4_0);

  Tensor* g = must(op::swiglu(ctx_, a, make(LOOM_TYPE_F16, {6, 4, 3})));
  EXPECT_EQ(g->op, LOOM_OP_SWIGLU);
  EXPECT_EQ(g->type, LOOM_TYPE_F32);
  EXPECT_TRUE(fails_with(op::swiglu(ctx_, a, make(LOOM_TYPE_F32, {6, 1, 3}, "u")), {"[op.swiglu]", "same shape"}));

  Tensor* am = must(op::argmax(ctx_, a));
  EXPECT_EQ(am->op, LOOM_OP_ARGMAX);
  EXPECT_EQ(am->type, LOOM_TYPE_I32);
  EXPECT_EQ(shape(am), (Ne{4, 3, 1, 1}));
  EXPECT_TRUE(fails_with(op::argmax(ctx_, make(LOOM_TYPE_F16, {4}, "h")), {"[op.argmax]", "f32"}));

  Tensor* s = must(op::sum_rows(ctx_, make(LOOM_TYPE_BF16, {6, 4, 3, 2})));
  EXPECT_EQ(s->op, LOOM_OP_SUM_ROWS);
  EXPECT_EQ(s->type, LOOM_TYPE_F32);
  EXPECT_EQ(shape(s), (Ne{1, 4, 3, 2}));
  EXPECT_TRUE(fails_with(op::sum_rows(ctx_, make(LOOM_TYPE_I32, {4}, "i")), {"[op.sum_rows]"}));
  EXPECT_TRUE(fails_with(op::cont(other_, a), {"[op.cont]", "another context"}));
}

TEST_F(Ops, AttentionShapesAndChecks) {
  Tensor* q = make(LOOM_TYPE_F32, {16, 8, 3}, "q");
  Tensor* k = make(LOOM_TYPE_F16, {16, 40, 2}, "k");
  Tensor* v = make(LOOM_TYPE_F16, {12, 40, 2}, "v");
  Tensor* vis = make(LOOM_TYPE_I32, {3}, "vis");
  Tensor* o = must(op::attention(ctx_, q, k, v, vis, 0.25f));
  EXPECT_EQ(o->op, LOOM_OP_ATTENTION);
  EXPECT_EQ(o->type, LOOM_TYPE_F32);
  EXPECT_EQ(shape(o), (Ne{12, 8, 3, 1}));
  EXPECT_EQ(o->param<float>(0), 0.25f);
  EXPECT_EQ(o->src[3], vis);
  EXPECT_TRUE(fails_with(op::attention(ctx_, q, k, v, make(LOOM_TYPE_I64, {3}, "v64"), 1.0f),
                         {"[op.attention]", "visible", "i32"}));
  EXPECT_TRUE(fails_with(op::attention(ctx_, q, k, v, make(LOOM_TYPE_I32, {2}, "v2"), 1.0f),
                         {"[op.attention]", "must be [3]"}));
  EXPECT_TRUE(fails_with(op::attention(ctx_, q, make(LOOM_TYPE_F32, {16, 40, 3}, "k3"),
                                       make(LOOM_TYPE_F32, {12, 40, 3}, "v3"), vis, 1.0f),
                         {"[op.attention]", "8 heads", "3"}));
  EXPECT_TRUE(fails_with(op::attention(ctx_, q, k, make(LOOM_TYPE_F32, {12, 39, 2}, "v39"), vis, 1.0f),
                         {"[op.attention]", "[Dv, 40, 2]"}));
  EXPECT_TRUE(fails_with(op::attention(ctx_, q, make(LOOM_TYPE_F32, {15, 40, 2}, "k15"), v, vis, 1.0f),
                         {"[op.attention]", "[D, H, T]"}));
  EXPECT_TRUE(fails_with(op::attention(ctx_, q, k, v, vis, std::numeric_limits<float>::infinity()), {"[op.attention]", "scale"}));
  EXPECT_TRUE(fails_with(op::attention(ctx_, q, k, v, nullptr, 1.0f), {"[op.attention]", "visible", "null"}));
}

TEST_F(Ops, SparseProductsCheckShapesTypesAndThreshold) {
  Tensor* a = ctx_.new_tensor(LOOM_TYPE_Q8_0, {64, 10}, "a").value();  // [K, M]
  Tensor* x = ctx_.new_tensor(LOOM_TYPE_F32, {64, 3}, "x").value();
  Tensor* s = ctx_.new_tensor(LOOM_TYPE_F32, {10, 3}, "s").value();
  Tensor* rows = op::mul_mat_sparse_rows(ctx_, a, x, s, 0.0f).value();
  EXPECT_EQ(rows->op, LOOM_OP_MUL_MAT_SPARSE_ROWS);
  EXPECT_EQ(rows->type, LOOM_TYPE_F32);
  EXPECT_EQ(rows->ne[0], 10);
  EXPECT_EQ(rows->ne[1], 3);
  Tensor* w = ctx_.new_tensor(LOOM_TYPE_Q4_0, {64, 10}, "w").value();  // [M, K]: 10 neurons of 64 outputs
  Tensor* h = ctx_.new_tensor(LOOM_TYPE_F32, {10, 3}, "h").value();
  Tensor* cols = op::mul_mat_sparse_cols(ctx_, w, h, s, 0.5f).value();
  EXPECT_EQ(cols->op, LOOM_OP_MUL_MAT_SPARSE_COLS);
  EXPECT_EQ(cols->ne[0], 64);
  EXPECT_EQ(cols->ne[1], 3);
  Tensor* s_bad = ctx_.new_tensor(LOOM_TYPE_F32, {9, 3}, "s_bad").value();
  EXPECT_TRUE(fails_with(op::mul_mat_sparse_rows(ctx_, a, x, s_bad, 0.0f), {"[op.mul_mat_sparse_rows]", "scores"}));
  EXPECT_TRUE(fails_with(op::mul_mat_sparse_cols(ctx_, w, x, s, 0.0f), {"[op.mul_mat_sparse_cols]", "do not match"}));
  EXPECT_TRUE(fails_with(op::mul_mat_sparse_rows(ctx_, a, x, s, std::numeric_limits<float>::quiet_NaN()),
                         {"threshold", "finite"}));
  Tensor* xi = ctx_.new_tensor(LOOM_TYPE_I32, {64, 3}, "xi").value();
  EXPECT_TRUE(fails_with(op::mul_mat_sparse_rows(ctx_, a, xi, s, 0.0f), {"x", "must be f32"}));
  Tensor* x3 = ctx_.new_tensor(LOOM_TYPE_F32, {64, 3, 2}, "x3").value();
  EXPECT_TRUE(fails_with(op::mul_mat_sparse_rows(ctx_, a, x3, s, 0.0f), {"2-D"}));
  EXPECT_TRUE(fails_with(op::mul_mat_sparse_rows(ctx_, a, x, nullptr, 0.0f), {"scores", "null"}));
}

TEST_F(Ops, InplaceSet) {
  for (int op : {LOOM_OP_ADD, LOOM_OP_SUB, LOOM_OP_MUL, LOOM_OP_DIV, LOOM_OP_SCALE, LOOM_OP_SILU,
                 LOOM_OP_GELU, LOOM_OP_RELU, LOOM_OP_SWIGLU, LOOM_OP_SOFT_MAX, LOOM_OP_RMS_NORM,
                 LOOM_OP_NORM, LOOM_OP_ROPE}) {
    EXPECT_TRUE(op::op_can_be_inplace(op)) << op;
  }
  const int32_t never[] = {LOOM_OP_NONE,   LOOM_OP_RESHAPE,  LOOM_OP_VIEW,    LOOM_OP_PERMUTE,
                           LOOM_OP_TRANSPOSE, LOOM_OP_GET_ROWS, LOOM_OP_MUL_MAT, LOOM_OP_CPY,
                           LOOM_OP_CONT,   LOOM_OP_SET_ROWS, LOOM_OP_ARGMAX,  LOOM_OP_SUM_ROWS,
                           LOOM_OP_ATTENTION, LOOM_OP_MUL_MAT_SPARSE_ROWS, LOOM_OP_MUL_MAT_SPARSE_COLS,
                           LOOM_OP_COUNT, -1};
  for (int32_t op : never) {
    EXPECT_FALSE(op::op_can_be_inplace(op)) << op;
  }
}

// One op table: the builders and the rules plugins check (common/op_check.h)
// agree. ROPE with n_dims 0 was accepted by one and refused by the other.
TEST_F(Ops, BuildersAndTheOpTableAgree) {
  Tensor* a = make(LOOM_TYPE_F32, {16, 4, 5}, "q");
  Tensor* pos = make(LOOM_TYPE_I32, {5}, "pos");
  EXPECT_TRUE(fails_with(op::rope(ctx_, a, pos, 0, 0, 1e4f, 1.0f), {"[op.rope]", "n_dims 0"}));
  Tensor* r = must(op::rope(ctx_, a, pos, 8, 0, 1e4f, 1.0f));
  EXPECT_EQ(common::check_node(r), nullptr);
  r->set_param<int32_t>(0, 0);  // the same node with n_dims 0, made by hand
  ASSERT_NE(common::check_node(r), nullptr);
  EXPECT_STREQ(common::check_node(r), "n_dims");
  // Every row: a name, the sources the builders give, the facts the host reads.
  for (int32_t op = 0; op < LOOM_OP_COUNT; ++op) {
    const common::OpFacts& f = common::op_facts(op);
    EXPECT_STRNE(f.name, "INVALID") << op;
    EXPECT_STREQ(op_name(op), f.name);
    EXPECT_EQ(common::is_view_op(op), f.view) << f.name;
    EXPECT_EQ(op::op_can_be_inplace(op), f.inplace) << f.name;
    EXPECT_EQ(f.rule == nullptr, op == LOOM_OP_NONE || f.view) << f.name;
    EXPECT_FALSE(f.view && f.inplace) << f.name;
  }
  EXPECT_STREQ(common::op_facts(LOOM_OP_COUNT).name, "INVALID");
  EXPECT_STREQ(common::op_facts(-1).name, "INVALID");
  // Built nodes carry as many sources as their row says.
  Tensor* m = must(op::mul_mat(ctx_, make(LOOM_TYPE_F32, {16, 3}, "w"), make(LOOM_TYPE_F32, {16, 2}, "x")));
  EXPECT_EQ(common::op_facts(m->op).n_src, 2);
  EXPECT_NE(m->src[1], nullptr);
}

}  // namespace
}  // namespace loom
