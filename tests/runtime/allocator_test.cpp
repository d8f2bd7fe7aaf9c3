// Graph allocator: liveness, in-place reuse, views keeping bases alive,
// alignment, peak accounting, checked on hand-made cases and on seeded
// random DAGs by an independent liveness model and a byte-tag simulation.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/runtime/allocator.hpp"
#include "loom/runtime/ops.hpp"
#include "runtime/status_abi.hpp"
#include "runtime_test_util.hpp"

namespace loom {
namespace {

using test::fails_with;
using test::must;

const Tensor* base_of(const loom_tensor_t* t) {
  return static_cast<const Tensor*>(t->view_src ? t->view_src : t);
}

// ------------------------------------------------------------ the checker
// Lifetimes computed from the graph alone: a planned tensor lives from its
// step (-1 for leafs) to the last step that reads it or any view of it
// (INT_MAX when it or a view of it is an output).
struct Lifetimes {
  std::unordered_map<const Tensor*, int> first, last;
};

Lifetimes lifetimes(const Graph& g, const AllocPlan& p) {
  Lifetimes lt;
  std::unordered_map<const Tensor*, int> step;
  for (const Tensor* l : g.leafs()) step[l] = -1;
  for (size_t i = 0; i < g.nodes().size(); ++i) step[g.nodes()[i]] = static_cast<int>(i);
  for (const auto& kv : p.offsets) {
    lt.first[kv.first] = step.at(kv.first);
    lt.last[kv.first] = step.at(kv.first);
  }
  auto touch = [&](const Tensor* b, int s) {
    auto it = lt.last.find(b);
    if (it != lt.last.end()) it->second = std::max(it->second, s);
  };
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Tensor* n = g.nodes()[i];
    for (int s = 0; s < LOOM_MAX_SRC; ++s) {
      if (n->src[s]) touch(base_of(n->src[s]), static_cast<int>(i));
    }
  }
  auto pin = [&](const Tensor* t) {
    if (t->flags & LOOM_TENSOR_FLAG_OUTPUT) touch(base_of(t), INT_MAX);
  };
  for (const Tensor* t : g.leafs()) pin(t);
  for (const Tensor* t : g.nodes()) pin(t);
  return lt;
}

// Whether b reuses a's memory in place at the step a dies.
bool inplace_pair(const AllocPlan& p, const Lifetimes& lt, const Tensor* a, const Tensor* b) {
  auto it = p.inplace.find(b);
  return it != p.inplace.end() && base_of(it->second) == a && lt.last.at(a) == lt.first.at(b);
}

void check_plan(const Graph& g, const AllocPlan& p, size_t alignment) {
  SCOPED_TRACE("alignment " + std::to_string(alignment));
  EXPECT_EQ(p.alignment, alignment);
  // Exactly the tensors without memory that are not views are planned.
  size_t expected = 0;
  auto want = [&](const Tensor* t) {
    bool needs = !t->data && !t->view_src;
    expected += needs;
    EXPECT_EQ(p.offsets.count(t), needs ? 1u : 0u) << t->name;
  };
  for (const Tensor* t : g.leafs()) want(t);
  for (const Tensor* t : g.nodes()) want(t);
  EXPECT_EQ(p.offsets.size(), expected);

  for (const auto& kv : p.offsets) {
    EXPECT_EQ(kv.second % alignment, 0u) << kv.first->name;
    EXPECT_LE(kv.second + kv.first->nbytes(), p.buffer_size) << kv.first->name;
  }
  Lifetimes lt = lifetimes(g, p);

  // In-place only where allowed.
  for (const auto& kv : p.inplace) {
    const Tensor* n = kv.first;
    const Tensor* src = kv.second;
    const Tensor* b = base_of(src);
    EXPECT_TRUE(op::op_can_be_inplace(n->op)) << n->name;
    EXPECT_EQ(n->src[0], src) << n->name;
    EXPECT_EQ(n->type, src->type);
    EXPECT_TRUE(src->is_contiguous());
    for (int d = 0; d < 4; ++d) EXPECT_EQ(n->ne[d], src->ne[d]);
    EXPECT_FALSE(b->flags & LOOM_TENSOR_FLAG_OUTPUT) << b->name;
    ASSERT_TRUE(p.offsets.count(b));
    EXPECT_EQ(p.offsets.at(n), p.offsets.at(b));
    EXPECT_EQ(lt.last.at(b), lt.first.at(n)) << "source " << b->name << " still needed after " << n->name;
  }

  // No two tensors alive at the same step share a byte (except an in-place
  // hand-over at the step it happens).
  std::vector<const Tensor*> ts;
  for (const auto& kv : p.offsets) ts.push_back(kv.first);
  for (size_t i = 0; i < ts.size(); ++i) {
    for (size_t j = i + 1; j < ts.size(); ++j) {
      const Tensor* a = ts[i];
      const Tensor* b = ts[j];
      bool live_together = lt.first.at(a) <= lt.last.at(b) && lt.first.at(b) <= lt.last.at(a);
      if (!live_together) continue;
      size_t a0 = p.offsets.at(a), a1 = a0 + a->nbytes();
      size_t b0 = p.offsets.at(b), b1 = b0 + b->nbytes();
      if (a0 < b1 && b0 < a1) {
        EXPECT_TRUE(inplace_pair(p, lt, a, b) || inplace_pair(p, lt, b, a))
            << a->name << " [" << a0 << ", " << a1 << ") steps " << lt.first.at(a) << ".."
            << lt.last.at(a) << " overlaps " << b->name << " [" << b0 << ", " << b1 << ") steps "
            << lt.first.at(b) << ".." << lt.last.at(b);
      }
    }
  }

  // Peak: the live sum at each step from the model (an in-place source is
  // not counted at the step it hands its memory over).
  size_t model_max = 0;
  for (int s = -1; s < static_cast<int>(g.nodes().size()); ++s) {
    size_t live = 0;
    for (const Tensor* t : ts) {
      if (lt.first.at(t) > s || lt.last.at(t) < s) continue;
      bool handed = false;
      for (const auto& kv : p.inplace) handed |= base_of(kv.second) == t && lt.first.at(kv.first) == s;
      if (!handed) live += t->nbytes();
    }
    model_max = std::max(model_max, live);
  }
  EXPECT_EQ(p.max_live_bytes, model_max);
  EXPECT_GE(p.buffer_size, p.max_live_bytes);
}

// Runs the graph on byte tags: each planned tensor stamps its bytes when
// computed; every read must find its base's stamp; outputs must keep theirs.
void simulate(const Graph& g, const AllocPlan& p) {
  std::vector<int> mem(p.buffer_size, -1);
  std::unordered_map<const Tensor*, int> tag;
  int next = 0;
  for (const auto& kv : p.offsets) tag[kv.first] = next++;
  // The tag each base's memory should hold now (in-place successors take over).
  auto stamp = [&](const Tensor* t) {
    size_t off = p.offsets.at(t);
    std::fill(mem.begin() + off, mem.begin() + off + t->nbytes(), tag.at(t));
  };
  auto intact = [&](const Tensor* s, const std::string& when) {
    const Tensor* b = base_of(s);
    if (!tag.count(b)) return;
    size_t off = p.offsets.at(b) + s->view_offset;
    for (size_t i = off; i < off + s->nbytes(); ++i) {
      if (mem[i] != tag.at(b)) {
        ADD_FAILURE() << when << ": " << s->name << " (base " << b->name << ") byte " << i
                      << " was overwritten";
        return;
      }
    }
  };
  for (const Tensor* l : g.leafs()) {
    if (tag.count(l)) stamp(l);
  }
  for (const Tensor* n : g.nodes()) {
    for (int s = 0; s < LOOM_MAX_SRC; ++s) {
      if (n->src[s]) intact(static_cast<const Tensor*>(n->src[s]), std::string("before ") + n->name);
    }
    if (tag.count(n)) stamp(n);
  }
  for (const Tensor* o : g.outputs()) intact(o, "at the end");
}

// ------------------------------------------------------------ hand cases

struct Chain {
  Context ctx;
  Tensor *a, *b, *c, *d;
};

std::unique_ptr<Chain> chain(bool inplace_ops) {
  auto ch = std::make_unique<Chain>();
  Context& c = ch->ctx;
  ch->a = must(c.new_tensor(LOOM_TYPE_F32, {16, 16}, "a"));  // 1024 bytes
  auto step = [&](Tensor* x) { return inplace_ops ? must(op::relu(c, x)) : must(op::cont(c, x)); };
  ch->b = step(ch->a);
  ch->c = step(ch->b);
  ch->d = step(ch->c);
  return ch;
}

TEST(Allocator, ChainNeedsTwoBuffersNotFour) {
  auto ch = chain(false);
  Graph g = must(Graph::build({ch->d}));
  AllocPlan p = must(GraphAllocator::plan(g, 64));
  check_plan(g, p, 64);
  simulate(g, p);
  EXPECT_EQ(p.buffer_size, 2048u);
  EXPECT_EQ(p.max_live_bytes, 2048u);
  EXPECT_TRUE(p.inplace.empty());
  EXPECT_EQ(p.offsets.size(), 4u);  // the input leaf is placed too
  EXPECT_EQ(p.offsets.at(ch->a), p.offsets.at(ch->c));
  EXPECT_NE(p.offsets.at(ch->a), p.offsets.at(ch->b));
}

TEST(Allocator, InplaceChainNeedsOneBuffer) {
  auto ch = chain(true);
  Graph g = must(Graph::build({ch->d}));
  AllocPlan p = must(GraphAllocator::plan(g, 64));
  check_plan(g, p, 64);
  simulate(g, p);
  EXPECT_EQ(p.buffer_size, 1024u);
  EXPECT_EQ(p.max_live_bytes, 1024u);
  ASSERT_EQ(p.inplace.size(), 3u);
  EXPECT_EQ(p.inplace.at(ch->b), ch->a);
  EXPECT_EQ(p.inplace.at(ch->d), ch->c);
}

TEST(Allocator, NoInplaceWhileSourceIsStillNeeded) {
  Context c;
  Tensor* a = must(c.new_tensor(LOOM_TYPE_F32, {64}, "a"));
  Tensor* b = must(op::relu(c, a));
  Tensor* d = must(op::add(c, b, a));  // a read again here
  Graph g = must(Graph::build({d}));
  AllocPlan p = must(GraphAllocator::plan(g, 16));
  check_plan(g, p, 16);
  simulate(g, p);
  EXPECT_EQ(p.inplace.count(b), 0u);
  ASSERT_EQ(p.inplace.count(d), 1u);  // b dies at d
  EXPECT_EQ(p.inplace.at(d), b);
}

TEST(Allocator, NoInplaceOverOutputsOrWeights) {
  Context c;
  alignas(64) static char weights[256];
  Tensor* w = must(c.new_tensor(LOOM_TYPE_F32, {64}, "w"));
  w->data = weights;
  Tensor* b = must(op::relu(c, w));    // w has data: left alone
  Tensor* m = must(op::silu(c, b));    // b is an output: kept
  Graph g = must(Graph::build({b, m}));
  AllocPlan p = must(GraphAllocator::plan(g, 32));
  check_plan(g, p, 32);
  simulate(g, p);
  EXPECT_EQ(p.offsets.count(w), 0u);
  EXPECT_TRUE(p.inplace.empty());
  EXPECT_NE(p.offsets.at(b), p.offsets.at(m));
  EXPECT_EQ(w->data, weights);
}

TEST(Allocator, NoInplaceWhenAnotherSourceAliasesTheBase) {
  Context c;
  Tensor* a = must(c.new_tensor(LOOM_TYPE_F32, {8, 8}, "a"));
  Tensor* b = must(op::cont(c, a));
  Tensor* d = must(op::add(c, b, must(c.transpose(b))));  // d[i] would clobber bT[j]
  Graph g = must(Graph::build({d}));
  AllocPlan p = must(GraphAllocator::plan(g, 16));
  check_plan(g, p, 16);
  simulate(g, p);
  EXPECT_EQ(p.inplace.count(d), 0u);
}

TEST(Allocator, ViewKeepsItsBaseAlive) {
  Context c;
  Tensor* a = must(c.new_tensor(LOOM_TYPE_F32, {16, 16}, "a"));
  Tensor* b = must(op::cont(c, a));
  Tensor* v = must(c.reshape(b, {256}));  // b's last direct reader
  Tensor* e = must(op::cont(c, a));       // would land on b if v did not pin it
  Tensor* v2 = must(c.reshape(e, {256}));
  Tensor* d = must(op::add(c, v, v2));
  Graph g = must(Graph::build({d}));
  ASSERT_EQ(g.nodes()[0], b);
  ASSERT_EQ(g.nodes()[1], v);
  ASSERT_EQ(g.nodes()[2], e);
  AllocPlan p = must(GraphAllocator::plan(g, 64));
  check_plan(g, p, 64);
  simulate(g, p);
  EXPECT_NE(p.offsets.at(b), p.offsets.at(e));
  // d may take b's memory through the reshape view (b dies at d).
  ASSERT_EQ(p.inplace.count(d), 1u);
  EXPECT_EQ(p.inplace.at(d), v);
  EXPECT_EQ(p.offsets.at(d), p.offsets.at(b));
}

TEST(Allocator, OutputViewPinsItsBase) {
  Context c;
  Tensor* a = must(c.new_tensor(LOOM_TYPE_F32, {16, 16}, "a"));
  Tensor* b = must(op::cont(c, a));
  Tensor* v = must(c.view(b, {16}, {}, 64));
  Tensor* e = must(op::relu(c, must(op::cont(c, a))));
  Tensor* f = must(op::relu(c, e));
  Graph g = must(Graph::build({v, f}));
  AllocPlan p = must(GraphAllocator::plan(g, 64));
  check_plan(g, p, 64);
  simulate(g, p);
  size_t b0 = p.offsets.at(b);
  for (const auto& kv : p.offsets) {
    if (kv.first == b) continue;
    size_t o = kv.second;
    EXPECT_TRUE(o + kv.first->nbytes() <= b0 || o >= b0 + b->nbytes()) << kv.first->name;
  }
}

TEST(Allocator, CpyResultKeepsDestinationAlive) {
  Context c;
  Tensor* x = must(c.new_tensor(LOOM_TYPE_F32, {64}, "x"));
  Tensor* dst = must(op::cont(c, must(c.new_tensor(LOOM_TYPE_F16, {64}, "y"))));
  Tensor* cp = must(op::cpy(c, x, dst));
  Tensor* other = must(op::relu(c, x));
  Tensor* out = must(op::add(c, must(op::cont(c, cp)), other));
  Graph g = must(Graph::build({out}));
  AllocPlan p = must(GraphAllocator::plan(g, 16));
  EXPECT_EQ(p.offsets.count(cp), 0u);  // a view: no memory of its own
  check_plan(g, p, 16);
  simulate(g, p);
}

TEST(Allocator, BadAlignmentAndDeterminism) {
  auto ch = chain(false);
  Graph g = must(Graph::build({ch->d}));
  EXPECT_TRUE(fails_with(GraphAllocator::plan(g, 0), {"[allocator.plan]", "alignment 0"}));
  EXPECT_TRUE(fails_with(GraphAllocator::plan(g, 48), {"[allocator.plan]", "48"}));
  AllocPlan p1 = must(GraphAllocator::plan(g, 128));
  AllocPlan p2 = must(GraphAllocator::plan(g, 128));
  EXPECT_EQ(p1.offsets, p2.offsets);
  EXPECT_EQ(p1.buffer_size, p2.buffer_size);
}

TEST(Allocator, OddSizesAreAligned) {
  Context c;
  Tensor* a = must(c.new_tensor(LOOM_TYPE_F16, {3}, "a"));  // 6 bytes
  Tensor* b = must(op::cont(c, a));
  Tensor* q = must(c.new_tensor(LOOM_TYPE_Q4_0, {32}, "q"));  // 18 bytes
  Tensor* qc = must(op::cont(c, q));
  Graph g = must(Graph::build({b, qc}));
  for (size_t align : {1u, 8u, 256u}) {
    AllocPlan p = must(GraphAllocator::plan(g, align));
    check_plan(g, p, align);
    simulate(g, p);
  }
}

// ------------------------------------------------------------ random DAGs

struct RandomGraph {
  Context ctx;
  std::vector<Tensor*> outputs;
};

std::unique_ptr<RandomGraph> random_graph(uint32_t seed, int n_nodes) {
  auto rg = std::make_unique<RandomGraph>();
  Context& c = rg->ctx;
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  static char weight_memory[4096];
  std::vector<Tensor*> pool;
  const int64_t shapes[3][2] = {{16, 8}, {8, 16}, {16, 16}};
  for (int i = 0; i < 6; ++i) {
    const int64_t* s = shapes[pick(3)];
    Tensor* t = must(c.new_tensor(LOOM_TYPE_F32, {s[0], s[1]}, "in" + std::to_string(i)));
    if (i % 3 == 2) t->data = weight_memory;  // a weight that already lives somewhere
    pool.push_back(t);
  }
  // Mostly recent tensors (chains), sometimes old ones (long lifetimes).
  auto any = [&]() -> Tensor* {
    int n = static_cast<int>(pool.size());
    return pick(10) < 7 ? pool[n - 1 - pick(std::min(n, 6))] : pool[pick(n)];
  };
  auto same_shape = [&](Tensor* x) -> Tensor* {
    for (int tries = 0; tries < 20; ++tries) {
      Tensor* y = any();
      if (y->ne[0] == x->ne[0] && y->ne[1] == x->ne[1]) return y;
    }
    return nullptr;
  };
  while (static_cast<int>(c.size()) < n_nodes) {
    Tensor* x = any();
    Tensor* r = nullptr;
    switch (pick(11)) {
      case 0: r = must(op::relu(c, x)); break;
      case 1: r = must(op::scale(c, x, 0.5f)); break;
      case 2: r = must(op::rms_norm(c, x, 1e-5f)); break;
      case 3: {
        Tensor* y = same_shape(x);
        r = y ? must(op::add(c, x, y)) : must(op::silu(c, x));
        break;
      }
      case 4: {
        Tensor* y = same_shape(x);
        r = y ? must(op::swiglu(c, x, y)) : must(op::gelu(c, x));
        break;
      }
      case 5: r = must(op::cont(c, must(c.transpose(x)))); break;
      case 6:
        r = x->is_contiguous() ? must(c.reshape(x, {x->ne[1], x->ne[0]})) : must(op::cont(c, x));
        break;
      case 7: {
        Tensor* y = any();
        r = y->ne[0] == x->ne[0] ? must(op::mul_mat(c, x, y)) : must(op::soft_max(c, x, nullptr, 1.0f));
        break;
      }
      case 8: {
        if (x->ne[1] < 2) {
          r = must(op::relu(c, x));
          break;
        }
        // Half the rows of x as a view; then broadcast it back onto x.
        Tensor* v = must(c.view(x, {x->ne[0], x->ne[1] / 2}, {x->nb[1]}, (x->ne[1] / 2) * x->nb[1]));
        pool.push_back(v);
        r = must(op::mul(c, x, must(c.view(v, {x->ne[0], 1}, {x->nb[1]}, 0))));
        break;
      }
      case 9: {
        Tensor* y = any();
        if (y->nelements() == x->nelements() && y != x) {
          r = must(op::cpy(c, x, y));
        } else {
          r = must(op::sum_rows(c, x));
        }
        break;
      }
      default: {
        Tensor* y = same_shape(x);
        r = y ? must(op::sub(c, y, x)) : must(op::relu(c, x));
        break;
      }
    }
    if (r->ne[0] < 4) r = must(op::cont(c, must(c.view(x, {x->ne[0], x->ne[1]}, {x->nb[1]}, 0))));
    pool.push_back(r);
  }
  rg->outputs.push_back(pool.back());
  for (int i = 0; i < 4; ++i) rg->outputs.push_back(pool[6 + pick(static_cast<int>(pool.size()) - 6)]);
  return rg;
}

TEST(Allocator, RandomDagsNeverOverlapLiveTensors) {
  int inplace_seen = 0;
  size_t total_nodes = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    auto rg = random_graph(seed, 150 + static_cast<int>(seed % 5) * 60);
    Graph g = must(Graph::build(rg->outputs));
    total_nodes += g.nodes().size();
    const size_t align = size_t{1} << (seed % 9);
    AllocPlan p = must(GraphAllocator::plan(g, align));
    check_plan(g, p, align);
    simulate(g, p);
    inplace_seen += static_cast<int>(p.inplace.size());
    // Reuse is real: far less than every tensor side by side.
    size_t sum = 0;
    for (const auto& kv : p.offsets) sum += kv.first->nbytes();
    EXPECT_LT(p.buffer_size, sum);
    if (HasFailure()) break;
  }
  EXPECT_GT(inplace_seen, 100);
  EXPECT_GT(total_nodes, 2000u);
  std::printf("random DAGs: %zu nodes, %d in-place reuses\n", total_nodes, inplace_seen);
}

// ------------------------------------------------------------ apply

// A buffer as the allocator sees it: an identity, memory and a hook that
// counts placements (the registry's init_tensor door in real use).
struct FakeBuffer {
  loom_buffer_t buf{};
  std::vector<char> mem;
  int inits = 0;
  bool fail = false;
  GraphAllocator::PlacedFn hook() {
    return [this](Tensor* t) -> Status {
      inits++;
      char* p = static_cast<char*>(t->data);
      EXPECT_TRUE(p >= mem.data() && p + t->nbytes() <= mem.data() + mem.size());
      if (fail) return resource_exhausted("no room for extras");
      return Status();
    };
  }
  Status apply(const Graph& g, const AllocPlan& p) {
    return GraphAllocator::apply(g, p, &buf, mem.data(), hook());
  }
};

void make_fake(FakeBuffer& f, size_t size) {
  f.mem.assign(size, 0);
  f.buf.struct_size = sizeof(loom_buffer_t);
  f.buf.size = size;
}

TEST(Allocator, ApplyPlacesBasesAndViews) {
  Context c;
  alignas(64) static char weights[1024];
  Tensor* w = must(c.new_tensor(LOOM_TYPE_F32, {16, 16}, "w"));
  w->data = weights;
  Tensor* x = must(c.new_tensor(LOOM_TYPE_F32, {16, 4}, "x"));
  Tensor* h = must(op::mul_mat(c, w, x));
  Tensor* t = must(c.transpose(h));
  Tensor* y = must(op::relu(c, must(op::cont(c, t))));
  Tensor* wv = must(c.view(w, {16}, {}, 64));  // a view of the weight
  Tensor* z = must(op::mul(c, y, must(c.reshape(wv, {4, 4}))));
  Graph g = must(Graph::build({z}));
  AllocPlan p = must(GraphAllocator::plan(g, 64));

  FakeBuffer small;
  make_fake(small, p.buffer_size - 1);
  EXPECT_TRUE(fails_with(small.apply(g, p), {"[allocator.apply]", "the plan needs"}));
  EXPECT_TRUE(fails_with(GraphAllocator::apply(g, p, nullptr, nullptr), {"[allocator.apply]", "null"}));

  FakeBuffer f;
  make_fake(f, p.buffer_size);
  ASSERT_TRUE(f.apply(g, p).ok());
  int views_in_buffer = 0;
  for (const auto& kv : p.offsets) {
    EXPECT_EQ(kv.first->data, f.mem.data() + kv.second) << kv.first->name;
    EXPECT_EQ(kv.first->buffer, &f.buf);
  }
  for (Tensor* n : g.nodes()) {
    if (!n->view_src) continue;
    EXPECT_EQ(n->data, static_cast<char*>(n->base()->data) + n->view_offset) << n->name;
    views_in_buffer += n->base()->buffer == &f.buf;
  }
  EXPECT_EQ(w->data, weights);
  EXPECT_EQ(w->buffer, nullptr);
  EXPECT_EQ(wv->data, weights + 64);
  EXPECT_EQ(f.inits, static_cast<int>(p.offsets.size()) + views_in_buffer);

  // update_view follows a moved base.
  alignas(64) static char elsewhere[1024];
  w->data = elsewhere;
  ASSERT_TRUE(update_view(wv).ok());
  EXPECT_EQ(wv->data, elsewhere + 64);
  EXPECT_TRUE(fails_with(update_view(w), {"[allocator.update_view]", "not a view"}));
  EXPECT_TRUE(fails_with(update_view(nullptr), {"[allocator.update_view]", "null"}));
  Tensor* lone = must(c.new_tensor(LOOM_TYPE_F32, {4}, "lone"));
  EXPECT_TRUE(fails_with(update_view(must(c.reshape(lone, {2, 2}))), {"no memory"}));

  // Another buffer's tensors are not silently moved.
  FakeBuffer f2;
  make_fake(f2, p.buffer_size);
  EXPECT_TRUE(fails_with(f2.apply(g, p), {"another buffer"}));
}

TEST(Allocator, ApplyReportsTheHooksError) {
  auto ch = chain(false);
  Graph g = must(Graph::build({ch->d}));
  AllocPlan p = must(GraphAllocator::plan(g, 64));
  FakeBuffer f;
  make_fake(f, p.buffer_size);
  f.fail = true;
  Status st = f.apply(g, p);
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(fails_with(st, {"allocator.apply", "no room for extras"}));

  // Without a hook the tensors are placed all the same.
  auto ch2 = chain(false);
  Graph g2 = must(Graph::build({ch2->d}));
  AllocPlan p2 = must(GraphAllocator::plan(g2, 64));
  FakeBuffer plain;
  make_fake(plain, p2.buffer_size);
  ASSERT_TRUE(GraphAllocator::apply(g2, p2, &plain.buf, plain.mem.data()).ok());
  EXPECT_EQ(plain.inits, 0);
  EXPECT_EQ(ch2->d->buffer, &plain.buf);
}

}  // namespace
}  // namespace loom
