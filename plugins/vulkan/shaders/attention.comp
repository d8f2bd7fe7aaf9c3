#version 450
// ATTENTION: dst[:, h, t] = sum_{j < visible[t]} softmax_j(scale * q . k_j) v_j
// with q = Q[:, h, t], k_j = K[:, j, g], v_j = V[:, j, g], g = h / group.
//
// Keys go in chunks with an online softmax, so any visible[t] up to n_kv
// works with fixed arrays: a chunk's scores first, then the running max m
// moves to the chunk's max (running sum and accumulators scaled by
// exp(m_old - m_new)) and p_j = exp(s_j - m) v_j is added. Accumulators live
// in the destination row itself (no bound on Dv); no subgroup operations.
//
// Default: one workgroup per (h, t) (flat group = t * H + h); invocation l
// scores key j0 + l into shared memory, every invocation adds the chunk for
// its share of Dv (elements l, l + WG, ...); two barriers per chunk.
// LOOM_ROWS (attention_rows, CPU implementations): one invocation per
// (h, t), chunks of ROWS_CHUNK keys in private memory, no barriers (on
// lavapipe a workgroup's barriers and idle lanes cost more than they share).
//
// LOOM_SPLIT (attention_split / attention_rows_split; flash-decoding): the
// visible keys of each (h, t) are cut into n_split ranges, one workgroup
// (or invocation) each; a range's unnormalised accumulators, its running
// max and sum go to scratch rows of Dv + 2 floats (pc.d describes them),
// and attention_combine.comp merges the ranges into the result. More
// workgroups per query row for long-KV decode, and on lavapipe fewer loop
// iterations per invocation.
//
// Inner loops take four elements per iteration: lavapipe ends every loop of
// an invocation after 65535 iterations in all, so dispatch.cpp
// (attention_loops) counts this file's loop iterations per invocation and
// refuses nodes over its budget there; keep the two in step.
//
// Bindings: 0 dst F32, 1 Q F32, 2 K, 4 V (F32, F16 or BF16), 5 visible I32.
// visible[t] outside [0, n_kv] is clamped and reported (BAD_VISIBLE, the
// node fails); visible[t] == 0 gives a zero row. The ranges form (ABI 1.4,
// pc.vis_nb1 != 0): query t's keys are rows [visible[0, t], visible[1, t])
// (several sequences in one cache); a range outside [0, n_kv] is reported
// (BAD_RANGE) and read as empty.
#include "attention.glsl"

// scale * Q[:, h, t] . K[:, j, g]
float score(uint qrow, uint krow, uint tk) {
  uint qs = pc.q.nb[0];
  uint ks = pc.k.nb[0];
  float s = 0.0;
  uint i = 0u;
  for (; i + 4u <= pc.n_embd_k; i += 4u) {
    uint qo = qrow + i * qs;
    uint ko = krow + i * ks;
    s += uintBitsToFloat(a_data[qo >> 2]) * ld_b_elem(tk, ko) +
         uintBitsToFloat(a_data[(qo + qs) >> 2]) * ld_b_elem(tk, ko + ks) +
         uintBitsToFloat(a_data[(qo + 2u * qs) >> 2]) * ld_b_elem(tk, ko + 2u * ks) +
         uintBitsToFloat(a_data[(qo + 3u * qs) >> 2]) * ld_b_elem(tk, ko + 3u * ks);
  }
  for (; i < pc.n_embd_k; ++i) s += uintBitsToFloat(a_data[(qrow + i * qs) >> 2]) * ld_b_elem(tk, krow + i * ks);
  return uintBitsToFloat(pc.scale) * s;
}

// Byte offsets of the rows of query pair (h, t): Q, K and V of row 0 of
// its KV head, the result.
struct Rows {
  uint q, k, v, d;
};
Rows rows_of(uint h, uint t, uint s) {
  uint g = h / pc.group;
  return Rows(pc.q.off + h * pc.q.nb[1] + t * pc.q.nb[2], pc.k.off + g * pc.k.nb[2],
              pc.v.off + g * pc.v.nb[2], pc.d.off + h * pc.d.nb[1] + t * pc.d.nb[2] + s * (pc.n_embd_v + 2u) * 4u);
}

#ifdef LOOM_SPLIT
// Keys [jb, je) of range s of the n visible ones.
void key_range(uint n, uint s, out uint jb, out uint je) {
  uint per = (n + pc.n_split - 1u) / pc.n_split;
  jb = min(n, s * per);
  je = min(n, jb + per);
}
// The range's running max and sum after its accumulators (scratch row).
void store_max_sum(Rows r, float m, float sum) {
  d_data[(r.d >> 2) + pc.n_embd_v] = floatBitsToUint(m);
  d_data[(r.d >> 2) + pc.n_embd_v + 1u] = floatBitsToUint(sum);
}
#else
void key_range(uint n, uint s, out uint jb, out uint je) {
  jb = 0u;
  je = n;
}
#endif

#ifdef LOOM_ROWS
const uint ROWS_CHUNK = 32u;  // dispatch.cpp kAttnRowsChunk
float s_p[ROWS_CHUNK];        // private: this invocation's chunk weights
#else
const uint MAX_WG = 128u;  // dispatch.cpp kAttnWg <= this
shared float s_score[MAX_WG];
shared float s_p[MAX_WG];  // the chunk's weights, one per invocation
#endif

// Result element i of r: scaled by c, plus sum_jj s_p[jj] V[i, j0 + jj].
void add_chunk(Rows r, uint i, float c, uint j0, uint nb, uint tv) {
  uint o = (r.d + i * pc.d.nb[0]) >> 2;
  uint vs = pc.v.nb[1];
  uint vrow = r.v + i * pc.v.nb[0] + j0 * vs;
  float acc = uintBitsToFloat(d_data[o]) * c;
  uint jj = 0u;
  for (; jj + 4u <= nb; jj += 4u) {
    uint vo = vrow + jj * vs;
    acc += s_p[jj] * ld_c_elem(tv, vo) + s_p[jj + 1u] * ld_c_elem(tv, vo + vs) +
           s_p[jj + 2u] * ld_c_elem(tv, vo + 2u * vs) + s_p[jj + 3u] * ld_c_elem(tv, vo + 3u * vs);
  }
  for (; jj < nb; ++jj) acc += s_p[jj] * ld_c_elem(tv, vrow + jj * vs);
  d_data[o] = floatBitsToUint(acc);
}

void divide_row(Rows r, uint first, uint step, float sum) {
  for (uint i = first; i < pc.n_embd_v; i += step) {
    uint o = (r.d + i * pc.d.nb[0]) >> 2;
    d_data[o] = floatBitsToUint(uintBitsToFloat(d_data[o]) / sum);
  }
}

#ifdef LOOM_ROWS
void main() {
#ifdef LOOM_SPLIT
  uint idx = flat_index();
  uint s = idx % pc.n_split;
  uint pair = idx / pc.n_split;
#else
  uint s = 0u;
  uint pair = flat_index();
#endif
  if (pair >= pc.n_head * pc.n_tok) return;
  uint h = pair % pc.n_head;
  uint t = pair / pc.n_head;
  uint tk = pc.types & 0xFFu;
  uint tv = (pc.types >> 8) & 0xFFu;
  uint first;
  uint n = visible_rows(t, h == 0u && s == 0u, first) - first;
  uint jb, je;
  key_range(n, s, jb, je);
  jb += first;
  je += first;
  Rows r = rows_of(h, t, s);
  for (uint i = 0u; i < pc.n_embd_v; ++i) d_data[(r.d + i * pc.d.nb[0]) >> 2] = 0u;
  float m = neg_inf();
  float sum = 0.0;
  for (uint j0 = jb; j0 < je; j0 += ROWS_CHUNK) {
    uint nb = min(ROWS_CHUNK, je - j0);
    float bm = neg_inf();
    for (uint jj = 0u; jj < nb; ++jj) {
      s_p[jj] = score(r.q, r.k + (j0 + jj) * pc.k.nb[1], tk);
      bm = max(bm, s_p[jj]);
    }
    float c = 1.0;
    if (bm > m) {
      c = exp(m - bm);  // 0 on the first chunk
      m = bm;
    }
    sum *= c;
    for (uint jj = 0u; jj < nb; ++jj) {
      s_p[jj] = exp(s_p[jj] - m);
      sum += s_p[jj];
    }
    for (uint i = 0u; i < pc.n_embd_v; ++i) add_chunk(r, i, c, j0, nb, tv);
  }
#ifdef LOOM_SPLIT
  store_max_sum(r, m, sum);
#else
  if (n != 0u) divide_row(r, 0u, 1u, sum);
#endif
}

#else
// Max of s_score[0, nb), four per iteration.
float chunk_max(uint nb) {
  float bm = neg_inf();
  uint jj = 0u;
  for (; jj + 4u <= nb; jj += 4u)
    bm = max(max(bm, s_score[jj]), max(max(s_score[jj + 1u], s_score[jj + 2u]), s_score[jj + 3u]));
  for (; jj < nb; ++jj) bm = max(bm, s_score[jj]);
  return bm;
}

void main() {
#ifdef LOOM_SPLIT
  uint s = flat_group() % pc.n_split;
  uint pair = flat_group() / pc.n_split;
#else
  uint s = 0u;
  uint pair = flat_group();
#endif
  if (pair >= pc.n_head * pc.n_tok) return;  // whole workgroups: barriers stay uniform
  uint wg = gl_WorkGroupSize.x;
  uint l = gl_LocalInvocationID.x;
  uint h = pair % pc.n_head;
  uint t = pair / pc.n_head;
  uint tk = pc.types & 0xFFu;
  uint tv = (pc.types >> 8) & 0xFFu;
  uint first;
  uint n = visible_rows(t, l == 0u && s == 0u, first) - first;
  uint jb, je;
  key_range(n, s, jb, je);
  jb += first;
  je += first;
  Rows r = rows_of(h, t, s);
  for (uint i = l; i < pc.n_embd_v; i += wg) d_data[(r.d + i * pc.d.nb[0]) >> 2] = 0u;
  float m = neg_inf();
  float part = 0.0;  // this invocation's keys' share of the running sum
  for (uint j0 = jb; j0 < je; j0 += wg) {
    uint nb = min(wg, je - j0);
    if (l < nb) s_score[l] = score(r.q, r.k + (j0 + l) * pc.k.nb[1], tk);
    barrier();
    float bm = chunk_max(nb);
    float c = 1.0;
    if (bm > m) {
      c = exp(m - bm);  // 0 on the first chunk
      m = bm;
    }
    part *= c;
    if (l < nb) {
      float p = exp(s_score[l] - m);
      s_p[l] = p;
      part += p;
    }
    barrier();
    // s_score is free for the next chunk now; s_p is rewritten only after
    // the next chunk's first barrier, which every reader below has passed.
    for (uint i = l; i < pc.n_embd_v; i += wg) add_chunk(r, i, c, j0, nb, tv);
  }
#ifndef LOOM_SPLIT
  if (n == 0u) return;  // uniform: the whole workgroup leaves
#endif
  // The running sum: the invocations' shares added in a tree (wg a power of 2).
  s_score[l] = part;
  barrier();
  for (uint st = wg / 2u; st > 0u; st >>= 1) {
    if (l < st) s_score[l] += s_score[l + st];
    barrier();
  }
#ifdef LOOM_SPLIT
  if (l == 0u) store_max_sum(r, m, s_score[0]);
#else
  divide_row(r, l, wg, s_score[0]);
#endif
}
#endif
