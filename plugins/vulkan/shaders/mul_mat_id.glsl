// MUL_MAT_ID (ABI 1.5) as a variant (-DLOOM_ID) of the MUL_MAT kernels
// (mul_mat_rows, mul_mat_vec, mul_mat_vec_float, mul_mat_vec_q8). The host
// (ops/mul_mat_id.cpp) presents the product as a batch of U x T
// one-column products: B as [K, 1, U, T] (nb[2] = 0 when every slot reads
// the token's one column) and the result as [M, 1, U, T], so a kernel's
// batch indices (i2, i3) are (slot u, token t) and only A's matrix changes:
// expert ids[u, t] instead of the batch's, so only the chosen experts'
// rows are read. ids (I32) at binding 5 from byte p[3], strides p[4]
// (dim 0) and t[2].nb[1] (dim 1; B's own is unused with one column);
// t[0].nb[1] (unused likewise) carries the node id for the error words.
// Include after common.glsl.
layout(std430, binding = 5) readonly buffer BufIds { uint id_data[]; };

const uint BAD_EXPERT = 3u;  // ids[e[2], e[5]] = e[1] outside [0, e[3])
const uint NO_EXPERT = 0xFFFFFFFFu;

// The expert of slot u of token t, or NO_EXPERT (reported) when the id is
// outside [0, E).
uint expert_of(uint u, uint t) {
  uint e = id_data[(pc.p[3] + u * pc.p[4] + t * pc.t[2].nb[1]) >> 2];
  if (e >= pc.t[1].ne[2]) {
    report_bad_value(pc.t[0].nb[1], BAD_EXPERT, t, e, u, pc.t[1].ne[2]);
    return NO_EXPERT;
  }
  return e;
}
