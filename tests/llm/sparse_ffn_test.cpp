// The activation-sparse FFN (llm/sparse/sparse_ffn.hpp) on synthetic ReLU llamas
// made at test time by tools/make_sparse_gguf.py (~90% of neurons inactive
// per token, predictors fitted for recall 0.999 on the model's own
// activations): sparse and dense give the same greedy tokens, and logits
// within the stated bound; a model without predictors, or --sparse off,
// runs every layer dense; quantized weights take the sparse path too.
//
// Needs /usr/bin/python3 with numpy (Debian python3-numpy) and
// stories260K.gguf (its vocabulary is borrowed); skips with the reason when
// either is missing.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llm/model/llama_graph.hpp"
#include "llm/model/llama_model.hpp"
#include "llm/session/generate.hpp"
#include "llm/session/llama_session.hpp"
#include "llm_test_util.hpp"
#include "loom/registry/registry.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/sched/executor.hpp"
#include "loom/sched/scheduler.hpp"
#include "registry/registry_test_util.hpp"
#include "sim_plugin/sim_trace.h"
#include "story_run.hpp"
#include "tool_cache.hpp"

namespace loom::llm {
namespace {

namespace fs = std::filesystem;

constexpr char kPython[] = "/usr/bin/python3";
constexpr int64_t kLayers = 2;

std::string tool_path() { return std::string(LOOM_TEST_SOURCE_DIR) + "/tools/make_sparse_gguf.py"; }
std::string writer_path() {
  return std::string(LOOM_TEST_SOURCE_DIR) + "/tools/gguf_writer.py";
}  // the tool imports it

class SparseFfn : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    skip_reason_ = new std::string();
    files_ = new std::map<std::string, std::string>();
    const std::string stories = test::stories_path();
    if (!fs::exists(stories)) {
      *skip_reason_ = stories + " not found (its vocab is borrowed; set LOOM_MODELS_DIR)";
      return;
    }
    if (std::system((std::string(kPython) + " -c 'import numpy' >/dev/null 2>&1").c_str()) != 0) {
      *skip_reason_ = std::string(kPython) + " has no numpy (apt-get install python3-numpy)";
      return;
    }
    const std::map<std::string, std::string> specs = {{"f32", "--type f32"},
                                                      {"q8_0", "--type q8_0"},
                                                      {"dense", "--type f32 --no-predictors"},
                                                      {"f32_all", "--type f32 --recall 1.0"},
                                                      {"q8_0_pq8", "--type q8_0 --pred-type q8_0"}};
    for (const auto& [name, args] : specs) {
      std::string toks;
      for (TokenId t : prompt()) toks += (toks.empty() ? "" : ",") + std::to_string(t);
      // Made once per build tree (tests/tool_cache.hpp), not once per test process.
      const std::string cmd =
          std::string(kPython) + " " + tool_path() + " {dir}/m.gguf --tokenizer-from " + stories +
          " --dim 64 --layers " + std::to_string(kLayers) +
          " --heads 4 --ffn 512 --sparsity 0.9 --recall 0.999 --noise 0.02 --seed 3 " + args +
          " --reference-tokens " + toks + " --reference-logits {dir}/m.gguf.ref >/dev/null";
      std::string why;
      const std::string dir =
          test::cached_tool_dir("sparse-" + name, cmd, {tool_path(), writer_path(), stories}, &why);
      if (dir.empty()) {
        *skip_reason_ = "make_sparse_gguf.py: " + why;
        return;
      }
      (*files_)[name] = dir + "/m.gguf";
    }
  }

  void SetUp() override {
    if (!skip_reason_->empty()) GTEST_SKIP() << *skip_reason_;
    registry::Options o;
    o.paths = {LOOM_TEST_PLUGIN_DIR};
    o.use_env = false;
    reg_ = registry::Registry::load(o);
    ASSERT_NE(reg_->device("cpu"), nullptr);
  }

  std::unique_ptr<LlamaModel> load(const std::string& name, bool sparse,
                                   const std::vector<registry::Device*>& devices = {},
                                   int64_t n_gpu_layers = 0, int64_t sparse_budget = -1) {
    LoadOptions lo;
    lo.devices = devices;
    if (lo.devices.empty()) lo.devices.push_back(reg_->device("cpu"));
    lo.n_gpu_layers = n_gpu_layers;
    lo.sparse = sparse;
    lo.sparse_budget = sparse_budget;
    auto m = LlamaModel::load(files_->at(name), lo);
    EXPECT_TRUE(m.ok()) << name << ": " << m.status().to_string();
    return m.ok() ? std::move(m).value() : nullptr;
  }

  // Logits of every position of `prompt`, one token per step (decode
  // steps: a sparse layer runs dense for longer batches, kSparseMaxTokens).
  static std::vector<float> logits(LlamaModel* m, const std::vector<TokenId>& prompt) {
    SessionOptions so;
    so.kv_type = LOOM_TYPE_F32;
    so.n_batch = 1;
    auto s = LlamaSession::create(m, so);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return {};
    std::vector<float> out;
    const Status st = (*s)->eval(prompt, true, &out);
    EXPECT_TRUE(st.ok()) << st.to_string();
    return out;
  }

  static std::vector<TokenId> greedy(LlamaModel* m, int32_t n) { return test::greedy(m, n); }
  static const std::vector<TokenId>& prompt() { return test::story_prompt(); }

  static std::string* skip_reason_;
  static std::map<std::string, std::string>* files_;
  std::unique_ptr<registry::Registry> reg_;
};

std::string* SparseFfn::skip_reason_ = nullptr;
std::map<std::string, std::string>* SparseFfn::files_ = nullptr;

// max |a - b| / max |b|
double rel_max(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num = std::max(num, std::fabs(double(a[i]) - b[i]));
    den = std::max(den, std::fabs(double(b[i])));
  }
  return num / den;
}

TEST_F(SparseFfn, PredictorsAreBoundAndTheGraphUsesTheSparseOps) {
  auto m = load("f32", true);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->sparse_params().activation, FfnActivation::kRelu);
  EXPECT_EQ(m->sparse_layers(), kLayers);
  EXPECT_GT(m->sparse_params().threshold, 0.0f);
  EXPECT_LT(m->sparse_params().threshold, 0.5f);  // chosen for recall
  for (const LlamaLayer& l : m->layers) {
    EXPECT_NE(l.ffn_pred_in, nullptr);
    EXPECT_NE(l.ffn_pred_out, nullptr);
    EXPECT_NE(l.ffn_pred_bias, nullptr);
    EXPECT_NE(l.ffn_down_t, nullptr);
  }
  const LlamaHparams& h = m->hparams();
  KvCache cache = KvCache::create(m->context(), *reg_->device("cpu"), h.n_layer, h.head_dim(),
                                  h.n_head_kv, 32, LOOM_TYPE_F32)
                      .value();
  const size_t mark = m->context().checkpoint();
  auto g = build_llama_graph(*m, cache, 1, 0, false);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->sparse_layers, kLayers);
  m->context().rollback(mark);
  auto prefill = build_llama_graph(*m, cache, kSparseMaxTokens + 1, 0, false);
  ASSERT_TRUE(prefill.ok()) << prefill.status().to_string();
  EXPECT_EQ(prefill->sparse_layers, 0) << "a batch of more than kSparseMaxTokens tokens runs dense";
  m->context().rollback(mark);

  auto off = load("f32", false);
  ASSERT_NE(off, nullptr);
  EXPECT_EQ(off->sparse_layers(), 0);
  auto dense = load("dense", true);
  ASSERT_NE(dense, nullptr);
  EXPECT_EQ(dense->sparse_layers(), 0) << "no predictors: every layer dense";
  EXPECT_EQ(dense->sparse_params().activation, FfnActivation::kRelu);
}

TEST_F(SparseFfn, LoomRunsTheModelTheToolFittedOn) {
  // The tool's numpy forward (whose activations the predictors were fitted
  // on) and loom's dense forward give the same logits: the predictors were
  // fitted on the distribution loom will feed them.
  for (const char* name : {"f32", "q8_0"}) {
    SCOPED_TRACE(name);
    auto dense = load(name, false);
    ASSERT_NE(dense, nullptr);
    const std::vector<float> got = logits(dense.get(), prompt());
    std::vector<float> want(got.size());
    FILE* f = std::fopen((files_->at(name) + ".ref").c_str(), "rb");
    ASSERT_NE(f, nullptr);
    const size_t n = std::fread(want.data(), sizeof(float), want.size(), f);
    std::fclose(f);
    ASSERT_EQ(n, want.size());
    const double err = rel_max(got, want);
    std::cout << "[ sparse ] " << name << ": loom dense vs the tool's numpy logits: " << err
              << "\n";
    // F32: f32 rounding (measured 7e-7). Q8_0: loom's int8 dots round the
    // activations to 8 bits per block of 32, numpy does not (measured 2e-2).
    EXPECT_LT(err, name == std::string("f32") ? 1e-5 : 5e-2);
  }
}

TEST_F(SparseFfn, SameGreedyTokensAsDense) {
  // The test model (f32) and one whose threshold admits every neuron that
  // fired on the fitting sample. (The Q8_0 model's logits stay within the
  // bound below, but its random weights leave near-ties among the top
  // tokens that the different rounding order of the sparse dots can flip,
  // so its greedy text is not compared.)
  for (const char* name : {"f32", "f32_all"}) {
    SCOPED_TRACE(name);
    auto sparse = load(name, true);
    auto dense = load(name, false);
    ASSERT_NE(sparse, nullptr);
    ASSERT_NE(dense, nullptr);
    const std::vector<TokenId> want = greedy(dense.get(), 48);
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(greedy(sparse.get(), 48), want);
  }
}

// Every layer on vulkan0 (lavapipe counts) runs the sparse products in
// sparse.comp; the tokens are the cpu's dense ones.
TEST_F(SparseFfn, VulkanRunsTheSparseLayers) {
  registry::Device* vk = reg_->device("vulkan0");
  if (vk == nullptr) GTEST_SKIP() << "no vulkan0 here";
  auto dense = load("f32", false);
  auto sparse = load("f32", true, {vk, reg_->device("cpu")}, kLayers);
  ASSERT_NE(dense, nullptr);
  ASSERT_NE(sparse, nullptr);
  EXPECT_EQ(sparse->n_gpu_layers(), kLayers);
  const LlamaHparams& h = sparse->hparams();
  KvCache cache = KvCache::create(sparse->context(), *vk, h.n_layer, h.head_dim(), h.n_head_kv, 32,
                                  LOOM_TYPE_F32)
                      .value();
  const size_t mark = sparse->context().checkpoint();
  auto g = build_llama_graph(*sparse, cache, 1, 0, false);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->sparse_layers, kLayers) << "vulkan0 runs the sparse products";
  sparse->context().rollback(mark);
  const std::vector<TokenId> want = greedy(dense.get(), 32);
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(greedy(sparse.get(), 32), want);
}

// Hot/cold placement: with a budget for ~20% of the neurons' rows, the most
// frequent neurons' rows live on the fast device (sim0: the test plugin's
// reference kernels; vulkan0 when present), the rest on the cpu; both
// shares run and are added: the cpu's dense tokens.
TEST_F(SparseFfn, HotColdPlacementGivesTheDenseTokens) {
  registry::Options o;
  o.paths = {LOOM_TEST_PLUGIN_DIR, LOOM_TEST_SIM_DIR};
  o.use_env = false;
  auto reg = registry::Registry::load(o);
  auto dense = load("f32", false);
  ASSERT_NE(dense, nullptr);
  const std::vector<TokenId> want = greedy(dense.get(), 32);
  ASSERT_FALSE(want.empty());
  // Per neuron: gate, up and down_t rows of 64 f32, a pred_out row of 2r
  // f32 (r = 16) and a bias: 900 bytes; 2 layers of 512 neurons.
  const int64_t per_neuron = 3 * 64 * 4 + 32 * 4 + 4;
  const int64_t budget = per_neuron * 2 * 512 / 5;
  int ran = 0;
  for (const char* fast : {"sim0", "vulkan0"}) {
    SCOPED_TRACE(fast);
    registry::Device* dev = reg->device(fast);
    if (dev == nullptr) continue;
    ++ran;
    LoadOptions lo;
    lo.devices = {dev, reg->device("cpu")};
    lo.sparse_budget = budget;
    auto m = LlamaModel::load(files_->at("f32"), lo);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ((*m)->sparse_fast_device(), dev);
    EXPECT_GT((*m)->sparse_hot_bytes(), 0u);
    EXPECT_LE((*m)->sparse_hot_bytes(), static_cast<size_t>(budget));
    int64_t hot = 0, cold = 0;
    for (const LlamaLayer& l : (*m)->layers) {
      hot += l.ffn_hot.n;
      cold += l.ffn_cold.n;
      EXPECT_EQ(l.ffn_hot.n + l.ffn_cold.n, 512);
    }
    EXPECT_EQ(hot, static_cast<int64_t>((*m)->sparse_hot_bytes()) / per_neuron);
    EXPECT_GT(cold, hot);
    EXPECT_EQ(greedy(m->get(), 32), want);
  }
  EXPECT_GT(ran, 0) << "sim0 missing: " << LOOM_TEST_SIM_DIR;
}

// Both shares run at once: with an asynchronous sim0 that sleeps 3 ms per
// node, in every decode step and layer the cpu computes the cold share
// (its own split, cut before the add that waits for the hot share; timed
// by the scheduler's profile) after sim0's split with the hot share was
// issued and before sim0 finished it (sim0's busy intervals from the
// loom.sim.trace extension, the same steady clock). Without the cut the
// cold share shares its split with the add, which copies the hot output in
// first: the cpu waited for sim0 before computing anything.
TEST_F(SparseFfn, HotAndColdSharesRunConcurrently) {
  test::ScopedEnv n_sim("LOOM_SIM_DEVICES", std::optional<std::string>("1"));
  test::ScopedEnv async("LOOM_SIM_ASYNC", std::optional<std::string>("1"));
  test::ScopedEnv delay("LOOM_SIM_DELAY_US_0", std::optional<std::string>("3000"));
  registry::Options o;
  o.paths = {LOOM_TEST_PLUGIN_DIR, LOOM_TEST_SIM_DIR};
  o.use_env = false;
  auto reg = registry::Registry::load(o);
  registry::Device* sim = reg->device("sim0");
  ASSERT_NE(sim, nullptr) << "sim0 missing: " << LOOM_TEST_SIM_DIR;
  const auto* trace = static_cast<const loom_sim_ext_trace_t*>(
      sim->extension(LOOM_SIM_EXT_TRACE, LOOM_SIM_EXT_TRACE_VERSION));
  ASSERT_NE(trace, nullptr) << "sim plugin without loom.sim.trace v2";
  LoadOptions lo;
  lo.devices = {sim, reg->device("cpu")};
  lo.sparse_budget = (3 * 64 * 4 + 32 * 4 + 4) * 2 * 512 / 5;  // ~20% of the rows (as above)
  auto m = LlamaModel::load(files_->at("f32"), lo);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  SessionOptions so;
  so.kv_type = LOOM_TYPE_F32;
  so.n_batch = 1;
  auto s = LlamaSession::create(m->get(), so);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  (*s)->scheduler().set_profile(true);
  trace->reset();
  trace->set_recording(1);
  constexpr int kSteps = 3;
  // Per layer and step: sim0's split ending with the hot share's output,
  // and the cpu split issued next (with the cut: the cold share's).
  std::vector<SchedStats::SplitTime> hot_issued, next_cpu;
  std::vector<float> logits;
  for (int step = 0; step < kSteps; ++step) {
    ASSERT_TRUE((*s)->eval({prompt()[static_cast<size_t>(step)]}, false, &logits).ok());
    const auto& devs = (*s)->scheduler().devices();
    const auto& times = (*s)->scheduler().last_stats().split_times;
    for (size_t k = 0; k < times.size(); ++k) {
      if (devs[times[k].device] != sim || times[k].last_node.rfind("ffn_out.hot.", 0) != 0)
        continue;
      hot_issued.push_back(times[k]);
      size_t c = k + 1;
      while (c < times.size() && devs[times[c].device] != reg->device("cpu")) ++c;
      ASSERT_LT(c, times.size()) << "no cpu split after " << times[k].last_node;
      next_cpu.push_back(times[c]);
    }
  }
  trace->set_recording(0);
  std::vector<loom_sim_trace_interval_t> busy(trace->intervals(nullptr, 0));
  busy.resize(trace->intervals(busy.data(), busy.size()));
  std::vector<loom_sim_trace_interval_t> hot_busy;
  for (const auto& b : busy) {
    if (std::string(b.last_node).rfind("ffn_out.hot.", 0) == 0) hot_busy.push_back(b);
  }
  ASSERT_EQ(hot_issued.size(), static_cast<size_t>(kSteps * kLayers))
      << "sim0 computes each layer's hot share";
  ASSERT_EQ(hot_busy.size(), hot_issued.size());
  for (size_t i = 0; i < hot_issued.size(); ++i) {
    const std::string layer = hot_issued[i].last_node.substr(std::string("ffn_out.hot.").size());
    SCOPED_TRACE("step " + std::to_string(i / kLayers) + ", layer " + layer);
    EXPECT_EQ(std::string(hot_busy[i].last_node), hot_issued[i].last_node);
    EXPECT_EQ(next_cpu[i].last_node, "ffn_out.cold." + layer)
        << "the cold share does not end a cpu split: it shares one with the add, which waits for "
           "the hot share";
    EXPECT_GE(next_cpu[i].begin_ns, hot_issued[i].begin_ns);
    EXPECT_LE(next_cpu[i].end_ns, hot_busy[i].end_ns)
        << "the cpu finished its next split " << (next_cpu[i].end_ns - hot_busy[i].end_ns) / 1000
        << " us after sim0 finished the hot share (it waited for it)";
    EXPECT_LT(hot_busy[i].begin_ns, hot_busy[i].end_ns);
  }
}

// Prompt batches (> kSparseMaxTokens) run a sparse layer dense; on the cpu
// that dense product reads a repacked copy of gate and up (the layout
// --sparse off uses), so its prefill logits are --sparse off's exactly.
TEST_F(SparseFfn, DensePrefillOfSparseLayersUsesTheRepackedCopy) {
  auto sparse = load("q8_0", true);
  auto dense = load("q8_0", false);
  ASSERT_NE(sparse, nullptr);
  ASSERT_NE(dense, nullptr);
  if (reg_->device("cpu")->weight_buffer_type(sparse->layers.front().ffn_gate) == nullptr) {
    GTEST_SKIP()
        << "the loaded cpu plugin (" << reg_->device("cpu")->name()
        << ") has no repacked layout for Q8_0 weights (a build without its x86-64 variants)";
  }
  for (const LlamaLayer& l : sparse->layers) {
    EXPECT_NE(l.ffn_gate_dense, nullptr);
    EXPECT_NE(l.ffn_up_dense, nullptr);
  }
  for (const LlamaLayer& l : dense->layers) EXPECT_EQ(l.ffn_gate_dense, nullptr);
  std::vector<float> a, b;
  for (auto [m, out] : {std::make_pair(sparse.get(), &a), std::make_pair(dense.get(), &b)}) {
    SessionOptions so;
    so.n_batch = static_cast<int64_t>(prompt().size());
    auto s = LlamaSession::create(m, so);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    ASSERT_TRUE((*s)->eval(prompt(), true, out).ok());
  }
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

TEST_F(SparseFfn, HotColdPlacementNeedsASecondDevice) {
  LoadOptions lo;
  lo.devices = {reg_->device("cpu")};
  lo.sparse_budget = 100000;
  auto m = LlamaModel::load(files_->at("f32"), lo);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("needs a second device"), std::string::npos)
      << m.status().message();
}

TEST_F(SparseFfn, LogitsWithinTheStatedBoundOfDense) {
  // The stated tolerance: over a 12-token prompt, max |sparse - dense| is
  // at most 5e-2 of max |dense logit| with predictors fitted for recall
  // 0.999 on the sample (held-out recall ~0.997; measured 2.1e-2 for F32
  // and Q8_0), and at f32 rounding (< 1e-5; measured 6e-7) when the
  // threshold admits every neuron, which checks the sparse kernels
  // themselves. Unrelated logits would give ~1.
  // q8_0_pq8: the predictor matrices in Q8_0 too (make_sparse_gguf.py
  // --pred-type q8_0, its threshold fitted on the quantized matrices).
  const std::map<std::string, double> bound = {
      {"f32", 5e-2}, {"q8_0", 5e-2}, {"q8_0_pq8", 5e-2}, {"f32_all", 1e-5}};
  for (const auto& [name, b] : bound) {
    SCOPED_TRACE(name);
    auto sparse = load(name, true);
    auto dense = load(name, false);
    ASSERT_NE(sparse, nullptr);
    ASSERT_NE(dense, nullptr);
    const std::vector<float> want = logits(dense.get(), prompt());
    const std::vector<float> got = logits(sparse.get(), prompt());
    ASSERT_EQ(got.size(), want.size());
    ASSERT_FALSE(want.empty());
    const double err = rel_max(got, want);
    std::cout << "[ sparse ] " << name << ": max |sparse - dense| / max |dense| = " << err << "\n";
    EXPECT_LT(err, b);
    EXPECT_GT(err, 0.0) << "identical to dense: did the sparse path run?";
  }
}

// The cpu plugin's loom.cost plans a sparse product as 15% of the weight's
// rows active per column (plugins/cpu/ops/cost.cpp: within 2x of
// LOOM_CPU_PROFILE on the bench models): below the dense product of the
// same weight; N columns read the rows active in any of them (4 columns:
// 48% of the rows, so more than twice one column's estimate, and still
// below dense). GET_ROWS costs the rows it gathers, not the table: an
// embedding lookup of one token is a few microseconds, and a scheduler
// with a sim device that states its bandwidth keeps it (and the table) on
// the cpu instead of copying the table over every step.
TEST(SparseCost, CpuPlansTheActiveRowsAndGetRowsTheGatheredRows) {
  test::ScopedEnv n_sim("LOOM_SIM_DEVICES", std::optional<std::string>("1"));
  test::ScopedEnv gbps("LOOM_SIM_GBPS_0", std::optional<std::string>("160"));
  registry::Options o;
  o.paths = {LOOM_TEST_PLUGIN_DIR, LOOM_TEST_SIM_DIR};
  o.use_env = false;
  auto reg = registry::Registry::load(o);
  registry::Device* cpu = reg->device("cpu");
  ASSERT_NE(cpu, nullptr);
  ASSERT_TRUE(cpu->set_threads(1).ok());
  for (loom_type_t type : {LOOM_TYPE_F32, LOOM_TYPE_Q8_0}) {
    SCOPED_TRACE(type);
    Context ctx;
    auto w = ctx.new_tensor(type, {512, 3276}, "w");
    ASSERT_TRUE(w.ok());
    auto wbuf = allocate_tensors(*cpu, {*w});
    ASSERT_TRUE(wbuf.ok()) << wbuf.status().to_string();
    double sparse_us[2] = {}, dense_us[2] = {};
    const int64_t cols[2] = {1, 4};
    for (int i = 0; i < 2; ++i) {
      auto x = ctx.new_tensor(LOOM_TYPE_F32, {512, cols[i]}, "x");
      auto sc = ctx.new_tensor(LOOM_TYPE_F32, {3276, cols[i]}, "s");
      ASSERT_TRUE(x.ok() && sc.ok());
      auto rows = op::mul_mat_sparse_rows(ctx, *w, *x, *sc, 0.5f);
      auto dense = op::mul_mat(ctx, *w, *x);
      ASSERT_TRUE(rows.ok() && dense.ok());
      sparse_us[i] = cpu->op_time_us(*rows);
      dense_us[i] = cpu->op_time_us(*dense);
      EXPECT_GT(sparse_us[i], 0.0);
      EXPECT_LT(sparse_us[i], dense_us[i]) << cols[i] << " columns";
    }
    EXPECT_GT(sparse_us[1], 2.0 * sparse_us[0]) << "4 columns read the rows active in any of them";
  }
  Context ctx;
  auto table = ctx.new_tensor(LOOM_TYPE_F32, {512, 4096}, "token_embd");
  auto ids = ctx.new_tensor(LOOM_TYPE_I32, {1}, "ids");
  ASSERT_TRUE(table.ok() && ids.ok());
  (*ids)->flags |= LOOM_TENSOR_FLAG_INPUT;
  auto tbuf = allocate_tensors(*cpu, {*table});
  ASSERT_TRUE(tbuf.ok()) << tbuf.status().to_string();
  auto rows = op::get_rows(ctx, *table, *ids);
  ASSERT_TRUE(rows.ok());
  auto y = op::rms_norm(ctx, *rows, 1e-5f);
  ASSERT_TRUE(y.ok());
  EXPECT_LT(cpu->op_time_us(*rows), 5.0);
  registry::Device* sim = reg->device("sim0");
  if (sim == nullptr) GTEST_SKIP() << "sim0 missing: " << LOOM_TEST_SIM_DIR;
  auto g = Graph::build({*y});
  ASSERT_TRUE(g.ok());
  auto sched = Scheduler::create({sim, cpu});
  ASSERT_TRUE(sched.ok());
  ASSERT_TRUE((*sched)->allocate(*g).ok());
  for (size_t i = 0; i < g->nodes().size(); ++i) {
    if (g->nodes()[i] == *rows) {
      EXPECT_EQ((*sched)->device_of(i), 1) << (*sched)->describe(*g);
    }
  }
  EXPECT_EQ((*sched)->copy_count(), 0u) << (*sched)->describe(*g);
}

}  // namespace
}  // namespace loom::llm
