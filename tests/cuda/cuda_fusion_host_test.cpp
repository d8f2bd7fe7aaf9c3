// The CUDA plugin's fusion rules (plugins/cuda/ops/fusion.h) on a machine
// without a GPU: which norm + MUL pairs and which MUL_MAT + ADD pairs (the
// ADD in the GEMV's store) run as one kernel, and the rounding
// the fused kernel applies to the norm's value (round_to, dequant.cuh)
// against a store and load through the type. The fused kernel's launches
// per decode step are counted through the fake runtime
// (fake_runtime/fake_runtime_test.sh); its results run on a GPU in the
// model tests (stories260K's text on cuda0).
#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <random>
#include <vector>

#include "loom/plugin.h"
#include "plugins/cuda/ops/dequant.cuh"
#include "plugins/cuda/ops/fusion.h"

namespace loom::cuda {
namespace {

// F32 tensors [n0, n1] at data (dense), with a name and an op.
struct Graph {
  alignas(16) std::vector<float> mem = std::vector<float>(1024);
  loom_tensor_t x{}, norm{}, w{}, mul{};

  static void dense(loom_tensor_t* t, void* data, int64_t n0, int64_t n1, int32_t op) {
    t->struct_size = sizeof *t;
    t->type = LOOM_TYPE_F32;
    t->op = op;
    t->data = data;
    t->ne[0] = n0, t->ne[1] = n1, t->ne[2] = 1, t->ne[3] = 1;
    t->nb[0] = 4, t->nb[1] = 4 * n0, t->nb[2] = t->nb[1] * n1, t->nb[3] = t->nb[2];
  }
  Graph() {
    dense(&x, &mem[0], 8, 3, LOOM_OP_NONE);
    dense(&norm, &mem[100], 8, 3, LOOM_OP_RMS_NORM);
    norm.src[0] = &x;
    dense(&w, &mem[200], 8, 1, LOOM_OP_NONE);
    dense(&mul, &mem[300], 8, 3, LOOM_OP_MUL);
    mul.src[0] = &norm;
    mul.src[1] = &w;
  }
};

TEST(CudaFusionHost, NormTimesWeightRunsAsOneKernel) {
  Graph g;
  EXPECT_EQ(fused_norm_mul(&g.norm, &g.mul), &g.mul);
  EXPECT_EQ(fused_weight(&g.norm, &g.mul), &g.w);
  EXPECT_TRUE(fused_writes_norm(&g.norm, &g.mul));
  g.norm.op = LOOM_OP_NORM;
  EXPECT_EQ(fused_norm_mul(&g.norm, &g.mul), &g.mul) << "NORM fuses too";
  // The weight first (w * norm), with w of the full shape.
  Graph h;
  Graph::dense(&h.w, &h.mem[200], 8, 3, LOOM_OP_NONE);
  h.mul.src[0] = &h.w;
  h.mul.src[1] = &h.norm;
  EXPECT_EQ(fused_norm_mul(&h.norm, &h.mul), &h.mul);
  EXPECT_EQ(fused_weight(&h.norm, &h.mul), &h.w);
}

TEST(CudaFusionHost, OtherPairsRunAsTwoKernels) {
  {
    Graph g;
    g.mul.op = LOOM_OP_ADD;
    EXPECT_EQ(fused_norm_mul(&g.norm, &g.mul), nullptr) << "not a MUL";
  }
  {
    Graph g;
    g.norm.op = LOOM_OP_SOFT_MAX;
    EXPECT_EQ(fused_norm_mul(&g.norm, &g.mul), nullptr) << "not a norm";
  }
  {
    Graph g;
    g.mul.src[1] = &g.norm;
    EXPECT_EQ(fused_norm_mul(&g.norm, &g.mul), nullptr) << "norm * norm";
  }
  {
    Graph g;
    g.mul.src[0] = &g.x;
    EXPECT_EQ(fused_norm_mul(&g.norm, &g.mul), nullptr) << "a MUL of something else";
  }
  {
    Graph g;
    Graph::dense(&g.w, &g.mem[200], 4, 1, LOOM_OP_NONE);
    EXPECT_EQ(fused_norm_mul(&g.norm, &g.mul), nullptr) << "w neither the row's length nor 1";
  }
  {
    Graph g;
    g.w.data = &g.mem[110];
    EXPECT_EQ(fused_norm_mul(&g.norm, &g.mul), nullptr) << "w overlaps the norm's result";
  }
  {
    Graph g;
    g.mul.data = &g.mem[104];
    EXPECT_EQ(fused_norm_mul(&g.norm, &g.mul), nullptr) << "the product overlaps the norm's result, shifted";
  }
  {
    Graph g;
    g.mul.data = &g.mem[4];
    EXPECT_EQ(fused_norm_mul(&g.norm, &g.mul), nullptr) << "the product overlaps the norm's input, shifted";
  }
  {
    Graph g;
    g.mul.data = g.w.data;  // w dies at the MUL: its memory may hold the product
    EXPECT_EQ(fused_norm_mul(&g.norm, &g.mul), nullptr) << "the product over w";
  }
  EXPECT_EQ(fused_norm_mul(nullptr, nullptr), nullptr);
}

TEST(CudaFusionHost, InPlaceProductSkipsTheNormsWrite) {
  Graph g;
  g.mul.data = g.norm.data;
  EXPECT_EQ(fused_norm_mul(&g.norm, &g.mul), &g.mul);
  EXPECT_FALSE(fused_writes_norm(&g.norm, &g.mul));
  Graph h;
  h.mul.data = h.x.data;  // the product over the norm's input, same layout
  EXPECT_EQ(fused_norm_mul(&h.norm, &h.mul), &h.mul);
  EXPECT_TRUE(fused_writes_norm(&h.norm, &h.mul));
}

// A decode product and the residual added to it: [4, 3] = A [8, 4]^T B [8, 3].
struct MulMatAdd {
  alignas(16) std::vector<float> mem = std::vector<float>(1024);
  loom_tensor_t a{}, b{}, mm{}, r{}, add{};
  MulMatAdd() {
    Graph::dense(&a, &mem[0], 8, 4, LOOM_OP_NONE);
    Graph::dense(&b, &mem[100], 8, 3, LOOM_OP_NONE);
    Graph::dense(&mm, &mem[200], 4, 3, LOOM_OP_MUL_MAT);
    mm.src[0] = &a;
    mm.src[1] = &b;
    Graph::dense(&r, &mem[300], 4, 3, LOOM_OP_NONE);
    Graph::dense(&add, &mem[400], 4, 3, LOOM_OP_ADD);
    add.src[0] = &mm;
    add.src[1] = &r;
  }
};

TEST(CudaFusionHost, ResidualAddRunsInTheProductsStore) {
  MulMatAdd g;
  EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), &g.add);
  EXPECT_EQ(fused_residual(&g.mm, &g.add), &g.r);
  // The residual first, and the sum written over the residual or over the
  // product (the same tensor, in place).
  g.add.src[0] = &g.r;
  g.add.src[1] = &g.mm;
  EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), &g.add);
  EXPECT_EQ(fused_residual(&g.mm, &g.add), &g.r);
  g.add.data = g.r.data;
  EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), &g.add) << "sum over the residual";
  g.add.data = g.mm.data;
  EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), &g.add) << "sum over the product";
}

TEST(CudaFusionHost, OtherProductsAndAddsRunAsTwoKernels) {
  {
    MulMatAdd g;
    g.add.op = LOOM_OP_MUL;
    EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), nullptr) << "not an ADD";
  }
  {
    MulMatAdd g;
    g.mm.op = LOOM_OP_MUL;
    EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), nullptr) << "not a MUL_MAT";
  }
  {
    MulMatAdd g;
    g.add.src[1] = &g.mm;
    EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), nullptr) << "mm + mm";
  }
  {
    MulMatAdd g;
    g.add.src[0] = &g.b;
    EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), nullptr) << "an ADD of something else";
  }
  {
    MulMatAdd g;
    Graph::dense(&g.r, &g.mem[300], 4, 1, LOOM_OP_NONE);
    EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), nullptr) << "a broadcast residual";
  }
  {
    MulMatAdd g;
    g.r.type = LOOM_TYPE_F16;
    EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), nullptr) << "an F16 residual";
  }
  {
    MulMatAdd g;
    g.r.data = &g.mem[204];  // inside the product
    EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), nullptr) << "the residual overlaps the product";
  }
  {
    MulMatAdd g;
    g.add.data = &g.mem[302];  // half over the residual
    EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), nullptr) << "the sum half over the residual";
  }
  {
    MulMatAdd g;
    g.add.data = &g.mem[201];
    EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), nullptr) << "the sum half over the product";
  }
  // The allocator gives the sum memory A or B held (both die at the
  // product): fused, blocks would write the sum while others still read
  // them (found by the emulated plugin: MatMulTest.ResidualAddAfterADecodeProduct).
  {
    MulMatAdd g;
    g.add.data = g.a.data;
    EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), nullptr) << "the sum over A";
  }
  {
    MulMatAdd g;
    g.add.data = &g.mem[104];
    EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add), nullptr) << "the sum over B, read by the kernel";
    EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add, false), &g.add) << "the sum over B, read before the kernel";
    g.add.data = g.a.data;
    EXPECT_EQ(fused_mul_mat_add(&g.mm, &g.add, false), nullptr) << "the sum over A, B read before";
  }
  EXPECT_EQ(fused_mul_mat_add(nullptr, nullptr), nullptr);
}

// Three decode products over one B, with one node between the first two
// (as a RoPE lies between Q and K): [rows, 2] = A [8, rows]^T B [8, 2].
struct OneB {
  alignas(16) std::vector<float> mem = std::vector<float>(2048);
  loom_tensor_t b{}, a1{}, a2{}, a3{}, p1{}, mid{}, p2{}, p3{};
  std::vector<loom_tensor_t*> order;
  loom_graph_t graph{};
  OneB() {
    Graph::dense(&b, &mem[0], 8, 2, LOOM_OP_NONE);
    Graph::dense(&a1, &mem[100], 8, 6, LOOM_OP_NONE);
    Graph::dense(&a2, &mem[200], 8, 4, LOOM_OP_NONE);
    Graph::dense(&a3, &mem[300], 8, 5, LOOM_OP_NONE);
    Graph::dense(&p1, &mem[400], 6, 2, LOOM_OP_MUL_MAT);
    p1.src[0] = &a1, p1.src[1] = &b;
    Graph::dense(&mid, &mem[500], 6, 2, LOOM_OP_SILU);
    mid.src[0] = &p1;
    Graph::dense(&p2, &mem[600], 4, 2, LOOM_OP_MUL_MAT);
    p2.src[0] = &a2, p2.src[1] = &b;
    Graph::dense(&p3, &mem[700], 5, 2, LOOM_OP_MUL_MAT);
    p3.src[0] = &a3, p3.src[1] = &b;
    order = {&p1, &mid, &p2, &p3};
    graph.struct_size = sizeof graph;
    graph.n_nodes = static_cast<int32_t>(order.size());
    graph.nodes = order.data();
  }
};

TEST(CudaFusionHost, ProductsOfOneBRunInOneGrid) {
  OneB g;
  EXPECT_TRUE(gemv_peer(&g.graph, 0, 2)) << "past a node that touches neither";
  EXPECT_TRUE(gemv_peer(&g.graph, 0, 3));
  EXPECT_TRUE(gemv_peer(&g.graph, 2, 3)) << "back to back";
  EXPECT_FALSE(gemv_peer(&g.graph, 0, 1)) << "not a MUL_MAT";
  EXPECT_FALSE(gemv_peer(&g.graph, 2, 0)) << "backwards";
  EXPECT_FALSE(gemv_peer(&g.graph, 0, 4)) << "past the end";
}

TEST(CudaFusionHost, ProductsOfOneBKeepTheirPlacesWhenTheyMust) {
  {
    // The second product's result reuses the memory the node between
    // still reads (the first product's result, read by the SILU).
    OneB g;
    g.p2.data = g.p1.data;
    EXPECT_FALSE(gemv_peer(&g.graph, 0, 2)) << "would overwrite what the node between reads";
  }
  {
    OneB g;
    g.p2.data = g.mid.data;  // where the node between writes
    EXPECT_FALSE(gemv_peer(&g.graph, 0, 2));
  }
  {
    OneB g;
    g.mid.data = g.b.data;  // the node between writes B
    g.mid.src[0] = &g.a1;
    EXPECT_FALSE(gemv_peer(&g.graph, 0, 2));
  }
  {
    OneB g;
    g.p2.data = g.a1.data;  // the first product's A, dead after it
    EXPECT_FALSE(gemv_peer(&g.graph, 0, 2)) << "the result over the first product's A";
  }
  {
    OneB g;
    g.a2.type = LOOM_TYPE_F16;
    EXPECT_FALSE(gemv_peer(&g.graph, 0, 2)) << "another A type";
  }
  {
    OneB g;
    loom_tensor_t other{};
    Graph::dense(&other, &g.mem[800], 8, 2, LOOM_OP_NONE);
    g.p2.src[1] = &other;
    EXPECT_FALSE(gemv_peer(&g.graph, 0, 2)) << "another B";
  }
  {
    OneB g;
    g.a2.ne[2] = 2;  // a stack of matrices
    EXPECT_FALSE(gemv_peer(&g.graph, 0, 2));
  }
  EXPECT_FALSE(gemv_peer(nullptr, 0, 1));
}

// The llama graph's K and V stores: ROPE [8, 2 heads, 3 tokens] permuted to
// [8, 3, 2] and stored into an F16 cache [8, 5 rows, 2 heads] at idx [3, 2];
// V [8, 2, 3] permuted likewise into its own cache.
struct RopeStore {
  alignas(16) std::vector<float> mem = std::vector<float>(2048);
  loom_tensor_t a{}, pos{}, rope{}, kview{}, idx{}, kcache{}, setk{}, v{}, vview{}, vcache{}, setv{};
  static void permuted(loom_tensor_t* view, const loom_tensor_t& t) {  // dims 1 and 2 swapped
    *view = t;
    view->op = LOOM_OP_PERMUTE;
    std::swap(view->ne[1], view->ne[2]);
    std::swap(view->nb[1], view->nb[2]);
  }
  static void cache(loom_tensor_t* c, void* data) {
    c->struct_size = sizeof *c;
    c->type = LOOM_TYPE_F16;
    c->data = data;
    c->ne[0] = 8, c->ne[1] = 5, c->ne[2] = 2, c->ne[3] = 1;
    c->nb[0] = 2, c->nb[1] = 16, c->nb[2] = 80, c->nb[3] = 160;
  }
  RopeStore() {
    Graph::dense(&a, &mem[0], 8, 2, LOOM_OP_NONE);
    a.ne[1] = 2, a.ne[2] = 3, a.nb[2] = a.nb[1] * 2, a.nb[3] = a.nb[2] * 3;
    Graph::dense(&pos, &mem[100], 3, 1, LOOM_OP_NONE);
    pos.type = LOOM_TYPE_I32;
    rope = a;
    rope.data = &mem[200];
    rope.op = LOOM_OP_ROPE;
    rope.src[0] = &a, rope.src[1] = &pos;
    permuted(&kview, rope);
    kview.src[0] = &rope;
    Graph::dense(&idx, &mem[300], 3, 2, LOOM_OP_NONE);
    idx.type = LOOM_TYPE_I64, idx.nb[0] = 8, idx.nb[1] = 24, idx.nb[2] = idx.nb[3] = 48;
    cache(&kcache, &mem[400]);
    setk = kcache;
    setk.op = LOOM_OP_SET_ROWS;
    setk.src[0] = &kcache, setk.src[1] = &kview, setk.src[2] = &idx;
    v = a;
    v.data = &mem[600];
    permuted(&vview, v);
    vview.src[0] = &v;
    cache(&vcache, &mem[800]);
    setv = vcache;
    setv.op = LOOM_OP_SET_ROWS;
    setv.src[0] = &vcache, setv.src[1] = &vview, setv.src[2] = &idx;
  }
};

TEST(CudaFusionHost, RopeAndTheCacheStoresRunAsOneKernel) {
  RopeStore g;
  int perm[4];
  ASSERT_TRUE(fused_rope_set_rows(&g.rope, &g.setk, perm));
  EXPECT_EQ(perm[0], 0);
  EXPECT_EQ(perm[1], 2) << "the rows' dim 1 (tokens) is ROPE's dim 2";
  EXPECT_EQ(perm[2], 1);
  EXPECT_TRUE(fused_second_set_rows(&g.rope, &g.setk, &g.setv));
  g.setk.src[1] = &g.rope;  // ROPE's result itself as the rows
  g.kcache.ne[2] = 3, g.setk.ne[2] = 3;
  EXPECT_TRUE(fused_rope_set_rows(&g.rope, &g.setk, perm));
  EXPECT_EQ(perm[1], 1);
}

TEST(CudaFusionHost, RopeAndCacheStoresStayApartWhenTheyMust) {
  int perm[4];
  {
    RopeStore g;
    g.setk.type = LOOM_TYPE_Q8_0;
    EXPECT_FALSE(fused_rope_set_rows(&g.rope, &g.setk, perm)) << "a block cache";
  }
  {
    RopeStore g;
    g.kview.ne[1] = 2;  // part of ROPE's result
    EXPECT_FALSE(fused_rope_set_rows(&g.rope, &g.setk, perm));
  }
  {
    RopeStore g;
    g.kview.data = &g.mem[0];  // rows of another tensor
    EXPECT_FALSE(fused_rope_set_rows(&g.rope, &g.setk, perm));
  }
  {
    RopeStore g;
    std::swap(g.kview.ne[0], g.kview.ne[1]);  // rows across ROPE's pairs
    std::swap(g.kview.nb[0], g.kview.nb[1]);
    g.kview.ne[1] = 8, g.kview.ne[0] = 3;
    EXPECT_FALSE(fused_rope_set_rows(&g.rope, &g.setk, perm));
  }
  {
    RopeStore g;
    g.rope.type = LOOM_TYPE_F16;
    EXPECT_FALSE(fused_rope_set_rows(&g.rope, &g.setk, perm)) << "an F16 ROPE result";
  }
  {
    RopeStore g;
    g.setk.data = g.a.data;  // the cache over ROPE's input
    EXPECT_FALSE(fused_rope_set_rows(&g.rope, &g.setk, perm));
  }
  {
    RopeStore g;
    g.setk.op = LOOM_OP_GET_ROWS;
    EXPECT_FALSE(fused_rope_set_rows(&g.rope, &g.setk, perm));
  }
  {
    RopeStore g;
    loom_tensor_t other = g.idx;
    other.data = &g.mem[320];
    g.setv.src[2] = &other;
    EXPECT_FALSE(fused_second_set_rows(&g.rope, &g.setk, &g.setv)) << "other indices";
  }
  {
    RopeStore g;
    g.vview.data = g.rope.data;  // V's rows where ROPE writes
    EXPECT_FALSE(fused_second_set_rows(&g.rope, &g.setk, &g.setv));
  }
  {
    RopeStore g;
    g.setv.data = &g.mem[420];  // V's cache inside K's
    EXPECT_FALSE(fused_second_set_rows(&g.rope, &g.setk, &g.setv));
  }
  {
    RopeStore g;
    g.setv.data = g.a.data;  // V's cache over ROPE's input
    EXPECT_FALSE(fused_second_set_rows(&g.rope, &g.setk, &g.setv));
  }
}

// Q's ROPE [8, 4 heads, 3 tokens] beside K's and its stores.
TEST(CudaFusionHost, QsRopeRunsBesideKsWhenNothingOverlaps) {
  RopeStore g;
  loom_tensor_t qa = g.a, q = g.rope;
  qa.data = &g.mem[1000];
  qa.ne[1] = 4, qa.nb[2] = qa.nb[1] * 4, qa.nb[3] = qa.nb[2] * 3;
  q.ne[1] = 4, q.nb[2] = qa.nb[2], q.nb[3] = qa.nb[3];
  q.data = &g.mem[1200];
  q.src[0] = &qa;
  RopeRows rr;
  ASSERT_TRUE(fused_rope_set_rows(&g.rope, &g.setk, rr.perm));
  rr.set_k = &g.setk;
  rr.set_v = &g.setv;
  EXPECT_TRUE(fused_rope_beside(&q, &g.rope, rr));
  EXPECT_TRUE(fused_rope_beside(&q, &g.rope, RopeRows{})) << "the two ROPEs alone";
  loom_tensor_t q2 = q;
  q2.data = g.a.data;  // Q's result over K's input
  EXPECT_FALSE(fused_rope_beside(&q2, &g.rope, rr));
  q2 = q;
  q2.data = g.vview.data;  // Q's result over V's rows
  EXPECT_FALSE(fused_rope_beside(&q2, &g.rope, rr));
  q2 = q;
  q2.src[0] = &g.rope;  // Q reads what K's ROPE writes
  EXPECT_FALSE(fused_rope_beside(&q2, &g.rope, rr));
  loom_tensor_t qa2 = qa;
  qa2.data = g.setk.data;  // Q's input in K's cache
  q2 = q;
  q2.src[0] = &qa2;
  EXPECT_FALSE(fused_rope_beside(&q2, &g.rope, rr));
  EXPECT_FALSE(fused_rope_beside(&g.rope, &g.rope, rr)) << "one node twice";
  q2 = q;
  q2.op = LOOM_OP_MUL;
  EXPECT_FALSE(fused_rope_beside(&q2, &g.rope, rr));
}

TEST(CudaFusionHost, RoundToIsAStoreAndLoadThroughTheType) {
  std::mt19937 rng(2803);
  std::uniform_real_distribution<float> u(-70000.0f, 70000.0f);
  for (int32_t type : {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16}) {
    for (int i = 0; i < 20000; ++i) {
      const float v = i % 2 ? u(rng) : u(rng) * 1e-6f;
      alignas(4) uint8_t buf[4] = {};
      store_elem(type, buf, v);
      const float want = load_elem(type, buf);
      const float got = round_to(type, v);
      ASSERT_EQ(std::memcmp(&got, &want, 4), 0) << "type " << type << " v " << v;
    }
  }
}

}  // namespace
}  // namespace loom::cuda
