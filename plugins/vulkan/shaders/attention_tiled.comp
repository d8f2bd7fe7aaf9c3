#version 450
// ATTENTION for prefill, tiled: one workgroup of 128 invocations per block
// of BR = 8 consecutive queries of one head h (flat group = block * H + h).
// The block's Q rows sit in shared memory; the keys the block sees (the
// union of its queries' rows) go in chunks of BC = 16: K's chunk is staged
// once into shared memory for all 8 queries (attention.comp reads every
// key once per query), each invocation scores one (query, key) pair, one
// invocation per query moves that query's running max and sum (the online
// softmax of attention.comp) and turns its scores into weights, then V's
// chunk is staged into the same memory and each invocation adds the chunk
// to its 8 result elements of one query (dims c, c + 16, ... < Dv), kept
// in registers until the end. Keys outside a query's rows weigh nothing.
// D and Dv at most DMAX (dispatch.cpp: attention_kernel picks this kernel
// only then, for more than 8 queries per head on a GPU); shared memory
// 8 x 128 + 16 x 129 + 8 x 17 + 24 floats = 12.9 KiB.
//
// Rows, errors and the ranges form as attention.comp: visible[t] outside
// [0, n_kv] is clamped and reported (BAD_VISIBLE), a bad pair of the ranges
// form is reported (BAD_RANGE) and read as empty, a query with no key rows
// gets a zero row.
//
// lavapipe ends an invocation's loops after 65535 iterations in all:
// dispatch.cpp (attention_loops, tiled) counts this file's loops; keep the
// two in step.
#extension GL_EXT_control_flow_attributes : enable
#include "attention.glsl"

const uint BR = 8u;     // queries per workgroup
const uint BC = 16u;    // keys per chunk
const uint DMAX = 128u; // D and Dv at most
const uint WG = BR * BC;  // dispatch.cpp kAttnTiledWg
const uint NACC = DMAX / BC;  // result elements per invocation

shared float s_q[BR][DMAX];
shared float s_kv[BC][DMAX + 1u];  // K's chunk, then V's (row padded: no bank conflicts)
shared float s_p[BR][BC + 1u];     // scores, then weights
shared float s_c[BR];              // each query's rescale for this chunk
shared uint s_first[BR];           // each query's rows [first, end)
shared uint s_end[BR];

void main() {
  uint g = flat_group();
  uint n_blocks = (pc.n_tok + BR - 1u) / BR;
  if (g >= pc.n_head * n_blocks) return;  // whole workgroups: barriers stay uniform
  uint h = g % pc.n_head;
  uint t0 = (g / pc.n_head) * BR;
  uint l = gl_LocalInvocationID.x;
  uint tk = pc.types & 0xFFu;
  uint tv = (pc.types >> 8) & 0xFFu;
  uint kv = h / pc.group;
  uint k_base = pc.k.off + kv * pc.k.nb[2];
  uint v_base = pc.v.off + kv * pc.v.nb[2];

  if (l < BR) {
    uint t = t0 + l;
    uint first = 0u;
    uint end = 0u;
    if (t < pc.n_tok) end = visible_rows(t, h == 0u, first);
    s_first[l] = first;
    s_end[l] = max(first, end);
  }
  for (uint e = l; e < BR * DMAX; e += WG) {
    uint qi = e / DMAX;
    uint i = e % DMAX;
    uint t = t0 + qi;
    s_q[qi][i] = (t < pc.n_tok && i < pc.n_embd_k)
                     ? uintBitsToFloat(a_data[(pc.q.off + i * pc.q.nb[0] + h * pc.q.nb[1] + t * pc.q.nb[2]) >> 2])
                     : 0.0;
  }
  barrier();
  // The keys any query of the block sees: [lo, hi).
  uint lo = pc.n_kv;
  uint hi = 0u;
  for (uint qi = 0u; qi < BR; ++qi) {
    if (s_end[qi] > s_first[qi]) {
      lo = min(lo, s_first[qi]);
      hi = max(hi, s_end[qi]);
    }
  }
  // This invocation's pair while scoring, and its query and result
  // columns while adding V.
  uint sq = l / BC;
  uint sk = l % BC;
  float acc[NACC];
  [[unroll]] for (uint a = 0u; a < NACC; ++a) acc[a] = 0.0;
  float m = neg_inf();  // the running max and sum of query l (l < BR)
  float sum = 0.0;
  float scale = uintBitsToFloat(pc.scale);
  for (uint j0 = lo; j0 < hi; j0 += BC) {
    // K's chunk.
    for (uint e = l; e < BC * pc.n_embd_k; e += WG) {
      uint jj = e / pc.n_embd_k;
      uint i = e % pc.n_embd_k;
      uint j = j0 + jj;
      s_kv[jj][i] = j < hi ? ld_b_elem(tk, k_base + j * pc.k.nb[1] + i * pc.k.nb[0]) : 0.0;
    }
    barrier();
    {
      uint j = j0 + sk;
      float s = neg_inf();
      if (j >= s_first[sq] && j < s_end[sq]) {
        float dot = 0.0;
        for (uint i = 0u; i < pc.n_embd_k; ++i) dot = fma(s_q[sq][i], s_kv[sk][i], dot);
        s = scale * dot;
      }
      s_p[sq][sk] = s;
    }
    barrier();
    if (l < BR) {
      float bm = neg_inf();
      for (uint jj = 0u; jj < BC; ++jj) bm = max(bm, s_p[l][jj]);
      float c = 1.0;
      if (bm > m) {
        c = exp(m - bm);  // 0 on the query's first keys
        m = bm;
      }
      sum *= c;
      for (uint jj = 0u; jj < BC; ++jj) {
        float p = s_p[l][jj] == neg_inf() ? 0.0 : exp(s_p[l][jj] - m);
        s_p[l][jj] = p;
        sum += p;
      }
      s_c[l] = c;
    }
    // V's chunk (K's is no longer read).
    for (uint e = l; e < BC * pc.n_embd_v; e += WG) {
      uint jj = e / pc.n_embd_v;
      uint i = e % pc.n_embd_v;
      uint j = j0 + jj;
      s_kv[jj][i] = j < hi ? ld_c_elem(tv, v_base + j * pc.v.nb[1] + i * pc.v.nb[0]) : 0.0;
    }
    barrier();
    float c = s_c[sq];
    [[unroll]] for (uint a = 0u; a < NACC; ++a) {
      uint i = sk + BC * a;
      float x = acc[a] * c;
      for (uint jj = 0u; jj < BC; ++jj) x = fma(s_p[sq][jj], s_kv[jj][i], x);
      acc[a] = x;
    }
    barrier();  // s_kv and s_p are rewritten by the next chunk
  }
  if (l < BR) s_c[l] = sum;
  barrier();
  uint t = t0 + sq;
  if (t >= pc.n_tok) return;
  float total = s_c[sq];
  uint drow = pc.d.off + h * pc.d.nb[1] + t * pc.d.nb[2];
  [[unroll]] for (uint a = 0u; a < NACC; ++a) {
    uint i = sk + BC * a;
    if (i < pc.n_embd_v) d_data[(drow + i * pc.d.nb[0]) >> 2] = floatBitsToUint(total > 0.0 ? acc[a] / total : 0.0);
  }
}
