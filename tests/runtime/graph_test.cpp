// Graph building: topological order, leafs vs nodes, cycles, contexts,
// fingerprints and the ABI view.
#include <gtest/gtest.h>

#include <algorithm>
#include <unordered_map>

#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "runtime_test_util.hpp"

namespace loom {
namespace {

using test::fails_with;
using test::must;

// Every source and view base of a node appears earlier in the order.
void expect_topological(const Graph& g) {
  std::unordered_map<const loom_tensor_t*, size_t> pos;
  for (const Tensor* l : g.leafs()) pos[l] = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) pos[g.nodes()[i]] = i + 1;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Tensor* n = g.nodes()[i];
    for (int s = 0; s < LOOM_MAX_SRC; ++s) {
      if (!n->src[s]) continue;
      ASSERT_TRUE(pos.count(n->src[s])) << n->name << " src " << s << " not in graph";
      EXPECT_LT(pos[n->src[s]], i + 1) << n->name << " before its source " << n->src[s]->name;
    }
    if (n->view_src) {
      ASSERT_TRUE(pos.count(n->view_src));
      EXPECT_LT(pos[n->view_src], i + 1);
    }
  }
}

TEST(Graph, DiamondOrderLeafsAndNodes) {
  Context ctx;
  Tensor* x = must(ctx.new_tensor(LOOM_TYPE_F32, {4}, "x"));
  Tensor* l = must(op::relu(ctx, x));
  Tensor* r = must(op::silu(ctx, x));
  Tensor* y = must(op::add(ctx, l, r));
  Graph g = must(Graph::build({y}));
  ASSERT_EQ(g.leafs().size(), 1u);
  EXPECT_EQ(g.leafs()[0], x);
  ASSERT_EQ(g.nodes().size(), 3u);
  EXPECT_EQ(g.nodes()[0], l);  // DFS visits src[0] first
  EXPECT_EQ(g.nodes()[1], r);
  EXPECT_EQ(g.nodes()[2], y);
  EXPECT_EQ(g.outputs().size(), 1u);
  EXPECT_TRUE(y->flags & LOOM_TENSOR_FLAG_OUTPUT);
  EXPECT_FALSE(l->flags & LOOM_TENSOR_FLAG_OUTPUT);
  EXPECT_EQ(g.context(), &ctx);
  expect_topological(g);

  loom_graph_t abi = g.as_abi();
  EXPECT_EQ(abi.struct_size, sizeof(loom_graph_t));
  ASSERT_EQ(abi.n_nodes, 3);
  EXPECT_EQ(abi.nodes[2], y);
  EXPECT_EQ(abi.fingerprint, g.fingerprint());
}

TEST(Graph, DeeperDagWithViewsAndSharedOutputs) {
  Context ctx;
  Tensor* w = must(ctx.new_tensor(LOOM_TYPE_F32, {8, 8}, "w"));
  Tensor* x = must(ctx.new_tensor(LOOM_TYPE_F32, {8, 4}, "x"));
  Tensor* pos = must(ctx.new_tensor(LOOM_TYPE_I32, {4}, "pos"));
  Tensor* h = must(op::mul_mat(ctx, w, x));            // [8, 4]
  Tensor* n = must(op::rms_norm(ctx, h, 1e-5f));
  Tensor* r = must(ctx.reshape(n, {4, 2, 4}));         // [4, 2, 4] view
  Tensor* ro = must(op::rope(ctx, r, pos, 4, 0, 1e4f, 1.0f));
  Tensor* t = must(ctx.transpose(must(ctx.reshape(ro, {8, 4}))));
  Tensor* c = must(op::cont(ctx, t));
  Tensor* m = must(op::mul_mat(ctx, c, must(op::scale(ctx, c, 2.0f))));
  Tensor* out2 = must(op::sum_rows(ctx, n));
  Graph g = must(Graph::build({m, out2, m}));  // duplicates collapse
  EXPECT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.leafs().size(), 3u);
  EXPECT_EQ(g.leafs()[0], w);  // first-use order
  EXPECT_EQ(g.leafs()[1], x);
  EXPECT_EQ(g.leafs()[2], pos);
  expect_topological(g);
  // Views are nodes; every tensor appears once.
  EXPECT_NE(std::find(g.nodes().begin(), g.nodes().end(), r), g.nodes().end());
  EXPECT_EQ(g.nodes().size(), 10u);
  EXPECT_EQ(g.nodes().back(), out2);
}

TEST(Graph, HandMadeCycleIsAStatus) {
  Context ctx;
  Tensor* x = must(ctx.new_tensor(LOOM_TYPE_F32, {4}, "x"));
  Tensor* a = must(op::relu(ctx, x));
  a->set_name("a");
  Tensor* b = must(op::silu(ctx, a));
  b->set_name("b");
  Tensor* c = must(op::add(ctx, b, x));
  c->set_name("c");
  a->src[0] = c;  // a -> c -> b -> a
  auto r = Graph::build({c});
  EXPECT_TRUE(fails_with(r, {"[graph.build] cycle", "'a'", "'b'", "'c'"}));
  // Self loop.
  Tensor* s = must(op::relu(ctx, x));
  s->set_name("self");
  s->src[0] = s;
  EXPECT_TRUE(fails_with(Graph::build({s}), {"cycle", "'self'"}));
}

TEST(Graph, BadOutputsAndMixedContexts) {
  EXPECT_TRUE(fails_with(Graph::build({}), {"[graph.build]", "no outputs"}));
  Context c1, c2;
  Tensor* a = must(c1.new_tensor(LOOM_TYPE_F32, {4}, "a"));
  EXPECT_TRUE(fails_with(Graph::build({a, nullptr}), {"[graph.build]", "output 1 is null"}));
  Tensor* b = must(c2.new_tensor(LOOM_TYPE_F32, {4}, "b_other"));
  Tensor* y = must(op::relu(c1, a));
  y->src[0] = b;  // wired across contexts by hand
  EXPECT_TRUE(fails_with(Graph::build({y}), {"[graph.build]", "b_other", "another context"}));
  EXPECT_TRUE(fails_with(Graph::build({a, b}), {"another context"}));
}

// The same structure built in a fresh context, with knobs to vary it.
struct Built {
  Context ctx;
  Tensor* out = nullptr;
};
std::unique_ptr<Built> build_mlp(int64_t hidden, float eps, bool transposed = false) {
  auto b = std::make_unique<Built>();
  Context& c = b->ctx;
  Tensor* w = must(c.new_tensor(LOOM_TYPE_Q8_0, {32, hidden}, "w"));
  Tensor* x = must(c.new_tensor(LOOM_TYPE_F32, {32, 3}, "x"));
  Tensor* h = must(op::mul_mat(c, w, x));
  Tensor* n = must(op::rms_norm(c, h, eps));
  if (transposed) n = must(op::cont(c, must(c.transpose(n))));
  b->out = must(op::silu(c, n));
  return b;
}

TEST(Graph, FingerprintFollowsStructureNotIdentity) {
  auto b1 = build_mlp(16, 1e-5f);
  auto b2 = build_mlp(16, 1e-5f);
  Graph ga = must(Graph::build({b1->out}));
  Graph gb = must(Graph::build({b2->out}));
  EXPECT_EQ(ga.fingerprint(), gb.fingerprint());
  EXPECT_EQ(ga.fingerprint(), ga.fingerprint());
  auto b3 = build_mlp(24, 1e-5f);  // a shape changes
  EXPECT_NE(ga.fingerprint(), must(Graph::build({b3->out})).fingerprint());
  auto b4 = build_mlp(16, 1e-6f);  // a param changes
  EXPECT_NE(ga.fingerprint(), must(Graph::build({b4->out})).fingerprint());
  auto b5 = build_mlp(16, 1e-5f, true);  // an extra view + node
  EXPECT_NE(ga.fingerprint(), must(Graph::build({b5->out})).fingerprint());
  // Where a leaf lives is part of the structure.
  alignas(16) static char memory[1024];
  b2->ctx.find("w")->data = memory;
  EXPECT_NE(ga.fingerprint(), gb.fingerprint());
}

TEST(Graph, FingerprintSeesSourceWiring) {
  // add(x, y) vs add(y, x) with x, y of equal shape: only the indices differ.
  auto make = [](bool swap) {
    auto b = std::make_unique<Built>();
    Tensor* x = must(b->ctx.new_tensor(LOOM_TYPE_F32, {4}, "x"));
    Tensor* y = must(b->ctx.new_tensor(LOOM_TYPE_F32, {4}, "y"));
    Tensor* rx = must(op::relu(b->ctx, x));
    b->out = swap ? must(op::add(b->ctx, y, rx)) : must(op::add(b->ctx, rx, y));
    return b;
  };
  auto p = make(false);
  auto q = make(true);
  EXPECT_NE(must(Graph::build({p->out})).fingerprint(), must(Graph::build({q->out})).fingerprint());
}

}  // namespace
}  // namespace loom
