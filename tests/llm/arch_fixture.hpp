// Test helper: the fixture of the architecture tests (arch_test.cpp,
// moe_test.cpp): a tiny_arch.hpp model written to a temporary GGUF, loaded
// on the cpu (or where LoadOptions say), and loom's logits for every
// position of a prompt (batched prefill, then single-token steps) compared
// with the double-precision reference of reference_forward.hpp.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "llm/session/llama_session.hpp"
#include "loom/registry/registry.hpp"
#include "cpu_file_fixture.hpp"
#include "registry/registry_test_util.hpp"
#include "reference_forward.hpp"
#include "tiny_arch.hpp"

namespace loom::llm {
namespace {

using test::ArchSpec;
using test::ReferenceForward;
using test::TinyArchModel;
using test::gemma2_spec;
using test::gemma3_spec;

// Relative to the largest logit: loom's f32 arithmetic over these sizes
// lands within ~1e-6 (measured 7e-7 .. 2.3e-6 at logits up to 3 .. 11).
constexpr double kTol = 2e-5;

const std::vector<int32_t>& prompt() {
  static const std::vector<int32_t> p = {1, 17, 5, 33, 9, 28, 2, 39, 11, 20};
  return p;
}


double max_abs_diff(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  double d = 0.0;
  for (size_t p = 0; p < a.size(); ++p) {
    for (size_t i = 0; i < a[p].size(); ++i) d = std::max(d, std::fabs(a[p][i] - b[p][i]));
  }
  return d;
}

class Architectures : public test::CpuFileTest {
 protected:
  StatusOr<std::unique_ptr<LlamaModel>> load(const TinyArchModel& m, const std::vector<uint8_t>& image,
                                             const LoadOptions* where = nullptr) {
    if (!m.write(path_, image)) return internal_error("cannot write " + path_);
    return where ? LlamaModel::load(path_, *where) : LlamaModel::load(path_, dev_);
  }
  StatusOr<std::unique_ptr<LlamaModel>> load(const TinyArchModel& m) { return load(m, m.gguf()); }

  // loom's logits for every position of prompt(): the first n_prefill
  // tokens in batches of 3 (the second batch starts at position 3), then
  // one token per step. kv_type: the cache's element type.
  static std::vector<std::vector<double>> loom_logits(LlamaModel* model, int64_t n_prefill, bool fused,
                                                      loom_type_t kv_type = LOOM_TYPE_F32) {
    SessionOptions so;
    so.n_batch = 3;
    so.kv_type = kv_type;
    so.fused_attention = fused;
    auto s = LlamaSession::create(model, so);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return {};
    const auto n_vocab = static_cast<size_t>(model->hparams().n_vocab);
    std::vector<std::vector<double>> out;
    const std::vector<TokenId> first(prompt().begin(), prompt().begin() + n_prefill);
    std::vector<float> logits;
    const Status st = (*s)->eval(first, true, &logits);
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) return {};
    for (size_t p = 0; p < first.size(); ++p) {
      out.emplace_back(logits.begin() + static_cast<std::ptrdiff_t>(p * n_vocab),
                       logits.begin() + static_cast<std::ptrdiff_t>((p + 1) * n_vocab));
    }
    for (size_t p = first.size(); p < prompt().size(); ++p) {
      const Status step = (*s)->eval({prompt()[p]}, false, &logits);
      EXPECT_TRUE(step.ok()) << step.to_string();
      if (!step.ok()) return {};
      out.emplace_back(logits.begin(), logits.end());
    }
    return out;
  }

  // Loads the spec's model (on the cpu, or as `where` says), compares
  // loom's logits (fused and unfused attention) with the reference within
  // tol (relative to the largest logit), and checks each mutant's reference
  // (the same model without one feature) is far from it.
  void check(const ArchSpec& spec, const std::vector<std::pair<std::string, TinyArchModel>>& mutants,
             const LoadOptions* where = nullptr, double tol = kTol) {
    SCOPED_TRACE(spec.arch + " seed " + std::to_string(spec.seed));
    const TinyArchModel m(spec);
    auto model = load(m, m.gguf(), where);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    EXPECT_EQ((*model)->architecture(), spec.arch);
    EXPECT_EQ((*model)->hparams().head_dim(), spec.hd());
    EXPECT_EQ((*model)->hparams().n_rot, spec.rot());
    // YaRN's scaling rides in its divisors: the op's scale is 1.
    EXPECT_FLOAT_EQ((*model)->hparams().rope_freq_scale,
                    spec.scaling_type == "yarn" ? 1.0f : static_cast<float>(spec.freq_scale()));
    EXPECT_EQ((*model)->output == (*model)->tok_embd, spec.tied);
    EXPECT_EQ((*model)->rope_freqs != nullptr, spec.rope_freqs);
    const std::vector<std::vector<double>> ref = ReferenceForward(m).logits(prompt());
    double scale = 0.0;
    for (const auto& row : ref) {
      for (double v : row) scale = std::max(scale, std::fabs(v));
    }
    EXPECT_GT(scale, 0.5) << "degenerate logits: the comparison would prove little";
    for (bool fused : {true, false}) {
      const std::vector<std::vector<double>> got = loom_logits(model->get(), 5, fused);
      ASSERT_EQ(got.size(), ref.size());
      const double err = max_abs_diff(got, ref);
      EXPECT_LT(err, tol * std::max(1.0, scale)) << (fused ? "fused" : "unfused") << " attention";
      std::cout << "[ arch ] " << spec.arch << (where ? " (" + where->devices[0]->name() + ")" : "")
                << (fused ? " fused" : " unfused") << ": max |loom - reference| " << err << " (logits up to "
                << scale << ")\n";
    }
    for (const auto& [what, mutant] : mutants) {
      const double d = max_abs_diff(ReferenceForward(mutant).logits(prompt()), ref);
      EXPECT_GT(d, 100 * tol * std::max(1.0, scale)) << "the reference " << what << " is too close to the model's";
    }
  }

  // Two sequences in one session's batches (loom serve's steps): sequence 2
  // reads prompt()[0, 6) and sequence 0 prompt()[0, 3) in one batch, then
  // both decode `steps` tokens side by side; each row's logits must match
  // the single-sequence reference of its position.
  static void check_seq_batches(LlamaModel* model, const std::vector<std::vector<double>>& ref, bool fused,
                                int64_t n_ctx, int32_t steps) {
    SCOPED_TRACE(fused ? "fused" : "unfused");
    const auto n_vocab = static_cast<size_t>(model->hparams().n_vocab);
    SessionOptions so;
    so.n_seq = 3;
    so.n_ctx = n_ctx;
    so.kv_type = LOOM_TYPE_F32;
    so.fused_attention = fused;
    auto s = LlamaSession::create(model, so);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    std::vector<SeqToken> batch;
    for (int32_t p = 0; p < 6; ++p) batch.push_back({prompt()[static_cast<size_t>(p)], 2, p, p == 5});
    for (int32_t p = 0; p < 3; ++p) batch.push_back({prompt()[static_cast<size_t>(p)], 0, p, p == 2});
    std::vector<float> logits;
    ASSERT_TRUE((*s)->eval_seqs(batch, &logits).ok());
    auto expect_row = [&](size_t row, size_t pos) {
      double err = 0, scale = 1;
      for (size_t i = 0; i < n_vocab; ++i) {
        err = std::max(err, std::fabs(logits[row * n_vocab + i] - ref[pos][i]));
        scale = std::max(scale, std::fabs(ref[pos][i]));
      }
      EXPECT_LT(err, kTol * scale) << "row " << row << " position " << pos;
    };
    expect_row(0, 5);
    expect_row(1, 2);
    for (int32_t step = 0; step < steps; ++step) {
      batch = {{prompt()[static_cast<size_t>(6 + step)], 2, 6 + step, true},
               {prompt()[static_cast<size_t>(3 + step)], 0, 3 + step, true}};
      ASSERT_TRUE((*s)->eval_seqs(batch, &logits).ok());
      expect_row(0, static_cast<size_t>(6 + step));
      expect_row(1, static_cast<size_t>(3 + step));
    }
  }

  // Each spec with two layers on vulkan0 (lavapipe counts; GPU sin/cos and
  // sums: a looser bound) and the rest on the cpu, then with its layers
  // shared with a simulated device (skipped, said, where either is missing).
  void check_on_vulkan0_and_split(const std::vector<ArchSpec>& specs) {
    if (registry::Device* vk = reg_->device("vulkan0")) {
      LoadOptions where;
      where.devices = {vk, dev_};
      where.n_gpu_layers = 2;
      for (const ArchSpec& spec : specs) check(spec, {}, &where, 2e-4);
    } else {
      std::cout << "[ arch ] no vulkan0 here: the families ran on the cpu and the simulated device only\n";
    }
    auto reg = sim_and_cpu();
    if (reg == nullptr) GTEST_SKIP() << "sim plugin not loaded";
    LoadOptions split;
    split.devices = {reg->device("sim0"), reg->device("cpu")};
    split.tensor_split = {1, 1};
    for (const ArchSpec& spec : specs) check(spec, {}, &split);
  }

  // A registry of one simulated device (tests/sim_plugin: the ops below,
  // its own memory) and the cpu, for splits across devices; nullptr (after
  // a skip) when the sim plugin is not built.
  static std::unique_ptr<registry::Registry> sim_and_cpu() {
    test::ScopedEnv n("LOOM_SIM_DEVICES", std::optional<std::string>("1"));
    test::ScopedEnv ops("LOOM_SIM_OPS_0",
                        std::optional<std::string>("MUL_MAT,ADD,MUL,RMS_NORM,SOFT_MAX,SILU,GET_ROWS,CONT,CPY,SCALE"));
    test::ScopedEnv host("LOOM_SIM_HOST_0", std::nullopt);
    auto reg = registry::Registry::load(test::only({std::string(LOOM_TEST_SIM_DIR) + "/libloom-sim.so",
                                                    std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom-cpu.so"}));
    if (reg->device("sim0") == nullptr || reg->device("cpu") == nullptr) return nullptr;
    return reg;
  }

};

// A copy of `m` changed by f (a mutant for check()).
template <typename F>
TinyArchModel mutate(const TinyArchModel& m, F f) {
  TinyArchModel c = m;
  f(&c);
  return c;
}

[[maybe_unused]] void drop(TinyArchModel* m, const std::string& part) {
  for (auto it = m->tensors.begin(); it != m->tensors.end();) {
    it = it->first.find(part) != std::string::npos ? m->tensors.erase(it) : std::next(it);
  }
}

}  // namespace
}  // namespace loom::llm
