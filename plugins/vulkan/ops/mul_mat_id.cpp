// MUL_MAT_ID (ABI 1.5) on the MUL_MAT kernels' id variants
// (shaders/mul_mat_id.glsl): the product becomes a batch of U x T
// one-column products whose A matrix is read from ids on the device, so
// only the chosen experts' rows are read and nothing waits for the host.
// Decode (and prefill alike): a row of A per subgroup or workgroup per
// (slot, token) pair — the int8 GEMV over B rounded to 8-bit blocks for
// quantized A, the float GEMV for float A — or one invocation per output
// on CPU implementations and for short rows. Prefill (more than 8 tokens)
// on a GPU: moe_group.comp lists the pairs expert by expert in scratch,
// then the tiled GEMM (mul_mat.comp -DLOOM_ID_GROUPED) multiplies each
// expert's rows with its pairs' columns, 64 x 64 per workgroup, so an
// expert's weights are read once per tile of 64 pairs instead of once per
// pair (LOOM_VULKAN_DISABLE=grouped keeps the per-pair kernels). An id
// outside [0, E) is reported in the stream's error words (BAD_EXPERT) and
// fails the node.
#include <algorithm>
#include <string>

#include "common/type_traits.h"
#include "ops/ops.h"
#include "ops/planner.h"

namespace loom::vulkan {

namespace {

enum class IdKernel { kRows, kQ8, kFloatVec, kVec, kGrouped };

constexpr uint32_t kGroupWg = 256;           // moe_group.comp: one workgroup
constexpr uint64_t kGroupMaxExperts = 256;   // moe_group.comp MAX_E
constexpr uint64_t kTile = 64;               // mul_mat.comp TILE

uint64_t pairs_of(const loom_tensor_t* n) {
  return static_cast<uint64_t>(n->src[2]->ne[0]) * static_cast<uint64_t>(n->src[2]->ne[1]);
}
uint32_t vec_wg(const loom_tensor_t* a) { return a->ne[0] >= 1024 ? 128 : 64; }
bool within(const OpCaps& caps, uint64_t loops) { return caps.loop_budget == 0 || loops <= caps.loop_budget; }

// The int8 GEMV's condition (dispatch.cpp use_q8): quantized A, B's rows
// dense f32, the device able and willing.
bool id_q8(const OpCaps& caps, const loom_tensor_t* a, const loom_tensor_t* b) {
  const bool dense_rows = b->nb[0] == 4 && b->nb[1] % 4 == 0 && b->nb[2] % 4 == 0;
  return caps.int8 && caps.subgroup_add && is_block_type(a->type) && dense_rows && within(caps, q8_loops(caps, a, 1));
}

// The grouped GEMM's grid in y: enough tiles of 64 for one expert holding
// every token once; an expert with more pairs (ids repeated within a
// token) loops over further tiles.
uint64_t grouped_tiles_y(const loom_tensor_t* n) {
  return (static_cast<uint64_t>(n->src[2]->ne[1]) + kTile - 1) / kTile;
}

// The grouped GEMM on cooperative matrices (mul_mat_cm.comp
// -DLOOM_ID_GROUPED) on a device that has them, for the A it reads; the
// F16-inputs rule holds above 8 tokens, which grouping needs anyway.
bool id_coopmat(const OpCaps& caps, const loom_tensor_t* n) {
  return caps.coopmat_id_shader != nullptr && coopmat_reads(n->src[0]);
}

// Loop iterations of one invocation of moe_group + the grouped GEMM, at
// worst (every pair on one expert).
uint64_t grouped_loops(const OpCaps& caps, const loom_tensor_t* n) {
  const uint64_t pairs = pairs_of(n);
  const uint64_t experts = static_cast<uint64_t>(n->src[0]->ne[2]);
  const uint64_t group = 2 * ((pairs + kGroupWg - 1) / kGroupWg) + 2 * experts + 4;
  const uint64_t tiles = (pairs + kTile - 1) / kTile;
  const uint64_t per_wg = (tiles + grouped_tiles_y(n) - 1) / grouped_tiles_y(n);
  const MatKernel k = id_coopmat(caps, n) ? MatKernel::kCoopmat : MatKernel::kTiled;
  return std::max(group, per_wg * (mul_mat_loops(k, n->src[0], 0, 0) + 8));
}

// Prefill on a GPU: more tokens than the GEMVs take, f32 B, experts the
// grouping shader holds.
bool id_grouped(const OpCaps& caps, const loom_tensor_t* n) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* ids = n->src[2];
  return caps.grouped_moe && !caps.rows_kernels && a->ne[0] >= kShortK && ids->ne[1] > kMatVecMaxN &&
         n->src[1]->type == LOOM_TYPE_F32 && static_cast<uint64_t>(a->ne[2]) <= kGroupMaxExperts &&
         static_cast<uint64_t>(a->ne[2]) <= caps.max_groups[2] && grouped_tiles_y(n) <= caps.max_groups[1] &&
         within(caps, grouped_loops(caps, n));
}

// The kernel for node n, in MUL_MAT's order (plan_mul_mat): one invocation
// per output for short rows and on CPU implementations, the grouped GEMM
// for prefill, else a GEMV per pair (the grid's z counts the pairs), else
// the first that fits the loop budget. False when none does.
bool id_kernel(const OpCaps& caps, const loom_tensor_t* n, IdKernel* out) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  const bool rows_fit = within(caps, mul_mat_loops(MatKernel::kRows, a, 1, 0));
  const bool rows_first = a->ne[0] < kShortK || caps.rows_kernels;
  if (rows_first && rows_fit) {
    *out = IdKernel::kRows;
    return true;
  }
  if (id_grouped(caps, n)) {
    *out = IdKernel::kGrouped;
    return true;
  }
  if (pairs_of(n) <= caps.max_groups[2]) {
    if (id_q8(caps, a, b)) {
      *out = IdKernel::kQ8;
      return true;
    }
    // The float GEMV's loop count on its element-wise path (the wide one
    // takes fewer).
    if (caps.subgroup_add && !is_block_type(a->type) && within(caps, float_vec_loops(caps, a, 1, false))) {
      *out = IdKernel::kFloatVec;
      return true;
    }
    if (within(caps, mul_mat_loops(MatKernel::kVec, a, 1, vec_wg(a)))) {
      *out = IdKernel::kVec;
      return true;
    }
  }
  if (rows_fit) {
    *out = IdKernel::kRows;
    return true;
  }
  return false;
}

// Bind the result, A, B and ids for the id variants and rewrite the
// descriptors as mul_mat_id.glsl reads them: B [K, 1, U, T] (dim-2 stride 0
// when the slots share the token's column), the result [M, 1, U, T], ids
// at slot 4 (binding 5); the node id and ids' dim-1 stride in the unused
// dim-1 strides.
std::string bind_id(const OpCaps& caps, const loom_tensor_t* n, uint32_t node_id, const Resolver& resolve,
                    Dispatch* d) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  const loom_tensor_t* ids = n->src[2];
  Planner p(caps, resolve, d);
  LOOM_VK_TRY(p.bind(0, n));
  LOOM_VK_TRY(p.bind(1, a));
  LOOM_VK_TRY(p.bind(2, b));
  uint32_t ids_off = 0;
  LOOM_VK_TRY(p.bind_buffer(4, ids, &ids_off));
  const uint32_t u = static_cast<uint32_t>(ids->ne[0]);
  const uint32_t t = static_cast<uint32_t>(ids->ne[1]);
  TensorDesc& bd = d->pc.t[2];
  bd.nb[3] = static_cast<uint32_t>(b->nb[2]);
  bd.nb[2] = b->ne[1] == 1 ? 0u : static_cast<uint32_t>(b->nb[1]);
  bd.nb[1] = 0;
  bd.ne[1] = 1;
  bd.ne[2] = u;
  bd.ne[3] = t;
  TensorDesc& dd = d->pc.t[0];
  dd.nb[3] = static_cast<uint32_t>(n->nb[2]);
  dd.nb[2] = static_cast<uint32_t>(n->nb[1]);
  dd.nb[1] = node_id;
  dd.ne[1] = 1;
  dd.ne[2] = u;
  dd.ne[3] = t;
  d->pc.p[3] = ids_off;
  d->pc.p[4] = static_cast<uint32_t>(ids->nb[0]);
  return "";
}

// The ids' dim-1 stride goes where B's unused one was (after the float
// GEMV's alignment check, which reads that field).
void finish_id(const loom_tensor_t* n, Dispatch* d) {
  d->pc.t[2].nb[1] = static_cast<uint32_t>(n->src[2]->nb[1]);
  d->spec[1] = static_cast<uint32_t>(n->src[0]->type);
}

// quantize_q8 over the pairs' columns of B (a token's one column once per
// slot when they share it: the same rounding each time), into scratch.
std::string plan_quantize(const OpCaps& caps, const loom_tensor_t* n, const Dispatch& id, const Resolver& resolve,
                          const Location& loc, uint64_t bytes, Dispatch* q) {
  const loom_tensor_t* a = n->src[0];
  Planner pq(caps, resolve, q);
  uint32_t off = 0;
  LOOM_VK_TRY(pq.bind_range(0, loc, bytes, "B rounded to 8-bit blocks", &off));
  LOOM_VK_TRY(pq.bind(1, n->src[1]));
  q->pc.t[0].off = off;
  const uint32_t b_off = q->pc.t[1].off;
  q->pc.t[1] = id.pc.t[2];
  q->pc.t[1].off = b_off;
  q->pc.t[1].nb[1] = 0;
  q->shader = "quantize_q8";
  const uint64_t block = common::type_traits(a->type).block_size == 256 ? 256 : 32;
  q->pc.p[1] = static_cast<uint32_t>(block);
  return pq.grid(pairs_of(n) * (static_cast<uint64_t>(a->ne[0]) / block), kQuantizeWg);
}

// moe_group over the node's ids into scratch (counts, firsts, the pair
// list; mul_mat.comp -DLOOM_ID_GROUPED reads them at slot 3 from p[1]).
std::string plan_grouped(const OpCaps& caps, const loom_tensor_t* n, const Resolver& resolve,
                         const ScratchFn& scratch, Dispatch* d, Dispatch* g) {
  const uint64_t experts = static_cast<uint64_t>(n->src[0]->ne[2]);
  const uint64_t bytes = 4 * (2 * experts + pairs_of(n));
  Location loc;
  LOOM_VK_TRY(scratch(bytes, &loc));
  *g = *d;
  Planner pg(caps, resolve, g);
  uint32_t off = 0;
  LOOM_VK_TRY(pg.bind_range(0, loc, bytes, "MUL_MAT_ID's pairs by expert", &off));
  g->pc.t[0].off = off;
  g->shader = "moe_group";
  g->n_spec = 1;
  LOOM_VK_TRY(pg.groups(1, kGroupWg));
  pg.unused(2);
  pg.unused(3);
  Planner p(caps, resolve, d);
  LOOM_VK_TRY(p.bind_range(3, loc, bytes, "MUL_MAT_ID's pairs by expert", &off));
  d->pc.p[1] = off;
  const bool cm = id_coopmat(caps, n);
  d->shader = cm ? caps.coopmat_id_shader : "mul_mat_id_tiled";
  d->groups[0] = static_cast<uint32_t>((static_cast<uint64_t>(n->src[0]->ne[1]) + kTile - 1) / kTile);
  d->groups[1] = static_cast<uint32_t>(grouped_tiles_y(n));
  d->groups[2] = static_cast<uint32_t>(experts);
  d->spec[0] = cm ? 128 : 256;
  return "";
}

}  // namespace

const char* mul_mat_id_limits(const OpCaps& caps, const loom_tensor_t* n) {
  IdKernel k;
  return id_kernel(caps, n, &k) ? nullptr : "row length over the device's loop budget";
}

std::string plan_mul_mat_id(const OpCaps& caps, const loom_tensor_t* n, uint32_t node_id, const Resolver& resolve,
                            const ScratchFn& scratch, std::vector<Dispatch>* out) {
  const loom_tensor_t* a = n->src[0];
  IdKernel kernel;
  if (!id_kernel(caps, n, &kernel)) return "row length over the device's loop budget";
  const uint64_t m = static_cast<uint64_t>(a->ne[1]);
  const uint64_t pairs = pairs_of(n);
  Dispatch d{};
  LOOM_VK_TRY(bind_id(caps, n, node_id, resolve, &d));
  Planner p(caps, resolve, &d);
  d.n_spec = 2;
  Dispatch q{};  // a first pass: B rounded to 8-bit blocks, or the pairs grouped by expert
  bool prepass = false;
  switch (kernel) {
    case IdKernel::kGrouped:
      finish_id(n, &d);
      LOOM_VK_TRY(plan_grouped(caps, n, resolve, scratch, &d, &q));
      prepass = true;
      break;
    case IdKernel::kRows:
      d.shader = "mul_mat_id_rows";
      LOOM_VK_TRY(p.grid(m * pairs, 64));
      break;
    case IdKernel::kQ8: {
      const uint64_t bytes = pairs * (static_cast<uint64_t>(a->ne[0]) / 32) * kQ8ChunkBytes;
      Location loc;
      LOOM_VK_TRY(scratch(bytes, &loc));
      LOOM_VK_TRY(plan_quantize(caps, n, d, resolve, loc, bytes, &q));
      uint32_t off = 0;
      LOOM_VK_TRY(p.bind_range(3, loc, bytes, "B rounded to 8-bit blocks", &off));
      d.pc.p[1] = off;
      d.shader = caps.int8dot ? "mul_mat_id_vec_q8_dot" : "mul_mat_id_vec_q8";
      const uint32_t rows = q8_rows(caps);
      d.spec[2] = rows;
      d.n_spec = 3;
      LOOM_VK_TRY(p.groups((m + rows - 1) / rows, kQ8Wg));
      prepass = true;
      break;
    }
    case IdKernel::kFloatVec: {
      d.shader = "mul_mat_id_vec_float";
      const uint32_t rows = std::max<uint32_t>(1, kFloatVecWg / std::max<uint32_t>(1, caps.subgroup_size));
      d.spec[2] = rows;
      d.n_spec = 3;
      d.pc.p[2] = float_vec_wide(a, n->src[1], d.pc) ? 1 : 0;
      LOOM_VK_TRY(p.groups((m + rows - 1) / rows, kFloatVecWg));
      break;
    }
    case IdKernel::kVec:
      d.shader = caps.subgroup_add ? "mul_mat_id_vec_subgroup" : "mul_mat_id_vec";
      LOOM_VK_TRY(p.groups(m, vec_wg(a)));
      break;
  }
  if (kernel != IdKernel::kRows && kernel != IdKernel::kGrouped) d.groups[2] = static_cast<uint32_t>(pairs);
  finish_id(n, &d);
  for (Dispatch* x : {&q, &d}) {
    if (x == &q && !prepass) continue;
    Planner px(caps, resolve, x);
    for (int k = 1; k < kSlots; ++k) {
      if (x->buffers[k] == VK_NULL_HANDLE) px.unused(k);
    }
  }
  if (prepass) out->push_back(q);
  out->push_back(d);
  return "";
}

}  // namespace loom::vulkan
