// Context::checkpoint/rollback: a model keeps its weights in a context and
// builds a throw-away graph per step in the same one.
#include <gtest/gtest.h>

#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/runtime/tensor.hpp"
#include "runtime_test_util.hpp"

namespace loom {
namespace {

using test::must;

TEST(ContextRollback, DropsOnlyLaterTensorsAndKeepsAddresses) {
  Context ctx;
  Tensor* w = must(ctx.new_tensor(LOOM_TYPE_F32, {4, 3}, "w"));
  const size_t mark = ctx.checkpoint();
  EXPECT_EQ(mark, 1u);
  for (int step = 0; step < 3; ++step) {
    Tensor* x = must(ctx.new_tensor(LOOM_TYPE_F32, {4, 2}, "x"));
    Tensor* y = must(op::mul_mat(ctx, w, x));
    Graph g = must(Graph::build({y}));
    EXPECT_EQ(g.nodes().size(), 1u);
    EXPECT_EQ(ctx.size(), 3u);
    ctx.rollback(mark);
    EXPECT_EQ(ctx.size(), mark);
    EXPECT_EQ(ctx.at(0), w);  // the weight did not move
    EXPECT_EQ(ctx.find("x"), nullptr);
    EXPECT_EQ(ctx.find("w"), w);
  }
}

TEST(ContextRollback, MarkAboveSizeIsANoOp) {
  Context ctx;
  must(ctx.new_tensor(LOOM_TYPE_F32, {2}, "a"));
  ctx.rollback(5);
  EXPECT_EQ(ctx.size(), 1u);
  ctx.rollback(0);
  EXPECT_EQ(ctx.size(), 0u);
}

}  // namespace
}  // namespace loom
