#version 450
// ADD, SUB, MUL, DIV: dst = src0 op src1, src1 broadcast by index modulo its
// extents (ggml's repeat rule). One invocation per element; f32 arithmetic.
// p[1]: loom op id.
#include "common.glsl"

void main() {
  uint i = flat_index();
  if (i >= nelems(0)) return;
  uint i0 = i % pc.t[0].ne[0];
  uint r = i / pc.t[0].ne[0];
  uint i1 = r % pc.t[0].ne[1];
  uint i2 = (r / pc.t[0].ne[1]) % pc.t[0].ne[2];
  uint i3 = r / (pc.t[0].ne[1] * pc.t[0].ne[2]);
  float x = ld_a_elem(type_a(), offset4(1, i0, i1, i2, i3));
  float y = ld_b_elem(type_b(), offset4(2, i0 % pc.t[2].ne[0], i1 % pc.t[2].ne[1], i2 % pc.t[2].ne[2],
                                        i3 % pc.t[2].ne[3]));
  uint op = pc.p[1];
  float v = op == 6u ? x + y : op == 7u ? x - y : op == 8u ? x * y : x / y;
  st_elem(type_d(), offset4(0, i0, i1, i2, i3), v);
}
