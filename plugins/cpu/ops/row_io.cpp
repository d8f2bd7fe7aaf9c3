// Row and element access shared by the kernels: every read and write goes
// through the tensor's byte strides, so any view layout works.
#include <cstring>

#include "common/fp16.h"
#include "common/quant.h"
#include "common/type_traits.h"
#include "ops/ops.h"

#ifdef __F16C__
#include <immintrin.h>
#endif

namespace loom::cpu {

namespace {

#ifdef __F16C__
// Contiguous F16 rows converted 8 at a time (F16C: exact widening; narrowing
// rounds to nearest even, NaN stays a quiet NaN with its top payload bits,
// the same bits as common::f32_to_f16), the tail one by one.
void f16_to_f32_lanes(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  }
  for (; i < n; ++i) out[i] = common::f16_to_f32(in[i]);
}

void f32_to_f16_lanes(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  for (; i < n; ++i) out[i] = common::f32_to_f16(in[i]);
}

#ifdef __AVX2__
// Contiguous F32 values into Q8_0 blocks (SET_ROWS into an 8-bit KV cache,
// CPY to Q8_0), 8 lanes at a time with the same bits as
// common::quantize_block_q8_0: d = max|x| / 127 (kept as F16, nearest
// even), q = roundf(x / d) (ties away from zero: trunc(v + copysign(0.5 -
// 2^-25, v)), exact for |v| <= 127). A block holding a NaN goes through the
// scalar reference.
void f32_to_q8_0_blocks(const float* in, loom_block_q8_0_t* out, int64_t n_blocks) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 half = _mm256_set1_ps(0.49999997f);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* x = in + b * LOOM_QK8_0;
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps(), nan = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(x + 8 * j);
      amax = _mm256_max_ps(amax, _mm256_and_ps(v[j], abs_mask));
      nan = _mm256_or_ps(nan, _mm256_cmp_ps(v[j], v[j], _CMP_UNORD_Q));
    }
    if (_mm256_movemask_ps(nan) != 0) {
      common::from_float_row(LOOM_TYPE_Q8_0, x, out + b, LOOM_QK8_0);
      continue;
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const float d = _mm_cvtss_f32(m) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[b].d = common::f32_to_f16(d);
    const __m256 idv = _mm256_set1_ps(id);
    __m256i q[4];
    for (int j = 0; j < 4; ++j) {
      const __m256 t = _mm256_mul_ps(v[j], idv);
      const __m256 r = _mm256_add_ps(t, _mm256_or_ps(half, _mm256_andnot_ps(abs_mask, t)));  // copysign(half, t)
      q[j] = _mm256_cvttps_epi32(r);
    }
    const __m256i q01 = _mm256_packs_epi32(q[0], q[1]);
    const __m256i q23 = _mm256_packs_epi32(q[2], q[3]);
    const __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q01, q23), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].qs), q8);
  }
}
#endif
#endif

}  // namespace

float load_elem(int32_t type, const char* p) {
  switch (type) {
    case LOOM_TYPE_F32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case LOOM_TYPE_F16:
    case LOOM_TYPE_BF16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return type == LOOM_TYPE_F16 ? common::f16_to_f32(h) : common::bf16_to_f32(h);
    }
    case LOOM_TYPE_I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return static_cast<float>(v);
    }
    case LOOM_TYPE_I64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return static_cast<float>(v);
    }
    default:
      return 0.0f;  // quantized types are read per block (load_row)
  }
}

void store_elem(int32_t type, char* p, float v) {
  switch (type) {
    case LOOM_TYPE_F32:
      std::memcpy(p, &v, 4);
      break;
    case LOOM_TYPE_F16: {
      const uint16_t h = common::f32_to_f16(v);
      std::memcpy(p, &h, 2);
      break;
    }
    case LOOM_TYPE_BF16: {
      const uint16_t h = common::f32_to_bf16(v);
      std::memcpy(p, &h, 2);
      break;
    }
    default:
      break;  // supports_op admits only float destinations here
  }
}

void load_row(const loom_tensor_t* t, int64_t i1, int64_t i2, int64_t i3, float* out) {
  const common::TypeTraits& tr = common::type_traits(t->type);
  const char* row = row_ptr(t, i1, i2, i3);
  const int64_t nblocks = t->ne[0] / tr.block_size;
  if (t->nb[0] == tr.type_size) {
#ifdef __F16C__
    if (t->type == LOOM_TYPE_F16) {
      f16_to_f32_lanes(reinterpret_cast<const uint16_t*>(row), out, t->ne[0]);
      return;
    }
#endif
    common::to_float_row(t->type, row, out, t->ne[0]);
    return;
  }
  // Strided row: one element (or block) at a time.
  for (int64_t b = 0; b < nblocks; ++b) {
    common::to_float_row(t->type, row + b * static_cast<int64_t>(t->nb[0]), out + b * tr.block_size,
                         tr.block_size);
  }
}

void store_row(const loom_tensor_t* t, int64_t i1, int64_t i2, int64_t i3, const float* in) {
  const common::TypeTraits& tr = common::type_traits(t->type);
  char* row = row_ptr(t, i1, i2, i3);
  const int64_t nblocks = t->ne[0] / tr.block_size;
  if (t->nb[0] == tr.type_size) {
#ifdef __F16C__
    if (t->type == LOOM_TYPE_F16) {
      f32_to_f16_lanes(in, reinterpret_cast<uint16_t*>(row), t->ne[0]);
      return;
    }
#endif
#if defined(__AVX2__) && defined(__F16C__)
    if (t->type == LOOM_TYPE_Q8_0) {
      f32_to_q8_0_blocks(in, reinterpret_cast<loom_block_q8_0_t*>(row), nblocks);
      return;
    }
#endif
    common::from_float_row(t->type, in, row, t->ne[0]);
    return;
  }
  for (int64_t b = 0; b < nblocks; ++b) {
    common::from_float_row(t->type, in + b * tr.block_size, row + b * static_cast<int64_t>(t->nb[0]),
                           tr.block_size);
  }
}

int64_t load_index(const loom_tensor_t* t, int64_t i0, int64_t i1, int64_t i2) {
  const char* p = elem_ptr(t, i0, i1, i2, 0);
  if (t->type == LOOM_TYPE_I64) {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace loom::cpu
