// ATTENTION's decode path (plugins/cuda/ops/attention_split.cu) on the
// host: the split kernel's order (splits of kSplitRows rows, warp w taking
// rows w, w + kSplitWarps, ..., each row merged into the warp's online
// state, lane parts of q . k summed in the halving tree) and the combine
// kernel's (partials merged in split-then-warp order), with query heads
// grouped per kv head as the kernel's blocks take them, against the cpu
// plugin running the same node. Also which path support.h picks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "conformance/check.hpp"
#include "conformance/harness.hpp"
#include "loom/runtime/ops.hpp"
#include "ops/test_device.hpp"
#include "plugins/cuda/ops/attention.cuh"
#include "plugins/cuda/ops/launch.cuh"
#include "plugins/cuda/ops/support.h"

namespace loom::optest {
namespace {

namespace cu = loom::cuda;
using namespace conformance;  // NOLINT(google-build-using-namespace): the harness's fixture vocabulary

class CudaAttentionOnHost : public ::testing::Test, public OpTest {
 protected:
  void SetUp() override {
    dev_ = test_device();
    ASSERT_NE(dev_, nullptr) << "cpu plugin not loaded" << registry_report();
  }
};

struct Partial {
  cu::OnlineState st;
  std::vector<float> acc;
};

// Dense K / V of a float type: row j of kv head g.
const uint8_t* kv_row(const Operand& x, int64_t j, int64_t g) {
  const int64_t d = x.h.ne[0], n_kv = x.h.ne[1];
  return x.h.base->bytes.data() + (g * n_kv + j) * d * static_cast<int64_t>(block_bytes(x.h.type));
}

TEST_F(CudaAttentionOnHost, SplitPartialsAndCombineMatchTheCpuPlugin) {
  seed(2810);
  // 6 query heads per kv head: a chunk of kSplitHeads and one of 2.
  const int64_t D = 72, Dv = 40, H = 12, T = 3, n_kv = 600, Hkv = 2;
  const float scale = 0.3f;
  Operand q = input(LOOM_TYPE_F32, {D, H, T, 1});
  Operand k = input(LOOM_TYPE_F16, {D, n_kv, Hkv, 1});
  Operand v = input(LOOM_TYPE_BF16, {Dv, n_kv, Hkv, 1});
  const std::vector<int64_t> visible = {600, 0, 301};
  Operand vis = input_ints(LOOM_TYPE_I32, {T, 1, 1, 1}, visible);
  Tensor* out = unwrap(op::attention(ctx_, q.t, k.t, v.t, vis.t, scale));
  ASSERT_EQ(cu::node_path(out), cu::Path::kAttentionSplit);
  LOOM_ASSERT_OK(run({out}));
  const int64_t splits = (n_kv + cu::kSplitRows - 1) / cu::kSplitRows;
  std::vector<float> emu;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const int64_t ratio = H / Hkv, g = h / ratio;
      // The block's heads h0 .. h0 + nh - 1 (h is head i of them).
      const cu::SplitHeads heads = cu::split_block_heads(g * cu::split_head_chunks(ratio) + (h - g * ratio) / cu::kSplitHeads, ratio);
      ASSERT_EQ(heads.g, g);
      const int64_t h0 = heads.h0;
      const int nh = heads.nh;
      const int i = static_cast<int>(h - h0);
      std::vector<float> qs(static_cast<size_t>(cu::kSplitHeads * D), 0.0f);
      for (int hh = 0; hh < nh; ++hh) {
        for (int64_t d = 0; d < D; ++d) qs[static_cast<size_t>(hh * D + d)] = static_cast<float>(q.h.at(d, h0 + hh, t));
      }
      std::vector<Partial> parts;
      for (int64_t s = 0; s < splits; ++s) {
        const int64_t j0 = s * cu::kSplitRows, j1 = std::min(j0 + cu::kSplitRows, visible[static_cast<size_t>(t)]);
        for (int w = 0; w < cu::kSplitWarps; ++w) {
          Partial p{cu::online_init(), std::vector<float>(static_cast<size_t>(Dv), 0.0f)};
          for (int64_t j = j0 + w; j < j1; j += cu::kSplitWarps) {
            float lanes[cu::kWarp];
            for (int lane = 0; lane < cu::kWarp; ++lane) {
              float dots[cu::kSplitHeads];
              cu::split_lane_dots(qs.data(), D, nh, kv_row(k, j, g), LOOM_TYPE_F16, 2, D, lane, dots);
              lanes[lane] = dots[i];
            }
            const float score = cu::tree_reduce(lanes, cu::kWarp, [](float a, float b) { return a + b; }) * scale;
            const cu::OnlineState row{score, 1.0f};
            const cu::MergeFactors f = cu::online_factors(p.st, row);
            for (int64_t d = 0; d < Dv; ++d) {
              p.acc[static_cast<size_t>(d)] =
                  cu::online_merge_acc(p.acc[static_cast<size_t>(d)], static_cast<float>(v.h.at(d, j, g)), f);
            }
            p.st = cu::online_merge(p.st, row, f);
          }
          parts.push_back(p);
        }
      }
      for (int64_t d = 0; d < Dv; ++d) {
        cu::OnlineState st = cu::online_init();
        float acc = 0.0f;
        for (const Partial& p : parts) {
          const cu::MergeFactors f = cu::online_factors(st, p.st);
          acc = cu::online_merge_acc(acc, p.acc[static_cast<size_t>(d)], f);
          st = cu::online_merge(st, p.st, f);
        }
        emu.push_back(cu::online_finish(st, acc));
      }
    }
  }
  const std::vector<double> got = read(out);
  std::vector<double> ref(emu.begin(), emu.end()), tol;
  for (double r : ref) tol.push_back(2.0 * tol_for(LOOM_TYPE_F32, r, 4.0, n_kv));
  expect_close(got, ref, tol, {Dv, H, T, 1}, "attention split");
  // Token 1 sees nothing: a zero row, as on the cpu plugin.
  for (int64_t i = Dv * H; i < 2 * Dv * H; ++i) EXPECT_EQ(emu[static_cast<size_t>(i)], 0.0f);
}

// The split grid's blocks (kv heads x chunks) take every query head once,
// each with its own kv head.
TEST(CudaAttentionPath, SplitBlocksCoverEveryHeadOnce) {
  for (int64_t hkv : {1, 2, 8}) {
    for (int64_t ratio = 1; ratio <= 9; ++ratio) {
      std::vector<int> seen(static_cast<size_t>(hkv * ratio), 0);
      for (int64_t bx = 0; bx < hkv * cu::split_head_chunks(ratio); ++bx) {
        const cu::SplitHeads s = cu::split_block_heads(bx, ratio);
        ASSERT_GE(s.nh, 1);
        ASSERT_LE(s.nh, cu::kSplitHeads);
        for (int i = 0; i < s.nh; ++i) {
          ASSERT_EQ((s.h0 + i) / ratio, s.g) << "head " << s.h0 + i << " ratio " << ratio;
          ++seen[static_cast<size_t>(s.h0 + i)];
        }
      }
      for (int c : seen) ASSERT_EQ(c, 1) << "hkv " << hkv << " ratio " << ratio;
    }
  }
}

TEST(CudaAttentionPath, DecodeSplitsPrefillAndLargeHeadsDoNot) {
  auto node_for = [](int64_t d, int64_t tokens, loom_tensor_t* n, loom_tensor_t* src) {
    for (int i = 0; i < 4; ++i) {
      src[i] = loom_tensor_t{};
      src[i].struct_size = sizeof src[i];
      n->src[i] = &src[i];
    }
    src[0].ne[0] = d, src[0].ne[2] = tokens, src[2].ne[0] = d;
  };
  loom_tensor_t n{}, src[4];
  n.op = LOOM_OP_ATTENTION;
  node_for(128, 1, &n, src);
  EXPECT_EQ(cu::op_support(LOOM_OP_ATTENTION)->path(&n), cu::Path::kAttentionSplit);
  node_for(128, cu::kSplitMaxTokens + 1, &n, src);
  EXPECT_EQ(cu::op_support(LOOM_OP_ATTENTION)->path(&n), cu::Path::kAttention);
  node_for(cu::kSplitMaxDim + 32, 1, &n, src);
  EXPECT_EQ(cu::op_support(LOOM_OP_ATTENTION)->path(&n), cu::Path::kAttention);
}

}  // namespace
// The rows each query reads: lengths [T] or, the ranges form, [2, T]
// pairs; a bad value reads as empty with the fault the kernel reports.
TEST(CudaAttentionRows, LengthsAndRangesAndTheirFaults) {
  const int32_t lens[3] = {7, 0, 21};
  cu::KvRows r = cu::query_rows(reinterpret_cast<const uint8_t*>(lens), 4, 0, 0, 20);
  EXPECT_EQ(r.first, 0);
  EXPECT_EQ(r.end, 7);
  EXPECT_EQ(r.fault, cu::kErrNone);
  r = cu::query_rows(reinterpret_cast<const uint8_t*>(lens), 4, 0, 2, 20);
  EXPECT_EQ(r.end - r.first, 0);
  EXPECT_EQ(r.fault, cu::kErrVisible);
  EXPECT_EQ(r.value, 21);
  const int32_t pairs[6] = {0, 5, 10, 20, 9, 5};
  r = cu::query_rows(reinterpret_cast<const uint8_t*>(pairs), 4, 8, 1, 20);
  EXPECT_EQ(r.first, 10);
  EXPECT_EQ(r.end, 20);
  EXPECT_EQ(r.fault, cu::kErrNone);
  r = cu::query_rows(reinterpret_cast<const uint8_t*>(pairs), 4, 8, 2, 20);
  EXPECT_EQ(r.end - r.first, 0);
  EXPECT_EQ(r.fault, cu::kErrRange);
  EXPECT_EQ(r.value, (int64_t{9} << 32) | 5);
}

}  // namespace loom::optest
