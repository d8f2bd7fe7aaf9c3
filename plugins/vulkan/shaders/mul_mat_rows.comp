#version 450
// MUL_MAT for short rows (small K, e.g. attention over a head dimension):
// one invocation per output element, a serial dot product over k, no
// shared memory or barriers (every matmul on CPU implementations, where
// barriers cost more than they share). Spec constant 1: A's type.
// Invocations run over (m, n, batch) flattened, m fastest. Quantized A is
// read in place a chunk of 32 elements at a time (quant.glsl): one loop
// iteration per chunk, so a row of K costs K / 32 of lavapipe's loop budget.
#include "common.glsl"
#include "quant.glsl"

layout(constant_id = 1) const uint A_TYPE = 0u;

void main() {
  uint K = pc.t[1].ne[0];
  uint M = pc.t[1].ne[1];
  uint N = pc.t[2].ne[1];
  uint i = flat_index();
  uint m = i % M;
  uint n = (i / M) % N;
  uint batch = i / (M * N);
  if (batch >= pc.t[2].ne[2] * pc.t[2].ne[3]) return;
  uint i2 = batch % pc.t[2].ne[2];
  uint i3 = batch / pc.t[2].ne[2];
  uint a2 = i2 / (pc.t[2].ne[2] / pc.t[1].ne[2]);
  uint a3 = i3 / (pc.t[2].ne[3] / pc.t[1].ne[3]);
  uint arow = offset4(1, 0u, m, a2, a3);
  uint brow = offset4(2, 0u, n, i2, i3);
  uint anb0 = pc.t[1].nb[0];
  uint bnb0 = pc.t[2].nb[0];
  float acc = 0.0;
  if ((A_TYPE == TYPE_Q8_0 || A_TYPE == TYPE_Q4_0) && bnb0 == 4u) {
    // Whole blocks: quant words and B as vec4.
    for (uint blk = 0u; blk < K / 32u; ++blk) acc += block_dot(A_TYPE, arow + blk * anb0, (brow >> 2) + blk * 32u);
  } else if (is_block_type(A_TYPE)) {
    // Chunks of 32 (K-quants: 8 per super-block), B contiguous or strided.
    uint cpb = block_elems(A_TYPE) / 32u;
    for (uint ch = 0u; ch < K / 32u; ++ch) {
      uint b = arow + (ch / cpb) * anb0;
      if (bnb0 == 4u) {
        acc += chunk_dot(A_TYPE, b, ch % cpb, (brow >> 2) + ch * 32u);
      } else {
        float x[32];
        dq_chunk(A_TYPE, b, ch % cpb, x);
        uint bo = brow + ch * 32u * bnb0;
        [[unroll]] for (uint i = 0u; i < 32u; ++i) acc = fma(x[i], uintBitsToFloat(ld_b_u32(bo + i * bnb0)), acc);
      }
    }
  } else if (A_TYPE == TYPE_F32 && anb0 == 4u && bnb0 == 4u && (K & 3u) == 0u) {
    uint aw = arow >> 2;
    uint bw = brow >> 2;
    for (uint k = 0u; k < K; k += 4u) {
      vec4 av = vec4(uintBitsToFloat(a_data[aw + k]), uintBitsToFloat(a_data[aw + k + 1u]),
                     uintBitsToFloat(a_data[aw + k + 2u]), uintBitsToFloat(a_data[aw + k + 3u]));
      acc += dot(av, ld_b_vec4(bw + k));
    }
  } else {
    for (uint k = 0u; k < K; ++k) {
      acc = fma(ld_a_row_elem(A_TYPE, arow, k, anb0), uintBitsToFloat(ld_b_u32(brow + k * bnb0)), acc);
    }
  }
  st_u32(offset4(0, m, n, i2, i3), floatBitsToUint(acc));
}
