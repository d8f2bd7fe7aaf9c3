// Context, tensors and views: shapes, strides, contiguity, offsets, and every
// bad input returning a status.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "loom/runtime/tensor.hpp"
#include "loom/runtime/types.hpp"
#include "runtime_test_util.hpp"

namespace loom {
namespace {

using test::fails_with;
using test::must;

TEST(Tensor, DenseShapeAndStrides) {
  Context ctx;
  Tensor* t = must(ctx.new_tensor(LOOM_TYPE_F32, {4, 3, 2}, "x"));
  EXPECT_EQ(t->ne[0], 4);
  EXPECT_EQ(t->ne[1], 3);
  EXPECT_EQ(t->ne[2], 2);
  EXPECT_EQ(t->ne[3], 1);
  EXPECT_EQ(t->nb[0], 4u);
  EXPECT_EQ(t->nb[1], 16u);
  EXPECT_EQ(t->nb[2], 48u);
  EXPECT_EQ(t->nb[3], 96u);
  EXPECT_EQ(t->nelements(), 24);
  EXPECT_EQ(t->nrows(), 6);
  EXPECT_EQ(t->nbytes(), 96u);
  EXPECT_TRUE(t->is_contiguous());
  EXPECT_FALSE(t->is_view());
  EXPECT_EQ(t->op, LOOM_OP_NONE);
  EXPECT_EQ(t->data, nullptr);
  EXPECT_EQ(t->struct_size, sizeof(loom_tensor_t));
  EXPECT_EQ(t->ctx, &ctx);
  EXPECT_TRUE(ctx.owns(t));
  EXPECT_EQ(t->describe(), "x f32 [4, 3, 2, 1]");
  EXPECT_EQ(ctx.find("x"), t);
  EXPECT_EQ(ctx.find("nope"), nullptr);
  EXPECT_EQ(ctx.size(), 1u);
}

TEST(Tensor, QuantizedStridesCountBlocks) {
  Context ctx;
  Tensor* q8 = must(ctx.new_tensor(LOOM_TYPE_Q8_0, {64, 3}));
  EXPECT_EQ(q8->nb[0], 34u);
  EXPECT_EQ(q8->nb[1], 68u);
  EXPECT_EQ(q8->nbytes(), 204u);
  EXPECT_TRUE(q8->is_contiguous());
  Tensor* q4 = must(ctx.new_tensor(LOOM_TYPE_Q4_0, {32, 2, 2}));
  EXPECT_EQ(q4->nb[1], 18u);
  EXPECT_EQ(q4->nbytes(), 72u);
  Tensor* f16 = must(ctx.new_tensor(LOOM_TYPE_F16, {5}));
  EXPECT_EQ(f16->nbytes(), 10u);
  Tensor* i64 = must(ctx.new_tensor(LOOM_TYPE_I64, {3, 1, 1, 2}));
  EXPECT_EQ(i64->nb[3], 24u);
}

TEST(Tensor, NameIsTruncatedNotOverflowed) {
  Context ctx;
  Tensor* t = must(ctx.new_tensor(LOOM_TYPE_F32, {1}));
  t->set_name(std::string(200, 'n'));
  EXPECT_EQ(std::string(t->name).size(), static_cast<size_t>(LOOM_MAX_NAME - 1));
  t->set_name("");
  EXPECT_EQ(t->describe(), "(unnamed) f32 [1, 1, 1, 1]");
}

TEST(Tensor, BadShapesAreStatuses) {
  Context ctx;
  EXPECT_TRUE(fails_with(ctx.new_tensor(LOOM_TYPE_F32, {4, 0}), {"[tensor.new]", "ne[1] = 0"}));
  EXPECT_TRUE(fails_with(ctx.new_tensor(LOOM_TYPE_F32, {-3}), {"[tensor.new]", "-3"}));
  EXPECT_TRUE(fails_with(ctx.new_tensor(LOOM_TYPE_F32, std::vector<int64_t>{}), {"[tensor.new]", "0 dims"}));
  EXPECT_TRUE(fails_with(ctx.new_tensor(LOOM_TYPE_F32, {1, 1, 1, 1, 1}), {"[tensor.new]", "5 dims"}));
  EXPECT_TRUE(fails_with(ctx.new_tensor(static_cast<loom_type_t>(4), {4}), {"[tensor.new]", "type id 4"}));
  EXPECT_TRUE(fails_with(ctx.new_tensor(static_cast<loom_type_t>(-1), {4}), {"[tensor.new]", "-1"}));
  EXPECT_TRUE(fails_with(ctx.new_tensor(LOOM_TYPE_COUNT, {4}), {"[tensor.new]", "31"}));
  EXPECT_TRUE(fails_with(ctx.new_tensor(LOOM_TYPE_Q8_0, {48}), {"[tensor.new]", "48", "32"}));
  EXPECT_TRUE(fails_with(ctx.new_tensor(LOOM_TYPE_Q4_0, {16, 2}), {"[tensor.new]", "16", "32"}));
  const int64_t big = int64_t{1} << 40;
  EXPECT_TRUE(fails_with(ctx.new_tensor(LOOM_TYPE_F32, {big, big}), {"[tensor.new]", "overflow"}));
  EXPECT_TRUE(fails_with(ctx.new_tensor(LOOM_TYPE_I64, {big, 1 << 21}), {"[tensor.new]", "bytes"}));
  EXPECT_EQ(ctx.size(), 0u);  // nothing half-made
}

TEST(Tensor, ReshapeSharesMemory) {
  Context ctx;
  Tensor* a = must(ctx.new_tensor(LOOM_TYPE_F32, {6, 4}, "a"));
  Tensor* r = must(ctx.reshape(a, {3, 8}));
  EXPECT_EQ(r->op, LOOM_OP_RESHAPE);
  EXPECT_EQ(r->view_src, a);
  EXPECT_EQ(r->src[0], a);
  EXPECT_EQ(r->view_offset, 0u);
  EXPECT_EQ(r->ne[0], 3);
  EXPECT_EQ(r->ne[1], 8);
  EXPECT_EQ(r->nb[1], 12u);
  EXPECT_TRUE(r->is_contiguous());
  EXPECT_EQ(r->base(), a);
  EXPECT_TRUE(fails_with(ctx.reshape(a, {5, 5}), {"[tensor.reshape]", "24 elements", "25"}));
  EXPECT_TRUE(fails_with(ctx.reshape(a, {0, 5}), {"[tensor.reshape]"}));
  Tensor* at = must(ctx.transpose(a));
  EXPECT_TRUE(fails_with(ctx.reshape(at, {24}), {"[tensor.reshape]", "not contiguous"}));
}

TEST(Tensor, TransposeAndPermuteStrides) {
  Context ctx;
  Tensor* a = must(ctx.new_tensor(LOOM_TYPE_F32, {2, 3, 4, 5}, "a"));
  Tensor* t = must(ctx.transpose(a));
  EXPECT_EQ(t->op, LOOM_OP_TRANSPOSE);
  EXPECT_EQ(t->ne[0], 3);
  EXPECT_EQ(t->ne[1], 2);
  EXPECT_EQ(t->nb[0], 8u);
  EXPECT_EQ(t->nb[1], 4u);
  EXPECT_FALSE(t->is_contiguous());
  EXPECT_EQ(t->nbytes(), a->nbytes());  // same span, different order

  // Source dim i goes to axes[i].
  Tensor* p = must(ctx.permute(a, 2, 0, 3, 1));
  EXPECT_EQ(p->op, LOOM_OP_PERMUTE);
  const int64_t want_ne[4] = {3, 5, 2, 4};
  const size_t want_nb[4] = {8, 96, 4, 24};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(p->ne[i], want_ne[i]) << i;
    EXPECT_EQ(p->nb[i], want_nb[i]) << i;
  }
  EXPECT_EQ(p->op_params[0], 2);
  EXPECT_EQ(p->op_params[3], 1);
  EXPECT_EQ(p->nbytes(), a->nbytes());
  // Identity permutation stays contiguous.
  EXPECT_TRUE(must(ctx.permute(a, 0, 1, 2, 3))->is_contiguous());

  EXPECT_TRUE(fails_with(ctx.permute(a, 0, 0, 1, 2), {"[tensor.permute]", "not a permutation"}));
  EXPECT_TRUE(fails_with(ctx.permute(a, 0, 1, 2, 4), {"[tensor.permute]", "4"}));
  EXPECT_TRUE(fails_with(ctx.permute(a, -1, 1, 2, 0), {"[tensor.permute]"}));
  Tensor* q = must(ctx.new_tensor(LOOM_TYPE_Q8_0, {32, 2}, "q"));
  EXPECT_TRUE(fails_with(ctx.transpose(q), {"[tensor.transpose]", "quantized"}));
  EXPECT_TRUE(fails_with(ctx.permute(q, 1, 0, 2, 3), {"[tensor.permute]", "quantized"}));
  EXPECT_TRUE(ctx.permute(q, 0, 2, 1, 3).ok());
}

TEST(Tensor, ViewOffsetsBoundsAndChains) {
  Context ctx;
  Tensor* a = must(ctx.new_tensor(LOOM_TYPE_F32, {8, 6}, "a"));  // 192 bytes
  // Rows 2..4, columns 1..4 (4 wide): nb1 = 32, offset = 2*32 + 4.
  Tensor* v = must(ctx.view(a, {4, 3}, {32}, 68));
  EXPECT_EQ(v->op, LOOM_OP_VIEW);
  EXPECT_EQ(v->view_src, a);
  EXPECT_EQ(v->view_offset, 68u);
  EXPECT_EQ(v->nb[0], 4u);
  EXPECT_EQ(v->nb[1], 32u);
  EXPECT_EQ(v->nbytes(), 2u * 32 + 16);
  EXPECT_FALSE(v->is_contiguous());
  // A view of the view: offsets accumulate, view_src is still the base.
  Tensor* vv = must(ctx.view(v, {2}, {}, 8));
  EXPECT_EQ(vv->view_src, a);
  EXPECT_EQ(vv->src[0], v);
  EXPECT_EQ(vv->view_offset, 76u);
  EXPECT_TRUE(vv->is_contiguous());
  Tensor* r = must(ctx.reshape(vv, {1, 2}));
  Tensor* t = must(ctx.transpose(r));
  EXPECT_EQ(t->view_src, a);
  EXPECT_EQ(t->view_offset, 76u);
  EXPECT_EQ(t->base(), a);
  // Three strides accepted for fewer dims (extra ones belong to unit dims).
  EXPECT_TRUE(ctx.view(a, {8, 6}, {32, 192, 192}, 0).ok());

  // Out of bounds: the last byte must lie in a.
  EXPECT_TRUE(ctx.view(a, {8, 6}, {32}, 0).ok());
  EXPECT_TRUE(fails_with(ctx.view(a, {8, 6}, {32}, 4), {"[tensor.view]", "196", "192 bytes"}));
  EXPECT_TRUE(fails_with(ctx.view(a, {4, 5}, {48}, 0), {"[tensor.view]", "outside"}));
  EXPECT_TRUE(fails_with(ctx.view(a, {1}, {}, 1000), {"[tensor.view]", "1000"}));
  EXPECT_TRUE(fails_with(ctx.view(v, {4, 3}, {32}, 4), {"[tensor.view]", "outside"}));
  EXPECT_TRUE(fails_with(ctx.view(a, {4, 3, 2}, {32}, 0), {"[tensor.view]", "strides"}));
  EXPECT_TRUE(fails_with(ctx.view(a, {0}, {}, 0), {"[tensor.view]"}));
}

TEST(Tensor, ViewsDeriveDataFromBase) {
  Context ctx;
  alignas(16) static char memory[256];
  Tensor* a = must(ctx.new_tensor(LOOM_TYPE_F32, {8, 8}, "a"));
  a->data = memory;
  Tensor* v = must(ctx.view(a, {8}, {}, 64));
  EXPECT_EQ(v->data, memory + 64);
  Tensor* vv = must(ctx.view(v, {4}, {}, 16));
  EXPECT_EQ(vv->data, memory + 80);
  Tensor* b = must(ctx.new_tensor(LOOM_TYPE_F32, {8}, "b"));
  EXPECT_EQ(must(ctx.reshape(b, {2, 4}))->data, nullptr);
}

TEST(Tensor, ForeignAndNullSources) {
  Context c1, c2;
  Tensor* a = must(c1.new_tensor(LOOM_TYPE_F32, {4}, "a"));
  EXPECT_TRUE(fails_with(c2.reshape(a, {2, 2}), {"[tensor.reshape]", "another context"}));
  EXPECT_TRUE(fails_with(c2.view(a, {2}, {}, 0), {"[tensor.view]", "another context"}));
  EXPECT_TRUE(fails_with(c2.transpose(a), {"[tensor.transpose]"}));
  EXPECT_TRUE(fails_with(c2.permute(a, 0, 1, 2, 3), {"[tensor.permute]"}));
  EXPECT_TRUE(fails_with(c1.reshape(nullptr, {4}), {"[tensor.reshape]", "null"}));
  EXPECT_FALSE(c2.owns(a));
  EXPECT_FALSE(c1.owns(nullptr));
}

TEST(Tensor, NewNodeValidates) {
  Context c1, c2;
  Tensor* a = must(c1.new_tensor(LOOM_TYPE_F32, {4}, "a"));
  const int64_t ne[4] = {4, 1, 1, 1};
  Tensor* n = must(c1.new_node(LOOM_OP_ADD, LOOM_TYPE_F32, ne, {a, a}));
  EXPECT_EQ(n->op, LOOM_OP_ADD);
  EXPECT_EQ(n->src[1], a);
  EXPECT_STREQ(n->name, "add");
  EXPECT_TRUE(fails_with(c2.new_node(LOOM_OP_ADD, LOOM_TYPE_F32, ne, {a}), {"another context"}));
  EXPECT_TRUE(fails_with(c1.new_node(LOOM_OP_ADD, LOOM_TYPE_F32, ne, {nullptr}), {"null"}));
  EXPECT_TRUE(fails_with(c1.new_node(LOOM_OP_NONE, LOOM_TYPE_F32, ne, {}), {"op id 0"}));
  const std::string past_last = "op id " + std::to_string(LOOM_OP_COUNT);
  EXPECT_TRUE(fails_with(c1.new_node(LOOM_OP_COUNT, LOOM_TYPE_F32, ne, {}), {past_last.c_str()}));
  EXPECT_TRUE(fails_with(c1.new_node(LOOM_OP_ADD, LOOM_TYPE_F32, ne, {a, a, a, a, a}), {"5 sources"}));
  const int64_t bad[4] = {4, -1, 1, 1};
  EXPECT_TRUE(fails_with(c1.new_node(LOOM_OP_ADD, LOOM_TYPE_F32, bad, {a}), {"-1"}));
}

}  // namespace
}  // namespace loom
