#version 450
// MUL_MAT for short rows (small K, e.g. attention over a head dimension):
// one invocation per output element, a serial dot product over k
// (row_dot.glsl), no shared memory or barriers (every matmul on CPU
// implementations, where barriers cost more than they share). Spec
// constant 1: A's type. Invocations run over (m, n, batch) flattened, m
// fastest. LOOM_ID: MUL_MAT_ID (mul_mat_id.glsl).
#include "common.glsl"
#include "quant.glsl"
#include "row_dot.glsl"
#ifdef LOOM_ID
#include "mul_mat_id.glsl"
#endif

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
#ifdef LOOM_ID
  uint a2 = expert_of(i2, i3);
  if (a2 == NO_EXPERT) return;
  uint a3 = 0u;
#else
  uint a2 = i2 / (pc.t[2].ne[2] / pc.t[1].ne[2]);
  uint a3 = i3 / (pc.t[2].ne[3] / pc.t[1].ne[3]);
#endif
  float acc = row_dot(A_TYPE, offset4(1, 0u, m, a2, a3), pc.t[1].nb[0], offset4(2, 0u, n, i2, i3), pc.t[2].nb[0], K);
  st_u32(offset4(0, m, n, i2, i3), floatBitsToUint(acc));
}
