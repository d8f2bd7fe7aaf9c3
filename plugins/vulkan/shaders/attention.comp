#version 450
// ATTENTION: dst[:, h, t] = sum_{j < visible[t]} softmax_j(scale * q . k_j) v_j
// with q = Q[:, h, t], k_j = K[:, j, g], v_j = V[:, j, g], g = h / group.
//
// One workgroup per (h, t) (flat group = t * H + h). Keys go in chunks of
// the workgroup size with an online softmax, so any visible[t] up to n_kv
// works: invocation l scores key j0 + l (a dot over D) into shared memory;
// every invocation takes the chunk's max, moves the running max m (its
// running sum and accumulators scaled by exp(m_old - m_new)) and adds
// p_j = exp(s_j - m) v_j for its share of Dv (elements l, l + WG, ...),
// accumulated in its own elements of the destination row (no bound on Dv).
// Two barriers per chunk; no subgroup operations.
//
// Bindings: 0 dst F32, 1 Q F32, 2 K, 4 V (F32, F16 or BF16), 5 visible I32.
// visible[t] outside [0, n_kv] is clamped and reported (BAD_VISIBLE, the
// node fails); visible[t] == 0 gives a zero row.
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
} pc;

const uint MAX_WG = 128u;  // dispatch.cpp kAttnWg <= this
shared float s_score[MAX_WG];
shared float s_p[MAX_WG];

// visible[t] clamped to [0, n_kv]; a value outside is reported once.
uint visible_len(uint t, uint l) {
  int vis = int(i_data[(pc.vis_off + t * pc.vis_nb0) >> 2]);
  if (vis >= 0 && uint(vis) <= pc.n_kv) return uint(vis);
  if (l == 0u) report_bad_value(pc.node_id, BAD_VISIBLE, t, uint(vis), vis < 0 ? 0xFFFFFFFFu : 0u, pc.n_kv);
  return vis < 0 ? 0u : pc.n_kv;
}

// scale * Q[:, h, t] . K[:, j, g]
float score(uint qrow, uint krow, uint tk) {
  float s = 0.0;
  for (uint i = 0u; i < pc.n_embd_k; ++i) {
    s += uintBitsToFloat(a_data[(qrow + i * pc.q.nb[0]) >> 2]) * ld_b_elem(tk, krow + i * pc.k.nb[0]);
  }
  return uintBitsToFloat(pc.scale) * s;
}

void main() {
  uint pair = flat_group();
  if (pair >= pc.n_head * pc.n_tok) return;  // whole workgroups: barriers stay uniform
  uint wg = gl_WorkGroupSize.x;
  uint l = gl_LocalInvocationID.x;
  uint h = pair % pc.n_head;
  uint t = pair / pc.n_head;
  uint g = h / pc.group;
  uint tk = pc.types & 0xFFu;
  uint tv = (pc.types >> 8) & 0xFFu;
  uint n = visible_len(t, l);
  uint qrow = pc.q.off + h * pc.q.nb[1] + t * pc.q.nb[2];
  uint krow0 = pc.k.off + g * pc.k.nb[2];
  uint vrow0 = pc.v.off + g * pc.v.nb[2];
  uint drow = pc.d.off + h * pc.d.nb[1] + t * pc.d.nb[2];
  for (uint i = l; i < pc.n_embd_v; i += wg) d_data[(drow + i * pc.d.nb[0]) >> 2] = 0u;
  const float NEG_INF = uintBitsToFloat(0xFF800000u);
  float m = NEG_INF;
  float sum = 0.0;
  for (uint j0 = 0u; j0 < n; j0 += wg) {
    uint nb = min(wg, n - j0);
    if (l < nb) s_score[l] = score(qrow, krow0 + (j0 + l) * pc.k.nb[1], tk);
    barrier();
    float bm = NEG_INF;
    for (uint jj = 0u; jj < nb; ++jj) bm = max(bm, s_score[jj]);
    float c = 1.0;
    if (bm > m) {
      c = exp(m - bm);  // 0 on the first chunk
      m = bm;
    }
    if (l < nb) s_p[l] = exp(s_score[l] - m);
    barrier();
    // s_score is free for the next chunk now; s_p is rewritten only after
    // the next chunk's first barrier, which every reader below has passed.
    sum *= c;
    for (uint jj = 0u; jj < nb; ++jj) sum += s_p[jj];
    for (uint i = l; i < pc.n_embd_v; i += wg) {
      uint o = (drow + i * pc.d.nb[0]) >> 2;
      uint vrow = vrow0 + i * pc.v.nb[0] + j0 * pc.v.nb[1];
      float acc = uintBitsToFloat(d_data[o]) * c;
      for (uint jj = 0u; jj < nb; ++jj) acc += s_p[jj] * ld_c_elem(tv, vrow + jj * pc.v.nb[1]);
      d_data[o] = floatBitsToUint(acc);
    }
  }
  if (n == 0u) return;
  for (uint i = l; i < pc.n_embd_v; i += wg) {
    uint o = (drow + i * pc.d.nb[0]) >> 2;
    d_data[o] = floatBitsToUint(uintBitsToFloat(d_data[o]) / sum);
  }
}
