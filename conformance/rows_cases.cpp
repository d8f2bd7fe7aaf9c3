// GET_ROWS (every source type, the ABI 1.2 weight types and IQ4_XS too,
// into F32, broadcast batches, strided sources; IQ4_XS hand-built blocks of
// known values)
// and SET_ROWS (F32 rows into F32/F16/BF16/Q8_0/Q4_0 with I32 or I64
// indices, strided rows), 1 vs 3 threads.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "loom/runtime/ops.hpp"
#include "loom/runtime/types.hpp"
#include "conformance/suite.hpp"

namespace loom::conformance {
namespace {

const loom_type_t kAllTypes[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0};

class RowsTest : public OpTest {
 protected:
  void check_get(loom_type_t t, const Shape& ne, int64_t k, Layout layout) {
    LOOM_TRACE("get_rows " + type_str(t) + " " + shape_str(ne) + " k " + std::to_string(k) + " " +
                 layout_name(layout));
    Operand a = make(t, ne, layout);
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < k * ne[2] * ne[3]; ++i) idx.push_back(rand_int(0, ne[1] - 1));
    Operand ix = input_ints(LOOM_TYPE_I32, {k, ne[2], ne[3], 1}, idx);
    Tensor* out = unwrap(op::get_rows(ctx_, a.t, ix.t), "get_rows");
    // A graph the device declines is not run (harness.hpp: "not claimed").
    LOOM_ASSERT_OK(run_threads({out}));
    const Shape so{ne[0], k, ne[2], ne[3]};
    std::vector<double> ref;
    for_each_index(so, [&](int64_t i0, int64_t i, int64_t j, int64_t l) {
      ref.push_back(a.h.at(i0, static_cast<int64_t>(ix.h.at(i, j, l)), j, l));
    });
    if (!is_weight_quant(t)) {
      // Dequantized and widened values are exact in f32.
      expect_equal(read(out), ref, so, "get_rows result");
      return;
    }
    // The weight types decode in f32 as ggml does (d * scale rounded, then
    // times q, minus dmin * m rounded): a few roundings of terms no larger
    // than the tensor's largest magnitude or so.
    double amax = 0.0;
    for (double v : a.h.values()) amax = std::max(amax, std::fabs(v));
    expect_close(read(out), ref, std::vector<double>(ref.size(), std::ldexp(amax, -20)), so, "get_rows result");
    // And bit for bit the host's (ggml's) f32 decode of each source row.
    const std::vector<uint8_t> got = read_bytes(out);
    std::vector<float> want(static_cast<size_t>(ne[0]));
    int64_t r = 0, bad = 0;
    for (int64_t l = 0; l < ne[3]; ++l)
      for (int64_t j = 0; j < ne[2]; ++j)
        for (int64_t i = 0; i < k; ++i, ++r) {
          const auto src = static_cast<int64_t>(ix.h.at(i, j, l));
          const uint8_t* row = a.h.base->bytes.data() + a.h.offset + static_cast<size_t>(src) * a.h.nb[1] +
                               static_cast<size_t>(j) * a.h.nb[2] + static_cast<size_t>(l) * a.h.nb[3];
          loom::to_float(t, row, want.data(), ne[0]);
          if (std::memcmp(got.data() + static_cast<size_t>(r * ne[0]) * 4, want.data(), want.size() * 4) != 0) ++bad;
        }
    LOOM_EXPECT_EQ(bad, 0) << "rows not ggml's f32 values bit for bit";
  }

  void check_set(loom_type_t t, loom_type_t index_type, const Shape& ne, int64_t k, Layout rows_layout) {
    LOOM_TRACE("set_rows " + type_str(t) + " idx " + type_str(index_type) + " " + shape_str(ne) + " k " +
                 std::to_string(k) + " rows " + layout_name(rows_layout));
    Operand dst = input(t, ne);
    Operand rows = make(LOOM_TYPE_F32, {ne[0], k, ne[2], ne[3]}, rows_layout, -4.0f, 4.0f);
    // Distinct targets per (j, l) so no two rows race for one destination.
    std::vector<int64_t> idx;
    for (int64_t b = 0; b < ne[2] * ne[3]; ++b) {
      std::vector<int64_t> perm(static_cast<size_t>(ne[1]));
      for (int64_t i = 0; i < ne[1]; ++i) perm[i] = i;
      std::shuffle(perm.begin(), perm.end(), rng_);
      idx.insert(idx.end(), perm.begin(), perm.begin() + k);
    }
    Operand ix = input_ints(index_type, {k, ne[2], ne[3], 1}, idx);
    Tensor* out = unwrap(op::set_rows(ctx_, dst.t, rows.t, ix.t), "set_rows");
    LOOM_ASSERT_OK(run_threads({out, dst.t}));
    LOOM_EXPECT_EQ(out->data, dst.t->data);

    // Row by row: set rows hold the new values (one rounding / quantization),
    // the others keep their bytes.
    const std::vector<uint8_t> got = read_bytes(dst.t);
    const size_t rb = row_bytes(t, ne[0]);
    int64_t bad = 0;
    for (int64_t l = 0; l < ne[3]; ++l)
      for (int64_t j = 0; j < ne[2]; ++j)
        for (int64_t r = 0; r < ne[1]; ++r) {
          const size_t off = static_cast<size_t>((l * ne[2] + j) * ne[1] + r) * rb;
          int64_t src_row = -1;
          for (int64_t i = 0; i < k; ++i) {
            if (ix.h.at(i, j, l) == static_cast<double>(r)) src_row = i;
          }
          std::string err;
          if (src_row < 0) {
            if (std::memcmp(got.data() + off, dst.h.base->bytes.data() + off, rb) != 0) err = "untouched row changed";
          } else {
            std::vector<double> want(static_cast<size_t>(ne[0]));
            for (int64_t i0 = 0; i0 < ne[0]; ++i0) want[i0] = rows.h.at(i0, src_row, j, l);
            if (is_quant(t)) {
              for (int64_t b = 0; b < ne[0] / 32 && err.empty(); ++b) {
                err = check_quant_block(t, want.data() + 32 * b, got.data() + off + b * block_bytes(t));
              }
            } else {
              const std::vector<double> v = decode(t, got.data() + off, ne[0]);
              for (int64_t i0 = 0; i0 < ne[0]; ++i0) {
                if (std::fabs(v[i0] - want[i0]) > conv_tol(t, want[i0])) err = "value " + std::to_string(i0);
              }
            }
          }
          if (!err.empty() && bad++ < 5) LOOM_ADD_FAILURE() << "row " << r << " batch " << j << "," << l << ": " << err;
        }
  }
};

LOOM_CASE(RowsTest, GetRowsEveryTypeAndLayout) {
  seed(801);
  int k = 0;
  for (loom_type_t t : kAllTypes) {
    for (Layout l : layouts_for(t)) {
      const int64_t n0 = is_quant(t) ? 64 : (k % 2 ? 17 : 1);
      check_get(t, {n0, 5, k % 3 + 1, k % 2 + 1}, k % 4 + 1, l);
      ++k;
    }
  }
}

LOOM_CASE(RowsTest, GetRowsOfWeightTypes) {
  seed(804);
  int k = 0;
  for (loom_type_t t : {LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_IQ4_NL, LOOM_TYPE_Q2_K,
                        LOOM_TYPE_Q3_K, LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K, LOOM_TYPE_IQ4_XS}) {
    for (Layout l : layouts_for(t)) {
      check_get(t, {2 * block_elems(t), 5, k % 3 + 1, k % 2 + 1}, k % 4 + 1, l);
      ++k;
    }
  }
}

LOOM_CASE(RowsTest, GetRowsOfIq4XsKnownBlocks) {
  // Hand-built IQ4_XS blocks (plugin.h's layout, packed here byte by byte)
  // whose every element is known and exact in f32: d = 0.5 and -2, the 8
  // six-bit scales ls below (decoded as ls - 32; 47 and 63 use both high
  // bits), sub-block s's byte j holding level j (element j) and level 15 - j
  // (element 16 + j). A swapped nibble, scale bit or sub-block shows.
  const int ls[2][8] = {{0, 1, 31, 32, 33, 47, 63, 40}, {63, 62, 17, 2, 48, 16, 5, 35}};
  const uint16_t d_bits[2] = {0x3800, 0xC000};
  const double d_val[2] = {0.5, -2.0};
  const int levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  Operand a = input_values(LOOM_TYPE_IQ4_XS, {256, 2, 1, 1}, {});
  std::vector<double> want_row[2];
  for (int r = 0; r < 2; ++r) {
    uint8_t* b = a.h.base->bytes.data() + 136 * r;
    std::memset(b, 0, 136);
    std::memcpy(b, &d_bits[r], 2);
    uint16_t sh = 0;
    for (int s = 0; s < 8; ++s) {
      b[4 + s / 2] = static_cast<uint8_t>(b[4 + s / 2] | ((ls[r][s] & 0x0F) << (4 * (s % 2))));
      sh = static_cast<uint16_t>(sh | (((ls[r][s] >> 4) & 3) << (2 * s)));
      for (int j = 0; j < 16; ++j) b[8 + 16 * s + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    }
    std::memcpy(b + 2, &sh, 2);
    for (int s = 0; s < 8; ++s)
      for (int e = 0; e < 32; ++e) want_row[r].push_back(d_val[r] * (ls[r][s] - 32) * levels[e < 16 ? e : 31 - e]);
  }
  a.h.base->values = decode(LOOM_TYPE_IQ4_XS, a.h.base->bytes.data(), 512);
  LOOM_EXPECT_EQ(a.h.at(0, 0), 2032.0) << "the suite's own decoder";
  Operand ix = input_ints(LOOM_TYPE_I32, {3, 1, 1, 1}, {1, 0, 1});
  Tensor* out = unwrap(op::get_rows(ctx_, a.t, ix.t), "get_rows");
  LOOM_ASSERT_OK(run_threads({out}));
  std::vector<double> want;
  for (int r : {1, 0, 1}) want.insert(want.end(), want_row[r].begin(), want_row[r].end());
  expect_equal(read(out), want, {256, 3, 1, 1}, "iq4_xs known blocks");
}

LOOM_CASE(RowsTest, GetRowsRepeatsAndIntegerSources) {
  seed(802);
  check_get(LOOM_TYPE_F32, {33, 1, 1, 1}, 7, Layout::kDense);  // every index 0
  std::vector<int64_t> vals;
  for (int i = 0; i < 12; ++i) vals.push_back(rand_int(-1000, 1000));
  Operand a = input_ints(LOOM_TYPE_I32, {3, 4, 1, 1}, vals);
  Operand ix = input_ints(LOOM_TYPE_I32, {2, 1, 1, 1}, {3, 1});
  Tensor* out = unwrap(op::get_rows(ctx_, a.t, ix.t), "get_rows");
  LOOM_ASSERT_OK(run_threads({out}));
  expect_equal(read(out), {a.h.at(0, 3), a.h.at(1, 3), a.h.at(2, 3), a.h.at(0, 1), a.h.at(1, 1), a.h.at(2, 1)},
               {3, 2, 1, 1}, "get_rows i32");
}

LOOM_CASE(RowsTest, SetRowsEveryTypeAndIndexType) {
  seed(803);
  int k = 0;
  for (loom_type_t t : kAllTypes) {
    for (loom_type_t it : {LOOM_TYPE_I32, LOOM_TYPE_I64}) {
      const int64_t n0 = is_quant(t) ? 64 : 17;
      check_set(t, it, {n0, 7, k % 2 + 1, k % 3 + 1}, k % 3 + 1, layouts_for(LOOM_TYPE_F32)[k % 4]);
      ++k;
    }
  }
}

// The reference device writes Q8_0 blocks with the reference quantizer's
// bits (ggml's: d = max|x| / 127 as F16, q = roundf(x / d), ties away from
// zero), whatever path its kernels take; other devices are held to the
// nearest grid point (check_quant_block) by the cases above. Ties at
// +-0.5, 2.5, 126.5 of the grid, zeros, a zero block, values off the ties.
LOOM_CASE(RowsTest, SetRowsToQ8_0HasTheReferenceQuantizersBits) {
  seed(805);
  if (!reference_device()) LOOM_SKIP() << "the reference quantizer's exact ties are the reference device's rule";
  std::vector<float> vals(4 * 32, 0.0f);
  const float ties[] = {0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 126.5f, -126.5f, 63.5f, -0.49999997f, 0.50000006f};
  for (int b = 0; b < 3; ++b) {
    vals[32 * b] = b == 1 ? -127.0f : 127.0f;  // d = 1 (grid of integers), either sign
    for (int i = 1; i < 32; ++i) vals[32 * b + i] = i <= 20 ? ties[(i + b) % 11] : 0.3f * static_cast<float>(i - 26);
  }
  // Block 3 stays zero (d = 0).
  Operand dst = input(LOOM_TYPE_Q8_0, {64, 3, 1, 1});
  Operand rows = input_values(LOOM_TYPE_F32, {64, 2, 1, 1}, std::vector<float>(vals.begin(), vals.end()));
  Operand ix = input_ints(LOOM_TYPE_I32, {2, 1, 1, 1}, {2, 0});
  Tensor* out = unwrap(op::set_rows(ctx_, dst.t, rows.t, ix.t), "set_rows");
  LOOM_ASSERT_OK(run_threads({out, dst.t}));
  const std::vector<uint8_t> got = read_bytes(dst.t);
  const size_t rb = row_bytes(LOOM_TYPE_Q8_0, 64);
  std::vector<uint8_t> want(2 * rb);
  from_float(LOOM_TYPE_Q8_0, vals.data(), want.data(), 128);
  LOOM_EXPECT_EQ(std::memcmp(got.data() + 2 * rb, want.data(), rb), 0) << "row 2 (source row 0)";
  LOOM_EXPECT_EQ(std::memcmp(got.data(), want.data() + rb, rb), 0) << "row 0 (source row 1)";
}

LOOM_CASE(RowsTest, SetRowsStridedRowsAndWholeTable) {
  seed(804);
  for (Layout l : layouts_for(LOOM_TYPE_F32)) check_set(LOOM_TYPE_F16, LOOM_TYPE_I32, {33, 5, 2, 1}, 5, l);
  check_set(LOOM_TYPE_Q8_0, LOOM_TYPE_I64, {32, 3, 1, 1}, 3, Layout::kPermuted);
  // The llama graph's KV cache writes: [head_dim, n_ctx, n_head_kv] caches,
  // rows [head_dim, T, n_head_kv] permuted from [head_dim, n_head_kv, T],
  // I64 indices [T, n_head_kv]; one token (decode) and a batch.
  for (loom_type_t t : {LOOM_TYPE_F16, LOOM_TYPE_F32}) {
    check_set(t, LOOM_TYPE_I64, {64, 40, 12, 1}, 1, Layout::kPermuted);
    check_set(t, LOOM_TYPE_I64, {8, 40, 4, 1}, 7, Layout::kPermuted);
  }
  // An 8-bit cache (--kv-type q8_0): heads of 64 and 128.
  check_set(LOOM_TYPE_Q8_0, LOOM_TYPE_I64, {64, 40, 12, 1}, 1, Layout::kPermuted);
  check_set(LOOM_TYPE_Q8_0, LOOM_TYPE_I64, {128, 40, 4, 1}, 7, Layout::kPermuted);
  // A server's step of 16 sequences: 192 rows, more than a share's rows
  // the cpu plugin asks for ahead at once.
  check_set(LOOM_TYPE_F16, LOOM_TYPE_I64, {64, 300, 12, 1}, 16, Layout::kPermuted);
}

}  // namespace
}  // namespace loom::conformance
