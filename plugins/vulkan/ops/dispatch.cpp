// The Vulkan support table (the op set's rules, common/op_check.h, minus
// GET_ROWS from I64, ATTENTION with a non-F32 Q, sizes past 32-bit
// addressing and, on lavapipe, loops past an invocation's budget) and
// node -> dispatch planning: which shader variant, push constants (offsets,
// extents, strides, parameters) and how many workgroups.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "common/op_check.h"
#include "common/op_info.h"
#include "common/type_traits.h"
#include "ops/ops.h"
#include "ops/planner.h"

namespace loom::vulkan {

namespace {

constexpr uint32_t kElemWg = 256;   // elementwise shaders
constexpr uint64_t kMaxU32 = 0xFFFFFFFFull;
// attention.comp: keys scored per step = workgroup size (a power of two);
// at most its shared arrays (MAX_WG) and within Vulkan's guaranteed 128
// invocations.
constexpr uint32_t kAttnWg = 64;
// attention_rows: query rows (h, t) per workgroup, one invocation each, and
// keys per chunk (ROWS_CHUNK).
constexpr uint32_t kAttnRowsWg = 8;
constexpr uint64_t kAttnRowsChunk = 32;
// Split-KV decode (flash-decoding): a key range per ~kAttnSplitKeys keys, at
// most kAttnMaxSplits, for up to kAttnSplitMaxTok queries per head.
constexpr uint64_t kAttnSplitKeys = 128;
constexpr uint64_t kAttnMaxSplits = 32;
constexpr int64_t kAttnSplitMaxTok = 8;
constexpr uint32_t kCombineWg = 64;
// attention_tiled: blocks of kAttnTiledRows queries of one head, keys in
// chunks of kAttnTiledKeys, D and Dv at most kAttnTiledMaxD (its BR, BC,
// DMAX; the workgroup is BR * BC).
constexpr int64_t kAttnTiledRows = 8;
constexpr uint64_t kAttnTiledKeys = 16;
constexpr int64_t kAttnTiledMaxD = 128;
constexpr uint32_t kAttnTiledWg = 128;


// Past the op set's rules (common/op_check.h): the shaders address tensors
// with 32-bit element and byte arithmetic.
bool fits_u32(const loom_tensor_t* t) {
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    if (static_cast<uint64_t>(t->ne[d]) > kMaxU32 || t->nb[d] > kMaxU32) return false;
  }
  return static_cast<uint64_t>(nelements(t)) < (uint64_t{1} << 31);
}

// Loop iterations one invocation of attention.comp runs at most (visible is
// clamped to n_kv), counted from the shader's loops: a loop over n elements
// four at a time takes n / 4 + 3 + 1 (remainder, exit).
uint64_t unrolled(uint64_t n) { return n / 4 + 4; }
uint64_t attention_loops(const loom_tensor_t* n, bool rows, uint64_t splits) {
  const uint64_t d = static_cast<uint64_t>(n->src[0]->ne[0]);
  const uint64_t dv = static_cast<uint64_t>(n->ne[0]);
  // A split kernel's invocation sees one range of ceil(n_kv / splits) keys.
  const uint64_t n_kv = (static_cast<uint64_t>(n->src[1]->ne[1]) + splits - 1) / splits;
  if (rows) {
    const uint64_t c = kAttnRowsChunk;
    const uint64_t per_chunk = 1 + (c + 1) * (1 + unrolled(d)) + (c + 1) + (dv + 1) * (1 + unrolled(c));
    return 2 * (dv + 1) + (n_kv + c - 1) / c * per_chunk;
  }
  const uint64_t w = kAttnWg;
  const uint64_t mine = (dv + w - 1) / w + 1;  // result elements l, l + w, ... (+ exit)
  const uint64_t per_chunk = 1 + unrolled(d) + unrolled(w) + mine * (1 + unrolled(w));
  return 2 * mine + 8 + (n_kv + w - 1) / w * per_chunk;
}

// The same for attention_tiled.comp: per chunk of 16 keys, the staging of
// K and V (16 x D / 128 elements each), the score's loop over D, the max
// and weights (16 each, the first 8 invocations), the 8 result elements'
// loops over 16 keys; before: Q and the block's key range.
uint64_t attention_tiled_loops(const loom_tensor_t* n) {
  const uint64_t d = static_cast<uint64_t>(n->src[0]->ne[0]);
  const uint64_t dv = static_cast<uint64_t>(n->ne[0]);
  const uint64_t keys = kAttnTiledKeys;
  const uint64_t n_kv = static_cast<uint64_t>(n->src[1]->ne[1]);
  const uint64_t per_chunk = 1 + (keys * d + kAttnTiledWg - 1) / kAttnTiledWg + 1 + d + 1 + 2 * (keys + 1) +
                             (keys * dv + kAttnTiledWg - 1) / kAttnTiledWg + 1 + 8 * (keys + 1);
  return 32 + (n_kv + keys - 1) / keys * per_chunk;
}

// Key ranges of the split-KV kernels for node n (1: one pass): decode
// (few queries per head) over a KV length past kAttnSplitKeys.
uint32_t attention_splits(const OpCaps& caps, const loom_tensor_t* n) {
  if (!caps.split_kv || n->src[0]->ne[2] > kAttnSplitMaxTok) return 1;
  const uint64_t n_kv = static_cast<uint64_t>(n->src[1]->ne[1]);
  return static_cast<uint32_t>(std::min(kAttnMaxSplits, (n_kv + kAttnSplitKeys - 1) / kAttnSplitKeys));
}

// The attention.comp variant for node n: attention_rows on CPU
// implementations, else the workgroup kernel, each split over the KV
// length when attention_splits says so; nullptr when the device ends loops
// early (caps.loop_budget) and neither fits.
const char* attention_kernel(const OpCaps& caps, const loom_tensor_t* n) {
  const uint32_t splits = attention_splits(caps, n);
  // Prefill on a GPU: blocks of queries share each chunk of keys.
  if (!caps.rows_kernels && caps.tiled_attention && splits == 1 && n->src[0]->ne[2] > kAttnSplitMaxTok &&
      n->src[0]->ne[0] <= kAttnTiledMaxD && n->ne[0] <= kAttnTiledMaxD &&
      (caps.loop_budget == 0 || attention_tiled_loops(n) <= caps.loop_budget)) {
    return "attention_tiled";
  }
  const auto fits = [&](bool rows) {
    return caps.loop_budget == 0 || attention_loops(n, rows, splits) <= caps.loop_budget;
  };
  if (caps.rows_kernels && fits(true)) return splits > 1 ? "attention_rows_split" : "attention_rows";
  if (!fits(false)) return nullptr;
  return splits > 1 ? "attention_split" : "attention";
}

// Types the shaders decode: the plain ones, and every block type of
// shaders/quant.glsl (Q8_0, Q4_0 and the ABI 1.2 weight types Q4_1, Q5_0,
// Q5_1, IQ4_NL, Q2_K..Q6_K; IQ4_XS of ABI 1.4) as MUL_MAT's A, GET_ROWS' source, CPY / CONT
// sources (the op set lets nothing else read them).
bool shader_type(int32_t t) {
  switch (t) {
    case LOOM_TYPE_F32: case LOOM_TYPE_F16: case LOOM_TYPE_BF16: case LOOM_TYPE_Q8_0:
    case LOOM_TYPE_Q4_0: case LOOM_TYPE_I32: case LOOM_TYPE_I64:
    case LOOM_TYPE_Q4_1: case LOOM_TYPE_Q5_0: case LOOM_TYPE_Q5_1: case LOOM_TYPE_IQ4_NL:
    case LOOM_TYPE_Q2_K: case LOOM_TYPE_Q3_K: case LOOM_TYPE_Q4_K: case LOOM_TYPE_Q5_K: case LOOM_TYPE_Q6_K:
    case LOOM_TYPE_IQ4_XS:
      return true;
    default:
      return false;
  }
}

// Loop iterations one invocation of a MUL_MAT kernel runs at most, counted
// from the shaders' loops (inner loops over a 32-element chunk are
// unrolled; quant.glsl): per chunk of 32 for a block type, per element (or
// four, the f32 vec4 path) for float A. Conservative: loops that may be
// unrolled by the compiler count as not.
}  // namespace

uint64_t mul_mat_loops(MatKernel k, const loom_tensor_t* a, uint64_t cols, uint32_t wg) {
  const uint64_t kk = static_cast<uint64_t>(a->ne[0]);
  const bool blocks = is_block_type(a->type);
  switch (k) {
    case MatKernel::kRows:
      // Q8_0 / Q4_0 over contiguous B: a loop of 8 or 4 words per block.
      return (blocks ? kk / 32 * (is_writable_quant(a->type) ? 9 : 1) : kk) + 4;
    case MatKernel::kVec: {
      const uint64_t steps = ((blocks ? kk / 32 : kk) + wg - 1) / wg;
      // Per step: the loop over the columns (a chunk's 32 elements
      // unrolled; Q8_0 / Q4_0's decode form: a loop of 8 or 4 words), then
      // the reduction over the columns and wg.
      const uint64_t per = cols + 1 + (is_writable_quant(a->type) ? 8 : 0);
      return steps * (per + 1) + 2 * cols + 16 + cols * 9;
    }
    case MatKernel::kTiled:
      // Per 16 k (mul_mat.comp): the staging loop (4), the 16 steps of
      // 4x4 multiply-adds (their 4-long loops unrolled), the step itself.
      return (kk + 15) / 16 * 22 + 8;
    case MatKernel::kCoopmat:
      // Per 32 k (mul_mat_cm.comp): the step, a chunk's decode or staging
      // loop (32), the loops around the emulated multiply-adds (12) and
      // theirs (8 calls of 8 x (1 + 16)); a GPU's form has none of the
      // last, but only CPU implementations count.
      return (kk + 31) / 32 * 1150 + 16;
  }
  return 0;
}

bool coopmat_suits(const OpCaps& caps, const loom_tensor_t* n) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  return caps.coopmat_shader != nullptr && n->op == LOOM_OP_MUL_MAT && b->ne[1] > kMatVecMaxN &&
         coopmat_reads(a) && b->type == LOOM_TYPE_F32;
}

namespace {

// The MUL_MAT kernel for node n: mul_mat_rows for short rows and on CPU
// implementations, mul_mat_vec for up to 8 columns, else mul_mat; on a
// device whose loops end early (caps.loop_budget, lavapipe) the first of
// rows / vec / tiled that fits. Prefill over F16 or quantized A: the
// cooperative-matrix kernel where the device has one. False when none fits.
bool mul_mat_kernel(const OpCaps& caps, const loom_tensor_t* n, MatKernel* out, uint32_t* vec_wg) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  *vec_wg = a->ne[0] >= 1024 ? 128 : 64;
  const auto fits = [&](MatKernel k) {
    return caps.loop_budget == 0 || mul_mat_loops(k, n->src[0], static_cast<uint64_t>(n->src[1]->ne[1]), *vec_wg) <= caps.loop_budget;
  };
  const MatKernel wide = b->ne[1] <= kMatVecMaxN ? MatKernel::kVec
                         : coopmat_suits(caps, n)  ? MatKernel::kCoopmat
                                                   : MatKernel::kTiled;
  const MatKernel order[3] = {(a->ne[0] < kShortK || caps.rows_kernels) ? MatKernel::kRows : wide,
                              MatKernel::kVec, MatKernel::kTiled};
  for (MatKernel k : order) {
    if (k == MatKernel::kVec && b->ne[1] > kMatVecMaxN) continue;
    if (fits(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

// Loop iterations of one invocation of sparse.comp: the row-sparse
// product's row_dot (as mul_mat_rows), the column-sparse one's loop over
// every neuron.
uint64_t sparse_loops(const loom_tensor_t* n) {
  const loom_tensor_t* a = n->src[0];
  if (n->op == LOOM_OP_MUL_MAT_SPARSE_COLS) return static_cast<uint64_t>(a->ne[1]) + 4;
  const uint64_t kk = static_cast<uint64_t>(a->ne[0]);
  return (is_block_type(a->type) ? kk / 32 * (is_writable_quant(a->type) ? 9 : 1) : kk) + 4;
}

// This plugin's own limits on a well-formed node; nullptr when none bites.
const char* vulkan_limits(const OpCaps& caps, const loom_tensor_t* n) {
  if (!shader_type(n->type)) return "result type (no shader decodes it)";
  for (int i = 0; i < LOOM_MAX_SRC; ++i) {
    if (n->src[i] != nullptr && !shader_type(n->src[i]->type)) return "source type (no shader decodes it)";
  }
  if (!fits_u32(n)) return "result type or shape";
  for (int i = 0; i < LOOM_MAX_SRC; ++i) {
    if (n->src[i] != nullptr && !fits_u32(n->src[i])) return "source type or shape";
  }
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  switch (n->op) {
    case LOOM_OP_GET_ROWS:
      // Sources of any type but I64 (the shaders have no 64-bit integers).
      return a->type == LOOM_TYPE_I64 ? "types" : nullptr;
    case LOOM_OP_MUL_MAT: {
      if (static_cast<uint64_t>(b->ne[2] * b->ne[3]) > caps.max_groups[2]) return "batch count";
      MatKernel k;
      uint32_t wg;
      return mul_mat_kernel(caps, n, &k, &wg) ? nullptr : "row length over the device's loop budget";
    }
    case LOOM_OP_ROPE:
      // n_dims and mode share p[1] with the frequency factors' flag (bit 24).
      return n->op_params[0] > 0xFFFF ? "n_dims" : nullptr;
    case LOOM_OP_ATTENTION:
      // Q is read as F32 only; K and V as any float type (op_check), not
      // Q8_0 (ABI 1.6's 8-bit cache: the llama builder's unfused form).
      if (a->type != LOOM_TYPE_F32 || b->type == LOOM_TYPE_Q8_0 || n->src[2]->type == LOOM_TYPE_Q8_0) return "types";
      return attention_kernel(caps, n) == nullptr ? "KV length over the device's loop budget" : nullptr;
    case LOOM_OP_MUL_MAT_SPARSE_ROWS:
    case LOOM_OP_MUL_MAT_SPARSE_COLS:
      return caps.loop_budget == 0 || sparse_loops(n) <= caps.loop_budget ? nullptr
                                                                           : "row length over the device's loop budget";
    case LOOM_OP_MUL_MAT_ID:
      return mul_mat_id_limits(caps, n);
    case LOOM_OP_TOP_K:
      // top_k.comp: a pass over the row per element.
      return caps.loop_budget == 0 || static_cast<uint64_t>(a->ne[0]) + 4 <= caps.loop_budget
                 ? nullptr
                 : "row length over the device's loop budget";
    default:
      return nullptr;
  }
}

uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float param_f32(const loom_tensor_t* t, int i) {
  float v;
  std::memcpy(&v, &t->op_params[i], 4);
  return v;
}

// Smallest power of two >= n, clamped to [32, 256]: workgroup size of the
// one-workgroup-per-row shaders.
uint32_t row_wg(int64_t n) {
  uint32_t wg = 32;
  while (wg < 256 && static_cast<int64_t>(wg) < n) wg *= 2;
  return wg;
}


// ------------------------------------------------ int8 GEMV (decode, quantized A)

}  // namespace

uint32_t q8_rows(const OpCaps& caps) { return std::max<uint32_t>(1, kQ8Wg / std::max<uint32_t>(1, caps.subgroup_size)); }

uint64_t q8_loops(const OpCaps& caps, const loom_tensor_t* a, uint64_t cols) {
  const uint64_t nch = static_cast<uint64_t>(a->ne[0]) / 32;
  const uint64_t sg = std::max<uint32_t>(1, caps.subgroup_size);
  return (nch + sg - 1) / sg * (cols + 1) + 2 * cols + 8;
}

namespace {

// Whether a MUL_MAT the GEMV takes goes through B rounded to 8-bit blocks:
// quantized A, B's rows dense f32 (the conformance rule's condition,
// conformance/matmul_cases.cpp may_round_b), the device able and willing.
bool use_q8(const OpCaps& caps, const loom_tensor_t* n) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  const bool dense_rows = b->type == LOOM_TYPE_F32 && b->nb[0] == 4 && b->nb[1] % 4 == 0 &&
                          b->nb[2] % 4 == 0 && b->nb[3] % 4 == 0;
  return caps.int8 && caps.subgroup_add && is_block_type(a->type) && dense_rows &&
         (caps.loop_budget == 0 || q8_loops(caps, a, static_cast<uint64_t>(b->ne[1])) <= caps.loop_budget);
}

// Two dispatches: quantize_q8 rounds every column of B, per block of 32
// (256 for the K-quants: ggml's rule, conformance/README.md), into scratch
// memory; mul_mat_vec_q8 reads them beside A's integers.
std::string plan_mul_mat_q8(const OpCaps& caps, const loom_tensor_t* n, const Resolver& resolve,
                            const ScratchFn& scratch, std::vector<Dispatch>* out) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  const uint64_t cols = static_cast<uint64_t>(b->ne[1] * b->ne[2] * b->ne[3]);
  const uint64_t nch = static_cast<uint64_t>(a->ne[0]) / 32;
  const uint64_t block = common::type_traits(a->type).block_size == 256 ? 256 : 32;
  Location loc;
  const uint64_t bytes = cols * nch * kQ8ChunkBytes;
  LOOM_VK_TRY(scratch(bytes, &loc));

  Dispatch q{};
  Planner pq(caps, resolve, &q);
  uint32_t off = 0;
  LOOM_VK_TRY(pq.bind_range(0, loc, bytes, "B rounded to 8-bit blocks", &off));
  q.pc.t[0].off = off;
  LOOM_VK_TRY(pq.bind(1, b));
  q.shader = "quantize_q8";
  q.pc.p[1] = static_cast<uint32_t>(block);
  LOOM_VK_TRY(pq.grid(cols * (static_cast<uint64_t>(a->ne[0]) / block), kQuantizeWg));

  Dispatch d{};
  Planner p(caps, resolve, &d);
  LOOM_VK_TRY(p.bind(0, n));
  LOOM_VK_TRY(p.bind(1, a));
  LOOM_VK_TRY(p.bind(2, b));
  LOOM_VK_TRY(p.bind_range(3, loc, bytes, "B rounded to 8-bit blocks", &off));
  d.pc.p[1] = off;
  d.shader = caps.int8dot ? "mul_mat_vec_q8_dot" : "mul_mat_vec_q8";
  const uint32_t rows = q8_rows(caps);
  LOOM_VK_TRY(p.groups((static_cast<uint64_t>(a->ne[1]) + rows - 1) / rows, kQ8Wg));
  d.spec[1] = static_cast<uint32_t>(a->type);
  d.spec[2] = rows;
  d.n_spec = 3;
  d.groups[2] = static_cast<uint32_t>(b->ne[2] * b->ne[3]);
  for (Dispatch* x : {&q, &d}) {
    Planner px(caps, resolve, x);
    for (int k = 1; k < kSlots; ++k) {
      if (x->buffers[k] == VK_NULL_HANDLE) px.unused(k);
    }
  }
  out->push_back(q);
  out->push_back(d);
  return "";
}

}  // namespace

bool float_vec_wide(const loom_tensor_t* a, const loom_tensor_t* b, const PushConstants& pc) {
  return a->nb[0] == common::type_traits(a->type).type_size && b->nb[0] == 4 && a->ne[0] % 8 == 0 &&
         aligned16(pc.t[1]) && aligned16(pc.t[2]);
}
uint64_t float_vec_loops(const OpCaps& caps, const loom_tensor_t* a, uint64_t cols, bool wide) {
  const uint64_t per_step = wide ? 4 : 1;
  const uint64_t lanes = std::max<uint32_t>(1, caps.subgroup_size) * per_step;
  return (static_cast<uint64_t>(a->ne[0]) + lanes - 1) / lanes * (cols + 2) + 2 * cols + 16;
}

namespace {

std::string plan_mul_mat(const OpCaps& caps, const loom_tensor_t* n, Planner& p, Dispatch* d) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  const uint64_t m = static_cast<uint64_t>(a->ne[1]);
  const uint64_t batch = static_cast<uint64_t>(b->ne[2] * b->ne[3]);
  d->spec[1] = static_cast<uint32_t>(a->type);
  d->n_spec = 2;
  // Short rows (attention over a head dimension, tiny models) and every
  // matmul on CPU implementations: one invocation per output, no barriers.
  // Decode: one workgroup per row of A. Prefill: the tiled kernel. (On
  // lavapipe, rows too long for an invocation's loop budget move on.)
  MatKernel kernel;
  uint32_t vec_wg = 64;
  if (!mul_mat_kernel(caps, n, &kernel, &vec_wg)) return "row length over the device's loop budget";
  if (kernel == MatKernel::kRows) {
    d->shader = "mul_mat_rows";
    LOOM_VK_TRY(p.grid(m * static_cast<uint64_t>(b->ne[1]) * batch, 64));
    return "";
  }
  const bool wide = kernel == MatKernel::kVec && float_vec_wide(a, b, d->pc);
  if (kernel == MatKernel::kVec && caps.subgroup_add && !is_block_type(a->type) &&
      (caps.loop_budget == 0 || float_vec_loops(caps, a, static_cast<uint64_t>(b->ne[1]), wide) <= caps.loop_budget)) {
    // A row per subgroup (rows per workgroup: its subgroups as reported).
    d->shader = "mul_mat_vec_float";
    const uint32_t rows = std::max<uint32_t>(1, kFloatVecWg / std::max<uint32_t>(1, caps.subgroup_size));
    d->spec[2] = rows;
    d->n_spec = 3;
    d->pc.p[2] = wide ? 1 : 0;
    LOOM_VK_TRY(p.groups((m + rows - 1) / rows, kFloatVecWg));
  } else if (kernel == MatKernel::kVec) {
    d->shader = caps.subgroup_add ? "mul_mat_vec_subgroup" : "mul_mat_vec";
    LOOM_VK_TRY(p.groups(m, vec_wg));
  } else {
    // 64x64 output tiles: of 16x16 fragments (mul_mat_cm.comp, 128
    // invocations) or of 4x4 blocks per invocation (mul_mat.comp, 256).
    const bool cm = kernel == MatKernel::kCoopmat;
    d->shader = cm ? caps.coopmat_shader : "mul_mat";
    const uint64_t gx = (m + 63) / 64;
    const uint64_t gy = (static_cast<uint64_t>(b->ne[1]) + 63) / 64;
    if (gx > caps.max_groups[0] || gy > caps.max_groups[1]) return "matrix too large for the grid";
    d->spec[0] = cm ? 128 : 256;
    d->groups[0] = static_cast<uint32_t>(gx);
    d->groups[1] = static_cast<uint32_t>(gy);
  }
  d->groups[2] = static_cast<uint32_t>(batch);
  return "";
}

// sparse.comp: the scores at slot 3 (binding 4), their offset, strides and
// type in the parameters; one invocation per output element.
std::string plan_sparse(const loom_tensor_t* n, Planner& p, Dispatch* d) {
  const loom_tensor_t* s = n->src[2];
  uint32_t off = 0;
  LOOM_VK_TRY(p.bind_buffer(3, s, &off));
  d->shader = n->op == LOOM_OP_MUL_MAT_SPARSE_ROWS ? "sparse_rows" : "sparse_cols";
  d->spec[1] = static_cast<uint32_t>(n->src[0]->type);
  d->n_spec = 2;
  d->pc.p[0] |= static_cast<uint32_t>(s->type) << 24;
  d->pc.p[1] = f32_bits(param_f32(n, 0));
  d->pc.p[2] = off;
  d->pc.p[3] = static_cast<uint32_t>(s->nb[0]);
  d->pc.p[4] = static_cast<uint32_t>(s->nb[1]);
  return p.grid(static_cast<uint64_t>(nelements(n)), 64);
}

std::string plan_rope(const OpCaps& caps, const loom_tensor_t* n, Planner& p, Dispatch* d) {
  const loom_tensor_t* a = n->src[0];
  const uint32_t n_dims = static_cast<uint32_t>(n->op_params[0]);
  const uint32_t mode = static_cast<uint32_t>(n->op_params[1]);
  const float freq_base = param_f32(n, 2);
  const float freq_scale = param_f32(n, 3);
  d->pc.p[1] = n_dims | (mode << 16);
  d->pc.p[2] = f32_bits(freq_scale);
  if (const loom_tensor_t* ff = n->src[2]) {
    // The frequency factors at slot 3 (binding 4); rope.comp reads their
    // offset and stride from the positions' unused nb[1], nb[2].
    uint32_t off = 0;
    LOOM_VK_TRY(p.bind_buffer(3, ff, &off));
    d->pc.p[1] |= 1u << 24;
    d->pc.t[2].nb[1] = off;
    d->pc.t[2].nb[2] = static_cast<uint32_t>(ff->nb[0]);
  }
  // r = base^(-2/n_dims); theta_i = pos * scale * r^i (the shader).
  const double r = n_dims > 0 ? std::pow(static_cast<double>(freq_base), -2.0 / n_dims) : 1.0;
  if (caps.f64) {
    d->shader = "rope_f64";
    uint64_t bits;
    std::memcpy(&bits, &r, 8);
    d->pc.p[3] = static_cast<uint32_t>(bits);
    d->pc.p[4] = static_cast<uint32_t>(bits >> 32);
  } else {
    d->shader = "rope";
    d->pc.p[3] = f32_bits(static_cast<float>(r));
  }
  const uint64_t per_row = n_dims / 2 + static_cast<uint64_t>(a->ne[0]) - n_dims;
  return p.grid(per_row * static_cast<uint64_t>(nrows(a)), kElemWg);
}

// One workgroup per (h, t), or one invocation (attention_rows: CPU
// implementations, when it fits the loop budget), times the key ranges of
// the split kernels, which write scratch rows (*split_rows: where, and
// `splits` of Dv + 2 floats per (h, t)) instead of the result;
// AttnPushConstants replace the common block.
std::string plan_attention(const OpCaps& caps, const loom_tensor_t* n, uint32_t node_id, Planner& p,
                           Dispatch* d, const Location* split_rows = nullptr, uint32_t splits = 1) {
  const loom_tensor_t* q = n->src[0];
  const loom_tensor_t* k = n->src[1];
  const loom_tensor_t* v = n->src[2];
  const loom_tensor_t* vis = n->src[3];
  AttnPushConstants a{};
  const auto row = [&p](int slot, const loom_tensor_t* t, AttnRowDesc* out) {
    for (int i = 0; i < 3; ++i) out->nb[i] = static_cast<uint32_t>(t->nb[i]);
    return p.bind_buffer(slot, t, &out->off);
  };
  if (split_rows != nullptr) {
    const uint64_t row_bytes = (static_cast<uint64_t>(n->ne[0]) + 2) * 4;
    const uint64_t bytes = row_bytes * splits * static_cast<uint64_t>(q->ne[1] * q->ne[2]);
    LOOM_VK_TRY(p.bind_range(0, *split_rows, bytes, "split attention rows", &a.dst.off));
    a.dst.nb[0] = 4;
    a.dst.nb[1] = static_cast<uint32_t>(row_bytes * splits);
    a.dst.nb[2] = static_cast<uint32_t>(row_bytes * splits * static_cast<uint64_t>(q->ne[1]));
  } else {
    LOOM_VK_TRY(row(0, n, &a.dst));
  }
  LOOM_VK_TRY(row(1, q, &a.q));
  LOOM_VK_TRY(row(2, k, &a.k));
  LOOM_VK_TRY(row(3, v, &a.v));
  LOOM_VK_TRY(p.bind_buffer(4, vis, &a.vis_off));
  a.vis_nb0 = static_cast<uint32_t>(vis->nb[0]);
  a.vis_nb1 = n->op_params[1] == LOOM_ATTENTION_RANGES ? static_cast<uint32_t>(vis->nb[1]) : 0u;
  a.d = static_cast<uint32_t>(q->ne[0]);
  a.dv = static_cast<uint32_t>(v->ne[0]);
  a.n_head = static_cast<uint32_t>(q->ne[1]);
  a.n_tok = static_cast<uint32_t>(q->ne[2]);
  a.n_kv = static_cast<uint32_t>(k->ne[1]);
  a.group = static_cast<uint32_t>(q->ne[1] / k->ne[2]);
  a.types = static_cast<uint32_t>(k->type) | static_cast<uint32_t>(v->type) << 8;
  a.scale = f32_bits(param_f32(n, 0));
  a.node_id = node_id;
  a.n_split = splits;
  d->pc = PushConstants{};
  std::memcpy(&d->pc, &a, sizeof a);
  const uint64_t pairs = static_cast<uint64_t>(q->ne[1] * q->ne[2]) * splits;
  d->shader = attention_kernel(caps, n);
  if (d->shader == nullptr) return "KV length over the device's loop budget";
  if ((std::strstr(d->shader, "split") != nullptr) != (split_rows != nullptr)) return "split kernel without its rows";
  if (std::strcmp(d->shader, "attention_tiled") == 0) {
    const uint64_t blocks = static_cast<uint64_t>((q->ne[2] + kAttnTiledRows - 1) / kAttnTiledRows);
    return p.groups(static_cast<uint64_t>(q->ne[1]) * blocks, kAttnTiledWg);
  }
  return std::strncmp(d->shader, "attention_rows", 14) == 0 ? p.grid(pairs, kAttnRowsWg) : p.groups(pairs, kAttnWg);
}

// Split-KV (flash-decoding): the split kernel writes each key range's
// unnormalised accumulators, max and sum into scratch rows;
// attention_combine merges them into the result (one invocation per
// element).
std::string plan_attention_split(const OpCaps& caps, const loom_tensor_t* n, uint32_t node_id,
                                 const Resolver& resolve, const ScratchFn& scratch,
                                 std::vector<Dispatch>* out) {
  const uint32_t splits = attention_splits(caps, n);
  const loom_tensor_t* q = n->src[0];
  const uint64_t bytes = (static_cast<uint64_t>(n->ne[0]) + 2) * 4 * splits * static_cast<uint64_t>(q->ne[1] * q->ne[2]);
  Location loc;
  LOOM_VK_TRY(scratch(bytes, &loc));
  Dispatch s{};
  Planner ps(caps, resolve, &s);
  LOOM_VK_TRY(plan_attention(caps, n, node_id, ps, &s, &loc, splits));

  Dispatch c{};
  Planner pc(caps, resolve, &c);
  LOOM_VK_TRY(pc.bind(0, n));
  uint32_t off = 0;
  LOOM_VK_TRY(pc.bind_range(1, loc, bytes, "split attention rows", &off));
  c.pc.t[1].off = off;
  c.pc.p[1] = splits;
  c.shader = "attention_combine";
  LOOM_VK_TRY(pc.grid(static_cast<uint64_t>(nelements(n)), kCombineWg));
  for (Dispatch* x : {&s, &c}) {
    Planner px(caps, resolve, x);
    for (int k = 1; k < kSlots; ++k) {
      if (x->buffers[k] == VK_NULL_HANDLE) px.unused(k);
    }
  }
  out->push_back(s);
  out->push_back(c);
  return "";
}

std::string plan_copy(const loom_tensor_t* n, Planner& p, Dispatch* d) {
  const loom_tensor_t* a = n->src[0];
  d->shader = "copy";
  const uint64_t count = static_cast<uint64_t>(nelements(n));
  if (a->type == n->type && !is_block_type(a->type)) {
    d->pc.p[1] = 0;
    return p.grid(count, kElemWg);
  }
  if (a->type == n->type) {
    d->pc.p[1] = 1;
    return p.grid(count / static_cast<uint64_t>(common::type_traits(a->type).block_size), kElemWg);
  }
  if (is_writable_quant(n->type)) {
    d->pc.p[1] = 3;
    return p.grid(count / 32, 64);
  }
  d->pc.p[1] = 2;
  return p.grid(count, kElemWg);
}

}  // namespace

const char* unsupported_reason(const OpCaps& caps, const loom_tensor_t* node) {
  if (node == nullptr) return "null node";
  if (node->op == LOOM_OP_NONE || common::is_view_op(node->op)) return nullptr;
  if (const char* why = common::check_node(node)) return why;
  return vulkan_limits(caps, node);
}

namespace {

// The kernel's bindings, push constants and grid (plan_node fills the rest).
std::string plan_kernel(const OpCaps& caps, const loom_tensor_t* n, uint32_t node_id, Planner& p,
                        Dispatch* d) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  LOOM_VK_TRY(p.bind(0, n));
  switch (n->op) {
    case LOOM_OP_GET_ROWS:
      LOOM_VK_TRY(p.bind(1, a));
      LOOM_VK_TRY(p.bind(2, b));
      d->shader = "rows";
      d->pc.p[1] = 0;
      d->pc.p[2] = node_id;
      return p.grid(static_cast<uint64_t>(nelements(n)), kElemWg);
    case LOOM_OP_SET_ROWS: {
      const loom_tensor_t* rows = n->src[1];
      LOOM_VK_TRY(p.bind(1, rows));
      LOOM_VK_TRY(p.bind(2, n->src[2]));
      d->shader = "rows";
      d->pc.p[1] = 1;
      d->pc.p[2] = node_id;
      const uint64_t count = static_cast<uint64_t>(nelements(rows));
      return is_writable_quant(n->type) ? p.grid(count / 32, 64) : p.grid(count, kElemWg);
    }
    case LOOM_OP_ADD:
    case LOOM_OP_SUB:
    case LOOM_OP_MUL:
    case LOOM_OP_DIV:
      LOOM_VK_TRY(p.bind(1, a));
      LOOM_VK_TRY(p.bind(2, b));
      d->shader = "binary";
      d->pc.p[1] = static_cast<uint32_t>(n->op);
      return p.grid(static_cast<uint64_t>(nelements(n)), kElemWg);
    case LOOM_OP_SCALE:
    case LOOM_OP_SILU:
    case LOOM_OP_GELU:
    case LOOM_OP_RELU:
    case LOOM_OP_TANH:
    case LOOM_OP_SWIGLU:
      LOOM_VK_TRY(p.bind(1, a));
      if (n->op == LOOM_OP_SWIGLU) LOOM_VK_TRY(p.bind(2, b));
      d->shader = "unary";
      d->pc.p[1] = static_cast<uint32_t>(n->op);
      if (n->op == LOOM_OP_SCALE) {
        d->pc.p[2] = f32_bits(param_f32(n, 0));
        d->pc.p[3] = f32_bits(param_f32(n, 1));
      }
      return p.grid(static_cast<uint64_t>(nelements(n)), kElemWg);
    case LOOM_OP_RMS_NORM:
    case LOOM_OP_NORM:
      LOOM_VK_TRY(p.bind(1, a));
      d->shader = "norm";
      d->pc.p[1] = static_cast<uint32_t>(n->op);
      d->pc.p[2] = f32_bits(param_f32(n, 0));
      return p.groups(static_cast<uint64_t>(nrows(a)), row_wg(a->ne[0]));
    case LOOM_OP_SOFT_MAX:
      LOOM_VK_TRY(p.bind(1, a));
      if (b != nullptr) LOOM_VK_TRY(p.bind(2, b));
      d->shader = "softmax";
      d->pc.p[1] = b != nullptr ? 1 : 0;
      d->pc.p[2] = f32_bits(param_f32(n, 0));
      return p.groups(static_cast<uint64_t>(nrows(a)), row_wg(a->ne[0]));
    case LOOM_OP_MUL_MAT:
      LOOM_VK_TRY(p.bind(1, a));
      LOOM_VK_TRY(p.bind(2, b));
      return plan_mul_mat(caps, n, p, d);
    case LOOM_OP_ROPE:
      LOOM_VK_TRY(p.bind(1, a));
      LOOM_VK_TRY(p.bind(2, b));
      return plan_rope(caps, n, p, d);
    case LOOM_OP_CPY:
    case LOOM_OP_CONT:
      LOOM_VK_TRY(p.bind(1, a));
      return plan_copy(n, p, d);
    case LOOM_OP_ARGMAX:
    case LOOM_OP_SUM_ROWS:
      LOOM_VK_TRY(p.bind(1, a));
      d->shader = "reduce";
      d->pc.p[1] = n->op == LOOM_OP_ARGMAX ? 0 : 1;
      return p.groups(static_cast<uint64_t>(nrows(a)), row_wg(a->ne[0]));
    case LOOM_OP_ATTENTION:
      return plan_attention(caps, n, node_id, p, d);
    case LOOM_OP_TOP_K:
      // One invocation per source element (its rank in the row).
      LOOM_VK_TRY(p.bind(1, a));
      d->shader = "top_k";
      return p.grid(static_cast<uint64_t>(nelements(a)), 64);
    case LOOM_OP_MUL_MAT_SPARSE_ROWS:
    case LOOM_OP_MUL_MAT_SPARSE_COLS:
      LOOM_VK_TRY(p.bind(1, a));
      LOOM_VK_TRY(p.bind(2, b));
      return plan_sparse(n, p, d);
    default:
      return std::string("no kernel for op ") + common::op_name(n->op);
  }
}

}  // namespace

std::string plan_node(const OpCaps& caps, const loom_tensor_t* n, uint32_t node_id,
                      const Resolver& resolve, const ScratchFn& scratch, std::vector<Dispatch>* out) {
  if (n->op == LOOM_OP_MUL_MAT) {
    MatKernel kernel;
    uint32_t wg = 0;
    if (mul_mat_kernel(caps, n, &kernel, &wg) && kernel == MatKernel::kVec && use_q8(caps, n))
      return plan_mul_mat_q8(caps, n, resolve, scratch, out);
  }
  if (n->op == LOOM_OP_MUL_MAT_ID) return plan_mul_mat_id(caps, n, node_id, resolve, scratch, out);
  if (n->op == LOOM_OP_ATTENTION && attention_splits(caps, n) > 1)
    return plan_attention_split(caps, n, node_id, resolve, scratch, out);
  Dispatch d{};
  Planner p(caps, resolve, &d);
  std::string err = plan_kernel(caps, n, node_id, p, &d);
  if (!err.empty()) return err;
  for (int k = 1; k < kSlots; ++k) {
    if (d.buffers[k] == VK_NULL_HANDLE) p.unused(k);
  }
  out->push_back(d);
  return "";
}

}  // namespace loom::vulkan
