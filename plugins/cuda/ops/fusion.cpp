#include "fusion.h"

#include "act_cache.h"
#include "common/op_info.h"
#include "common/tensor_layout.h"

#include <initializer_list>

namespace loom::cuda {
namespace {

bool same_layout(const loom_tensor_t* a, const loom_tensor_t* b) {
  if (a->data != b->data || a->type != b->type) return false;
  for (int d = 0; d < 4; ++d) {
    if (a->ne[d] != b->ne[d] || a->nb[d] != b->nb[d]) return false;
  }
  return true;
}

}  // namespace

const loom_tensor_t* fused_weight(const loom_tensor_t* norm, const loom_tensor_t* mul) {
  return mul->src[0] == norm ? mul->src[1] : mul->src[0];
}

const loom_tensor_t* fused_norm_mul(const loom_tensor_t* norm, const loom_tensor_t* next) {
  if (norm == nullptr || next == nullptr) return nullptr;
  if (norm->op != LOOM_OP_RMS_NORM && norm->op != LOOM_OP_NORM) return nullptr;
  if (next->op != LOOM_OP_MUL || next->src[0] == nullptr || next->src[1] == nullptr) return nullptr;
  if ((next->src[0] == norm) == (next->src[1] == norm)) return nullptr;  // neither, or norm * norm
  const loom_tensor_t* w = fused_weight(norm, next);
  for (int d = 0; d < 4; ++d) {
    if (next->ne[d] != norm->ne[d]) return nullptr;
    if (w->ne[d] != 1 && w->ne[d] != norm->ne[d]) return nullptr;
  }
  if (spans_overlap(tensor_span(w), tensor_span(norm))) return nullptr;
  // Every block reads all of w while others write their rows of the
  // product: the allocator may give the product memory w held when w dies
  // at this MUL (two kernels in order), never one kernel.
  if (spans_overlap(tensor_span(next), tensor_span(w))) return nullptr;
  const loom_tensor_t* x = norm->src[0];
  if (spans_overlap(tensor_span(next), tensor_span(x)) && !same_layout(next, x)) return nullptr;
  if (spans_overlap(tensor_span(next), tensor_span(norm)) && !same_layout(next, norm)) return nullptr;
  return next;
}

bool fused_writes_norm(const loom_tensor_t* norm, const loom_tensor_t* mul) { return !same_layout(norm, mul); }

bool gemv_peer(const loom_graph_t* graph, int32_t at, int32_t later) {
  if (graph == nullptr || at < 0 || later <= at || later >= graph->n_nodes) return false;
  const loom_tensor_t* first = graph->nodes[at];
  const loom_tensor_t* mm = graph->nodes[later];
  if (first == nullptr || mm == nullptr || first->op != LOOM_OP_MUL_MAT || mm->op != LOOM_OP_MUL_MAT) return false;
  const loom_tensor_t* b = first->src[1];
  if (mm->src[1] != b || b->ne[2] != 1 || b->ne[3] != 1) return false;
  const loom_tensor_t* a0 = first->src[0];
  const loom_tensor_t* a1 = mm->src[0];
  if (a0->type != a1->type || a0->ne[0] != a1->ne[0] || a1->ne[2] != 1 || a1->ne[3] != 1 || a0->ne[2] != 1 ||
      a0->ne[3] != 1) {
    return false;
  }
  const ByteSpan out = tensor_span(mm), in_a = tensor_span(a1), in_b = tensor_span(b);
  if (spans_overlap(out, in_b) || spans_overlap(out, tensor_span(first))) return false;
  // In one grid the first product's A is still read while this one's
  // result is written (in order, A may be dead by then and its memory reused).
  if (spans_overlap(out, tensor_span(a0))) return false;
  for (int32_t i = at + 1; i < later; ++i) {
    const loom_tensor_t* n = graph->nodes[i];
    if (n == nullptr || n->op == LOOM_OP_NONE) continue;
    const ByteSpan w = tensor_span(n);
    // Views write nothing, but a view's bytes are what later nodes read.
    if (spans_overlap(w, out)) return false;
    if (!common::is_view_op(n->op) && (spans_overlap(w, in_a) || spans_overlap(w, in_b))) return false;
    for (const loom_tensor_t* s : n->src) {
      if (s != nullptr && spans_overlap(tensor_span(s), out)) return false;
    }
  }
  return true;
}

const loom_tensor_t* fused_residual(const loom_tensor_t* mm, const loom_tensor_t* add) {
  return add->src[0] == mm ? add->src[1] : add->src[0];
}

const loom_tensor_t* fused_mul_mat_add(const loom_tensor_t* mm, const loom_tensor_t* next, bool reads_b) {
  if (mm == nullptr || next == nullptr || mm->op != LOOM_OP_MUL_MAT) return nullptr;
  if (next->op != LOOM_OP_ADD || next->src[0] == nullptr || next->src[1] == nullptr) return nullptr;
  if ((next->src[0] == mm) == (next->src[1] == mm)) return nullptr;  // neither, or mm + mm
  const loom_tensor_t* r = fused_residual(mm, next);
  if (mm->type != LOOM_TYPE_F32 || r->type != LOOM_TYPE_F32 || next->type != LOOM_TYPE_F32) return nullptr;
  for (int d = 0; d < 4; ++d) {
    if (r->ne[d] != mm->ne[d] || next->ne[d] != mm->ne[d]) return nullptr;
  }
  if (spans_overlap(tensor_span(r), tensor_span(mm))) return nullptr;
  // The sum is written while other blocks still read A (and B, when the
  // kernel reads it): the allocator may place the sum where they lay once
  // the product is done (they die at the MUL_MAT; the llama graph's residual
  // after the down projection lands on SWIGLU's result), which is safe for
  // two kernels, not for one.
  if (spans_overlap(tensor_span(next), tensor_span(mm->src[0])) ||
      (reads_b && spans_overlap(tensor_span(next), tensor_span(mm->src[1])))) {
    return nullptr;
  }
  if (spans_overlap(tensor_span(next), tensor_span(mm)) && !same_layout(next, mm)) return nullptr;
  if (spans_overlap(tensor_span(next), tensor_span(r)) && !same_layout(next, r)) return nullptr;
  return next;
}

namespace {

bool float_cache(int32_t type) { return type == LOOM_TYPE_F32 || type == LOOM_TYPE_F16 || type == LOOM_TYPE_BF16; }

int64_t elements(const loom_tensor_t* t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

// Whether `span` overlaps any of `ts` (nullptr entries skipped).
bool overlaps_any(ByteSpan span, std::initializer_list<const loom_tensor_t*> ts) {
  for (const loom_tensor_t* t : ts) {
    if (t != nullptr && spans_overlap(span, tensor_span(t))) return true;
  }
  return false;
}

}  // namespace

bool fused_rope_set_rows(const loom_tensor_t* rope, const loom_tensor_t* set, int perm[4]) {
  if (rope == nullptr || set == nullptr || rope->op != LOOM_OP_ROPE || set->op != LOOM_OP_SET_ROWS) return false;
  const loom_tensor_t* rows = set->src[1];
  const loom_tensor_t* idx = set->src[2];
  if (rows == nullptr || idx == nullptr || rope->type != LOOM_TYPE_F32 || !common::tensor_is_dense(rope) ||
      !float_cache(set->type)) {
    return false;
  }
  if (rope->src[0] == nullptr || rows->data != rope->data || rows->type != LOOM_TYPE_F32 ||
      elements(rows) != elements(rope)) {
    return false;
  }
  // Each of the rows' dims is one of ROPE's (same extent and stride); a
  // dim of extent 1 matches any unused one of extent 1.
  bool used[4] = {false, false, false, false};
  for (int d = 0; d < 4; ++d) {
    perm[d] = -1;
    for (int k = 0; k < 4 && perm[d] < 0; ++k) {
      if (used[k] || rope->ne[k] != rows->ne[d]) continue;
      if (rows->ne[d] != 1 && rope->nb[k] != rows->nb[d]) continue;
      perm[d] = k;
      used[k] = true;
    }
    if (perm[d] < 0) return false;
  }
  if (perm[0] != 0 || rope->ne[0] != rows->ne[0]) return false;
  return !overlaps_any(tensor_span(set), {rope, rope->src[0], rope->src[1], rope->src[2], idx});
}

bool fused_second_set_rows(const loom_tensor_t* rope, const loom_tensor_t* first, const loom_tensor_t* second) {
  if (rope == nullptr || first == nullptr || second == nullptr || second->op != LOOM_OP_SET_ROWS) return false;
  const loom_tensor_t* rows = second->src[1];
  if (rows == nullptr || second->src[2] != first->src[2] || !float_cache(second->type) ||
      rows->type != LOOM_TYPE_F32) {
    return false;
  }
  // What the kernel writes (ROPE's result, both caches) against what it
  // reads (ROPE's input, positions, indices, the second rows).
  return !overlaps_any(tensor_span(second), {rope, first, rope->src[0], rope->src[1], rope->src[2], first->src[2]}) &&
         !overlaps_any(tensor_span(rows), {rope, first});
}

bool fused_rope_beside(const loom_tensor_t* q, const loom_tensor_t* rope, const RopeRows& rr) {
  if (q == nullptr || rope == nullptr || q->op != LOOM_OP_ROPE || rope->op != LOOM_OP_ROPE || q == rope) return false;
  const loom_tensor_t* set_v_rows = rr.set_v != nullptr ? rr.set_v->src[1] : nullptr;
  const loom_tensor_t* idx = rr.set_k != nullptr ? rr.set_k->src[2] : nullptr;
  // Q's result against everything the rest reads or writes; what the rest
  // writes against what Q reads.
  if (overlaps_any(tensor_span(q), {rope->src[0], rope->src[1], rope->src[2], idx, set_v_rows, rope, rr.set_k, rr.set_v})) {
    return false;
  }
  for (const loom_tensor_t* w : {rope, rr.set_k, rr.set_v}) {
    if (w != nullptr && overlaps_any(tensor_span(w), {q->src[0], q->src[1], q->src[2]})) return false;
  }
  return true;
}

}  // namespace loom::cuda
