#version 450
// ROPE, normal (pairs 2i, 2i+1) and neox (pairs i, i + n_dims/2) modes. One
// invocation per rotated pair or passed-through element of a row, so a pair
// is read and written by the same invocation (safe in place).
// p[1]: n_dims | mode << 16; p[2]: freq_scale (f32 bits); p[3..4]: the
// double r = freq_base^(-2/n_dims) (low, high words), computed on the host.
// With LOOM_F64 theta = pos * freq_scale * r^i is formed in double and
// reduced modulo 2 pi before the f32 sin/cos; without, all in f32 (the
// host then passes r as f32 bits in p[3]).
// Frequency factors (the optional src2, ABI 1.2): p[1] bit 24 set, the
// F32 factors bound at binding 4, theta_i /= factor_i. The positions (t[2])
// are a vector whose nb[1] and nb[2] the shader never reads: the host puts
// the factors' byte offset there (nb[1]) and their element stride (nb[2]).
#ifdef LOOM_F64
#extension GL_ARB_gpu_shader_fp64 : require
#endif
#include "common.glsl"

layout(std430, binding = 4) readonly buffer BufC { uint c_data[]; };

void main() {
  uint n_dims = pc.p[1] & 0xFFFFu;
  bool neox = ((pc.p[1] >> 16) & 0xFFu) == 2u;
  bool factors = (pc.p[1] & (1u << 24)) != 0u;
  uint half_ = n_dims / 2u;
  uint ne0 = pc.t[1].ne[0];
  uint per_row = half_ + (ne0 - n_dims);
  uint i = flat_index();
  uint row = i / per_row;
  if (row >= nrows(0)) return;
  uint k = i % per_row;
  uint i1 = row % pc.t[1].ne[1];
  uint i2 = (row / pc.t[1].ne[1]) % pc.t[1].ne[2];
  uint i3 = row / (pc.t[1].ne[1] * pc.t[1].ne[2]);
  uint ta = type_a();
  uint td = type_d();
  if (k >= half_) {
    uint j = n_dims + (k - half_);
    st_elem(td, offset4(0, j, i1, i2, i3), ld_a_elem(ta, offset4(1, j, i1, i2, i3)));
    return;
  }
  int pos = int(ld_b_u32(pc.t[2].off + i2 * pc.t[2].nb[0]));
  float freq_scale = uintBitsToFloat(pc.p[2]);
#ifdef LOOM_F64
  double r = packDouble2x32(uvec2(pc.p[3], pc.p[4]));
  double f = 1.0lf;
  double base = r;
  for (uint e = k; e != 0u; e >>= 1) {  // r^k by squaring
    if ((e & 1u) != 0u) f *= base;
    base *= base;
  }
  double theta = double(pos) * double(freq_scale) * f;
  if (factors) theta /= double(uintBitsToFloat(c_data[(pc.t[2].nb[1] + k * pc.t[2].nb[2]) >> 2]));
  const double TWO_PI = 6.283185307179586476925286766559lf;
  theta -= TWO_PI * floor(theta / TWO_PI);
  float th = float(theta);
#else
  float rf = uintBitsToFloat(pc.p[3]);  // this variant gets r as f32 in p[3]
  float th = float(pos) * freq_scale * pow(rf, float(k));
  if (factors) th /= uintBitsToFloat(c_data[(pc.t[2].nb[1] + k * pc.t[2].nb[2]) >> 2]);
#endif
  float c = cos(th);
  float s = sin(th);
  uint j0 = neox ? k : 2u * k;
  uint j1 = neox ? k + half_ : 2u * k + 1u;
  float x0 = ld_a_elem(ta, offset4(1, j0, i1, i2, i3));
  float x1 = ld_a_elem(ta, offset4(1, j1, i1, i2, i3));
  st_elem(td, offset4(0, j0, i1, i2, i3), x0 * c - x1 * s);
  st_elem(td, offset4(0, j1, i1, i2, i3), x0 * s + x1 * c);
}
