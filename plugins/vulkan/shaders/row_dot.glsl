// Row of A (type a_type, at byte arow, blocks or elements anb0 bytes apart)
// dotted with a row of B (f32 at byte brow, elements bnb0 bytes apart) over
// K elements, serially in one invocation: mul_mat_rows.comp and the sparse
// products (sparse.comp). Quantized A is read in place a chunk of 32
// elements at a time (quant.glsl): one loop iteration per chunk, so a row
// of K costs K / 32 of lavapipe's loop budget. Include after common.glsl and
// quant.glsl.
float row_dot(uint a_type, uint arow, uint anb0, uint brow, uint bnb0, uint K) {
  float acc = 0.0;
  if ((a_type == TYPE_Q8_0 || a_type == TYPE_Q4_0) && bnb0 == 4u) {
    // Whole blocks: quant words and B as vec4.
    for (uint blk = 0u; blk < K / 32u; ++blk) acc += block_dot(a_type, arow + blk * anb0, (brow >> 2) + blk * 32u);
  } else if (is_block_type(a_type)) {
    // Chunks of 32 (K-quants: 8 per super-block), B contiguous or strided.
    uint cpb = block_elems(a_type) / 32u;
    for (uint ch = 0u; ch < K / 32u; ++ch) {
      uint b = arow + (ch / cpb) * anb0;
      if (bnb0 == 4u) {
        acc += chunk_dot(a_type, b, ch % cpb, (brow >> 2) + ch * 32u);
      } else {
        float x[32];
        dq_chunk(a_type, b, ch % cpb, x);
        uint bo = brow + ch * 32u * bnb0;
        [[unroll]] for (uint i = 0u; i < 32u; ++i) acc = fma(x[i], uintBitsToFloat(ld_b_u32(bo + i * bnb0)), acc);
      }
    }
  } else if (a_type == TYPE_F32 && anb0 == 4u && bnb0 == 4u && (K & 3u) == 0u) {
    uint aw = arow >> 2;
    uint bw = brow >> 2;
    for (uint k = 0u; k < K; k += 4u) {
      vec4 av = vec4(uintBitsToFloat(a_data[aw + k]), uintBitsToFloat(a_data[aw + k + 1u]),
                     uintBitsToFloat(a_data[aw + k + 2u]), uintBitsToFloat(a_data[aw + k + 3u]));
      acc += dot(av, ld_b_vec4(bw + k));
    }
  } else {
    for (uint k = 0u; k < K; ++k) {
      acc = fma(ld_a_row_elem(a_type, arow, k, anb0), uintBitsToFloat(ld_b_u32(brow + k * bnb0)), acc);
    }
  }
  return acc;
}
