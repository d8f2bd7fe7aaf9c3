// Shared by every loom Vulkan kernel: the bindings, the push-constant block
// (mirrors PushConstants in ops/ops.h), type ids, and loads/stores of every
// element type through plain uint[] storage buffers. Everything is bound as
// uint words and unpacked by hand (16-bit and 8-bit storage features are not
// required); 16-bit and byte stores use atomics on the containing word so
// neighbouring elements written by other invocations are never clobbered.
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

// Bindings: 0 destination, 1 and 2 sources, 3 the stream's error words, 4
// and 5 two more sources (ATTENTION's V and visible; the shaders that use
// them declare them).
layout(std430, binding = 0) buffer BufD { uint d_data[]; };
layout(std430, binding = 1) readonly buffer BufA { uint a_data[]; };
layout(std430, binding = 2) readonly buffer BufB { uint b_data[]; };
layout(std430, binding = 3) buffer BufE { uint e_data[]; };

// One tensor: byte offset in its buffer, extents, byte strides.
struct TensorDesc {
  uint off;
  uint ne[4];
  uint nb[4];
};

#ifndef LOOM_OWN_PUSH_CONSTANTS
// t[0] destination, t[1] first source, t[2] second source; p[0] packs the
// three type ids (byte each), p[1..4] are the op's parameters. A shader with
// a block of its own (attention.comp) defines LOOM_OWN_PUSH_CONSTANTS first
// and gets none of the helpers over pc below.
layout(push_constant, std430) uniform PushConstants {
  TensorDesc t[3];
  uint p[5];
} pc;
#endif

const uint TYPE_F32 = 0u;
const uint TYPE_F16 = 1u;
const uint TYPE_Q4_0 = 2u;
const uint TYPE_Q8_0 = 8u;
const uint TYPE_I32 = 26u;
const uint TYPE_I64 = 27u;
const uint TYPE_BF16 = 30u;

// Flat invocation index over a 2-D grid of 1-D workgroups (grids wider than
// maxComputeWorkGroupCount[0] wrap into y).
uint flat_group() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
uint flat_index() { return flat_group() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; }

#ifndef LOOM_OWN_PUSH_CONSTANTS
uint type_d() { return pc.p[0] & 0xFFu; }
uint type_a() { return (pc.p[0] >> 8) & 0xFFu; }
uint type_b() { return (pc.p[0] >> 16) & 0xFFu; }

uint nrows(uint k) { return pc.t[k].ne[1] * pc.t[k].ne[2] * pc.t[k].ne[3]; }
uint nelems(uint k) { return pc.t[k].ne[0] * nrows(k); }
// Row r (flat over dims 1..3) of tensor k -> byte offset of the row start.
uint row_offset(uint k, uint r) {
  uint i1 = r % pc.t[k].ne[1];
  uint i2 = (r / pc.t[k].ne[1]) % pc.t[k].ne[2];
  uint i3 = r / (pc.t[k].ne[1] * pc.t[k].ne[2]);
  return pc.t[k].off + i1 * pc.t[k].nb[1] + i2 * pc.t[k].nb[2] + i3 * pc.t[k].nb[3];
}
uint offset4(uint k, uint i0, uint i1, uint i2, uint i3) {
  return pc.t[k].off + i0 * pc.t[k].nb[0] + i1 * pc.t[k].nb[1] + i2 * pc.t[k].nb[2] + i3 * pc.t[k].nb[3];
}
#endif

// The quantized types the shaders write (SET_ROWS, CPY from float).
bool is_quant(uint t) { return t == TYPE_Q8_0 || t == TYPE_Q4_0; }

// IEEE half <-> float by hand: exact, subnormals kept, round to nearest even.
float f16_to_f32(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint e = (h >> 10) & 0x1Fu;
  uint m = h & 0x3FFu;
  if (e == 0u) {
    float v = float(m) * (1.0 / 16777216.0);
    return sign != 0u ? -v : v;
  }
  if (e == 31u) return uintBitsToFloat(sign | 0x7F800000u | (m << 13));
  return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
}
uint f32_to_f16(float f) {
  uint x = floatBitsToUint(f);
  uint sign = (x >> 16) & 0x8000u;
  uint e = (x >> 23) & 0xFFu;
  uint m = x & 0x7FFFFFu;
  if (e == 255u) return sign | 0x7C00u | (m != 0u ? 0x200u : 0u);
  int ee = int(e) - 112;
  if (ee >= 31) return sign | 0x7C00u;
  if (ee <= 0) {
    if (ee < -10) return sign;
    uint mm = m | 0x800000u;
    uint shift = uint(14 - ee);
    uint r = mm >> shift;
    uint rem = mm & ((1u << shift) - 1u);
    uint half_ = 1u << (shift - 1u);
    if (rem > half_ || (rem == half_ && (r & 1u) != 0u)) r += 1u;
    return sign | r;
  }
  uint r = (uint(ee) << 10) | (m >> 13);
  uint rem = m & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u) != 0u)) r += 1u;
  return sign | r;
}
float bf16_to_f32(uint h) { return uintBitsToFloat(h << 16); }
uint f32_to_bf16(float f) {
  uint x = floatBitsToUint(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (x >> 16) | 0x40u;  // NaN stays NaN
  return (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
}

// Loads from a source buffer at a byte offset: words, halves, bytes; plain
// elements (quantized rows of A: ld_a_row_elem in quant.glsl).
#define LOOM_DEFINE_LOADS(P, BUF)                                                    \
  uint P##_u32(uint off) { return BUF[off >> 2]; }                                   \
  uint P##_u16(uint off) { return (BUF[off >> 2] >> ((off & 2u) * 8u)) & 0xFFFFu; }  \
  uint P##_u8(uint off) { return (BUF[off >> 2] >> ((off & 3u) * 8u)) & 0xFFu; }     \
  float P##_elem(uint t, uint off) {                                                 \
    if (t == TYPE_F32) return uintBitsToFloat(BUF[off >> 2]);                        \
    if (t == TYPE_F16) return f16_to_f32(P##_u16(off));                              \
    if (t == TYPE_BF16) return bf16_to_f32(P##_u16(off));                            \
    return float(int(BUF[off >> 2]));                                                \
  }

LOOM_DEFINE_LOADS(ld_a, a_data)
LOOM_DEFINE_LOADS(ld_b, b_data)
LOOM_DEFINE_LOADS(ld_d, d_data)

vec4 ld_b_vec4(uint w) {
  return vec4(uintBitsToFloat(b_data[w]), uintBitsToFloat(b_data[w + 1u]),
              uintBitsToFloat(b_data[w + 2u]), uintBitsToFloat(b_data[w + 3u]));
}

// Stores into the destination. 16-bit and byte stores touch only their bits.
void st_u16(uint off, uint v) {
  uint w = off >> 2;
  uint sh = (off & 2u) * 8u;
  atomicAnd(d_data[w], ~(0xFFFFu << sh));
  atomicOr(d_data[w], (v & 0xFFFFu) << sh);
}
void st_u32(uint off, uint v) { d_data[off >> 2] = v; }
void st_elem(uint t, uint off, float v) {
  if (t == TYPE_F32) {
    d_data[off >> 2] = floatBitsToUint(v);
  } else if (t == TYPE_F16) {
    st_u16(off, f32_to_f16(v));
  } else if (t == TYPE_BF16) {
    st_u16(off, f32_to_bf16(v));
  }
}

// Quantize 32 values into the block at byte offset `off` of the destination
// (ggml's reference rounding, as plugins/common/quant.cpp).
void st_block(uint t, uint off, float x[32]) {
  if (t == TYPE_Q8_0) {
    float amax = 0.0;
    for (int j = 0; j < 32; ++j) amax = max(amax, abs(x[j]));
    float d = amax / 127.0;
    float id = d != 0.0 ? 1.0 / d : 0.0;
    st_u16(off, f32_to_f16(d));
    for (int j = 0; j < 32; j += 2) {
      int q0 = int(round(x[j] * id));
      int q1 = int(round(x[j + 1] * id));
      st_u16(off + 2u + uint(j), (uint(q0) & 0xFFu) | ((uint(q1) & 0xFFu) << 8));
    }
  } else {
    float amax = 0.0;
    float mx = 0.0;
    for (int j = 0; j < 32; ++j) {
      if (amax < abs(x[j])) {
        amax = abs(x[j]);
        mx = x[j];
      }
    }
    float d = mx / -8.0;
    float id = d != 0.0 ? 1.0 / d : 0.0;
    st_u16(off, f32_to_f16(d));
    for (int j = 0; j < 16; j += 2) {
      uint q00 = uint(min(15, int(x[j] * id + 8.5)));
      uint q01 = uint(min(15, int(x[j + 16] * id + 8.5)));
      uint q10 = uint(min(15, int(x[j + 1] * id + 8.5)));
      uint q11 = uint(min(15, int(x[j + 17] * id + 8.5)));
      st_u16(off + 2u + uint(j), (q00 | (q01 << 4)) | ((q10 | (q11 << 4)) << 8));
    }
  }
}

// Report a bad value once per submission (the stream's error words, read
// by Stream::finish): e[0] = 1 + node id, e[1..2] the value (low, high
// words), e[3] its limit, e[4] the kind, e[5] where it was read.
const uint BAD_ROW_INDEX = 0u;  // row index outside [0, e[3])
const uint BAD_VISIBLE = 1u;    // visible[e[5]] outside [0, e[3]]
const uint BAD_RANGE = 2u;      // query e[5]'s rows [e[1], e[2]) outside [0, e[3]]
void report_bad_value(uint node_id, uint kind, uint pos, uint lo, uint hi, uint limit) {
  if (atomicCompSwap(e_data[0], 0u, node_id + 1u) == 0u) {
    e_data[1] = lo;
    e_data[2] = hi;
    e_data[3] = limit;
    e_data[4] = kind;
    e_data[5] = pos;
  }
}
void report_bad_index(uint node_id, uint lo, uint hi, uint limit) {
  report_bad_value(node_id, BAD_ROW_INDEX, 0u, lo, hi, limit);
}
