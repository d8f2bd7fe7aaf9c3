#version 450
// MUL_MAT for short rows (small K, e.g. attention over a head dimension):
// one invocation per output element, a serial dot product over k, no
// shared memory or barriers. Spec constant 1: A's type. Invocations run
// over (m, n, batch) flattened, m fastest.
#include "common.glsl"

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
  for (uint k = 0u; k < K; ++k) {
    acc = fma(ld_a_row_elem(A_TYPE, arow, k, anb0), uintBitsToFloat(ld_b_u32(brow + k * bnb0)), acc);
  }
  st_u32(offset4(0, m, n, i2, i3), floatBitsToUint(acc));
}
