// The ABI 1.2 weight types and IQ4_XS (1.4) in the op tests: random blocks with sane fp16
// scales (there are no quantizers for these types) and a decoder written
// per element from plugin.h's layouts, independently of plugins/common.
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "conformance/reference.hpp"

namespace loom::conformance {

namespace {

uint16_t rd16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// Nibble of element i (0..31) of a 32-element block's 16 quant bytes.
int nibble32(const uint8_t* qs, int i) { return i < 16 ? (qs[i] & 0x0F) : (qs[i - 16] >> 4); }

// Bit i (0..31) of the little-endian word at qh.
int bit32(const uint8_t* qh, int i) { return (qh[i / 8] >> (i % 8)) & 1; }

// Q4_K / Q5_K: scale and min of sub-block j from the 12 packed bytes.
void k_scale_min(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Q3_K: signed scale k (0..15) from the 12 packed bytes: 4 low bits from
// the nibbles of bytes 0..7, 2 high bits from bytes 8..11, minus 32.
int q3_scale(const uint8_t* s, int k) {
  const int low = k < 8 ? (s[k] & 0x0F) : (s[k - 8] >> 4);
  const int high = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
  return (low | (high << 4)) - 32;
}

const int kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Element i of one block.
double decode_elem(loom_type_t t, const uint8_t* b, int i) {
  switch (t) {
    case LOOM_TYPE_Q4_1:
      return f16_to_double(rd16(b)) * nibble32(b + 4, i) + f16_to_double(rd16(b + 2));
    case LOOM_TYPE_Q5_0:
      return f16_to_double(rd16(b)) * (nibble32(b + 6, i) + 16 * bit32(b + 2, i) - 16);
    case LOOM_TYPE_Q5_1:
      return f16_to_double(rd16(b)) * (nibble32(b + 8, i) + 16 * bit32(b + 4, i)) + f16_to_double(rd16(b + 2));
    case LOOM_TYPE_IQ4_NL:
      return f16_to_double(rd16(b)) * kIq4nl[nibble32(b + 2, i)];
    case LOOM_TYPE_Q2_K: {  // scales[16] qs[64] d dmin
      const int h = i / 128, j = (i % 128) / 32, l = i % 32;
      const int q = (b[16 + 32 * h + l] >> (2 * j)) & 3;
      const int s = b[i / 16];
      return f16_to_double(rd16(b + 80)) * (s & 0x0F) * q - f16_to_double(rd16(b + 82)) * (s >> 4);
    }
    case LOOM_TYPE_Q3_K: {  // hmask[32] qs[64] scales[12] d
      const int h = i / 128, j = (i % 128) / 32, l = i % 32;
      const int low = (b[32 + 32 * h + l] >> (2 * j)) & 3;
      const int high = (b[l] >> (4 * h + j)) & 1;
      return f16_to_double(rd16(b + 108)) * q3_scale(b + 96, i / 16) * (low - (high ? 0 : 4));
    }
    case LOOM_TYPE_Q4_K:    // d dmin scales[12] qs[128]
    case LOOM_TYPE_Q5_K: {  // d dmin scales[12] qh[32] qs[128]
      const bool five = t == LOOM_TYPE_Q5_K;
      const int j = i / 32, l = i % 32;
      const uint8_t byte = b[(five ? 48 : 16) + 32 * (i / 64) + l];
      int q = (i % 64) < 32 ? (byte & 0x0F) : (byte >> 4);
      if (five) q += 16 * ((b[16 + l] >> j) & 1);
      int sc, m;
      k_scale_min(b + 4, j, &sc, &m);
      return f16_to_double(rd16(b)) * sc * q - f16_to_double(rd16(b + 2)) * m;
    }
    case LOOM_TYPE_Q6_K: {  // ql[128] qh[64] scales[16] d
      const int h = i / 128, t4 = (i % 128) / 32, l = i % 32;
      const uint8_t lb = b[64 * h + 32 * (t4 % 2) + l];
      const int low = t4 < 2 ? (lb & 0x0F) : (lb >> 4);
      const int high = (b[128 + 32 * h + l] >> (2 * t4)) & 3;
      const auto sc = static_cast<int8_t>(b[192 + i / 16]);
      return f16_to_double(rd16(b + 208)) * sc * ((low | (high << 4)) - 32);
    }
    case LOOM_TYPE_IQ4_XS: {  // d scales_h scales_l[4] qs[128]
      const int s = i / 32, l = i % 32;
      const int ls = ((b[4 + s / 2] >> (4 * (s % 2))) & 0x0F) | (((rd16(b + 2) >> (2 * s)) & 3) << 4);
      return f16_to_double(rd16(b)) * (ls - 32) * kIq4nl[nibble32(b + 8 + 16 * s, l)];
    }
    default:
      throw std::invalid_argument("decode_elem: not a weight type " + type_str(t));
  }
}

// A random f16 with magnitude in [2^e, 2^(e+1)), negative one time in four.
uint16_t rand_f16(std::mt19937& rng, int e) {
  const auto mant = static_cast<uint16_t>(std::uniform_int_distribution<int>(0, 1023)(rng));
  const bool neg = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
  return static_cast<uint16_t>((neg ? 0x8000 : 0) | ((e + 15) << 10) | mant);
}

void put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

}  // namespace

bool is_weight_quant(loom_type_t t) {
  switch (t) {
    case LOOM_TYPE_Q4_1:
    case LOOM_TYPE_Q5_0:
    case LOOM_TYPE_Q5_1:
    case LOOM_TYPE_IQ4_NL:
    case LOOM_TYPE_Q2_K:
    case LOOM_TYPE_Q3_K:
    case LOOM_TYPE_Q4_K:
    case LOOM_TYPE_Q5_K:
    case LOOM_TYPE_Q6_K:
    case LOOM_TYPE_IQ4_XS:
      return true;
    default:
      return false;
  }
}

std::vector<double> decode_weight_blocks(loom_type_t t, const uint8_t* p, int64_t n) {
  const int64_t be = block_elems(t);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = decode_elem(t, p + (i / be) * block_bytes(t), static_cast<int>(i % be));
  return out;
}

void random_weight_blocks(loom_type_t t, int64_t nblocks, std::mt19937& rng, uint8_t* out) {
  // Scales chosen so that elements are mostly within about +-2.
  struct Scales {
    size_t d, m;  // byte offsets of d and of the second scale (dmin / m), or SIZE_MAX
    int ed, em;   // their exponents
  };
  constexpr size_t kNone = static_cast<size_t>(-1);
  Scales s{};
  switch (t) {
    case LOOM_TYPE_Q4_1: s = {0, 2, -4, -1}; break;
    case LOOM_TYPE_Q5_0: s = {0, kNone, -5, 0}; break;
    case LOOM_TYPE_Q5_1: s = {0, 2, -5, -1}; break;
    case LOOM_TYPE_IQ4_NL: s = {0, kNone, -7, 0}; break;
    case LOOM_TYPE_Q2_K: s = {80, 82, -6, -5}; break;
    case LOOM_TYPE_Q3_K: s = {108, kNone, -7, 0}; break;
    case LOOM_TYPE_Q4_K: s = {0, 2, -10, -7}; break;
    case LOOM_TYPE_Q5_K: s = {0, 2, -11, -7}; break;
    case LOOM_TYPE_Q6_K: s = {208, kNone, -12, 0}; break;
    case LOOM_TYPE_IQ4_XS: s = {0, kNone, -13, 0}; break;  // scales_h, scales_l random: (ls - 32) up to 32
    default: throw std::invalid_argument("random_weight_blocks: not a weight type " + type_str(t));
  }
  const size_t bb = block_bytes(t);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t k = 0; k < nblocks; ++k) {
    uint8_t* b = out + static_cast<size_t>(k) * bb;
    for (size_t j = 0; j < bb; ++j) b[j] = static_cast<uint8_t>(byte(rng));
    put16(b + s.d, rand_f16(rng, s.ed));
    if (s.m != kNone) put16(b + s.m, rand_f16(rng, s.em));
  }
}

}  // namespace loom::conformance
