// Shared by the ATTENTION kernels (attention.comp and its variants,
// attention_tiled.comp): the bindings of V and visible, the push-constant
// block, and which key rows each query sees. Include first (it includes
// common.glsl).
#define LOOM_OWN_PUSH_CONSTANTS
#include "common.glsl"

layout(std430, binding = 4) readonly buffer BufC { uint c_data[]; };
layout(std430, binding = 5) readonly buffer BufI { uint i_data[]; };
LOOM_DEFINE_LOADS(ld_c, c_data)

// Mirrors AttnPushConstants in ops/ops.h: byte offset and strides of dims
// 0..2 of each tensor.
struct RowDesc {
  uint off;
  uint nb[3];
};
layout(push_constant, std430) uniform AttnPush {
  RowDesc q, k, v, d;
  uint vis_off, vis_nb0;
  uint n_embd_k, n_embd_v, n_head, n_tok, n_kv, group;
  uint types;  // K type | V type << 8
  uint scale;  // f32 bits
  uint node_id;
  uint n_split;  // LOOM_SPLIT: key ranges per (h, t)
  uint vis_nb1;  // the ranges form: visible's dim-1 stride; 0: lengths
} pc;

float neg_inf() { return uintBitsToFloat(0xFF800000u); }

// visible[t] clamped to [0, n_kv]; a value outside is reported when `report`.
uint visible_len(uint t, bool report) {
  int vis = int(i_data[(pc.vis_off + t * pc.vis_nb0) >> 2]);
  if (vis >= 0 && uint(vis) <= pc.n_kv) return uint(vis);
  if (report) report_bad_value(pc.node_id, BAD_VISIBLE, t, uint(vis), vis < 0 ? 0xFFFFFFFFu : 0u, pc.n_kv);
  return vis < 0 ? 0u : pc.n_kv;
}

// Query t's key rows [first, end): [0, visible[t]) or, the ranges form, the
// pair's (a bad pair is reported when `report` and read as empty).
uint visible_rows(uint t, bool report, out uint first) {
  first = 0u;
  if (pc.vis_nb1 == 0u) return visible_len(t, report);
  int a = int(i_data[(pc.vis_off + t * pc.vis_nb1) >> 2]);
  int b = int(i_data[(pc.vis_off + pc.vis_nb0 + t * pc.vis_nb1) >> 2]);
  if (a >= 0 && b >= a && uint(b) <= pc.n_kv) {
    first = uint(a);
    return uint(b);
  }
  if (report) report_bad_value(pc.node_id, BAD_RANGE, t, uint(a), uint(b), pc.n_kv);
  return 0u;
}

