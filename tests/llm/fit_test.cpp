// llm::fit_model: stories260K sized before loading on sim devices of given
// memory sizes (LOOM_SIM_MEMORY_i). The expected layer counts are computed
// here from the file's tensor infos and the sizing rules fit.hpp documents;
// the plan's split, given to LoadOptions, loads and generates the cpu's
// tokens; requests that cannot fit are errors with the numbers.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "llm/model/llama_hparams.hpp"
#include "llm/model/llama_model.hpp"
#include "llm/placement/fit.hpp"
#include "llm/session/generate.hpp"
#include "llm/session/llama_session.hpp"
#include "llm_test_util.hpp"
#include "loom/runtime/gguf.hpp"
#include "loom/registry/registry.hpp"
#include "registry/registry_test_util.hpp"

namespace loom::llm {
namespace {

using test::kSimOps;
using test::ScopedEnv;
using test::stories_path;

// The sizes of stories260K by the rules of fit.hpp, computed from the file
// directly (F16 KV, batch 32, kv_pad 256, the training context).
struct Expected {
  uint64_t layer = 0;   // bytes of one layer's tensors (all equal in this model)
  uint64_t output = 0;  // output_norm (+ output.weight when untied)
  uint64_t total = 0;   // every tensor
  uint64_t kv = 0;      // KV bytes per layer
  uint64_t layer_compute = 0, output_compute = 0;
  int64_t n_layer = 0;
};

Expected expected() {
  Expected e;
  auto f = GgufFile::open(stories_path());
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  LlamaHparams h;
  EXPECT_TRUE(read_llama_hparams(*f, "llama", &h).ok());
  EXPECT_TRUE(read_llama_vocab(*f, &h).ok());
  e.n_layer = h.n_layer;
  for (const GgufTensorInfo& t : f->tensors()) {
    e.total += t.nbytes;
    if (t.name.rfind("blk.0.", 0) == 0) e.layer += t.nbytes;
    if (t.name == "output_norm.weight" || t.name == "output.weight") e.output += t.nbytes;
  }
  const uint64_t n_ctx = static_cast<uint64_t>(h.n_ctx_train);
  e.kv = 2 * 2 * static_cast<uint64_t>(h.kv_dim()) * n_ctx;  // K and V, F16
  const uint64_t n = std::min<uint64_t>(32, n_ctx);
  const uint64_t n_kv = (n_ctx + 255) / 256 * 256;
  e.layer_compute = 4 * n *
                    (static_cast<uint64_t>(3 * h.n_embd + h.q_dim() + 2 * h.kv_dim() + 3 * h.n_ff) +
                     n_kv * static_cast<uint64_t>(h.n_head));
  e.output_compute = 4 * n * static_cast<uint64_t>(h.n_embd + h.n_vocab);
  return e;
}

class Fit : public ::testing::Test {
 protected:
  void load(const std::string& mem0, const std::string& mem1) {
    ScopedEnv n("LOOM_SIM_DEVICES", std::optional<std::string>("2"));
    ScopedEnv ops0("LOOM_SIM_OPS_0", std::optional<std::string>(kSimOps));
    ScopedEnv ops1("LOOM_SIM_OPS_1", std::optional<std::string>(kSimOps));
    ScopedEnv host0("LOOM_SIM_HOST_0", std::nullopt);
    ScopedEnv host1("LOOM_SIM_HOST_1", std::nullopt);
    ScopedEnv m0("LOOM_SIM_MEMORY_0", std::optional<std::string>(mem0));
    ScopedEnv m1("LOOM_SIM_MEMORY_1", std::optional<std::string>(mem1));
    reg_ = registry::Registry::load(test::only({std::string(LOOM_TEST_SIM_DIR) + "/libloom-sim.so",
                                                std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom-cpu.so"}));
    ASSERT_NE(reg_->device("cpu"), nullptr) << test::describe(*reg_);
    ASSERT_NE(reg_->device("sim0"), nullptr) << test::describe(*reg_);
    ASSERT_NE(reg_->device("sim1"), nullptr) << test::describe(*reg_);
  }
  void SetUp() override {
    if (!std::ifstream(stories_path()).good()) {
      GTEST_SKIP() << stories_path() << " not found (set LOOM_MODELS_DIR to the folder holding stories260K.gguf)";
    }
    e_ = expected();
  }
  std::vector<registry::Device*> devs(const std::vector<std::string>& names) {
    std::vector<registry::Device*> out;
    for (const auto& s : names) out.push_back(reg_->device(s));
    return out;
  }
  std::vector<TokenId> greedy(const LoadOptions& lo, std::string* placement) {
    auto m = LlamaModel::load(stories_path(), lo);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    if (!m.ok()) return {};
    if (placement) *placement = (*m)->placement();
    auto s = LlamaSession::create(m->get(), {});
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return {};
    GenerateOptions g;
    g.n_predict = 24;
    auto r = generate(**s, *(*m)->tokenizer(), "", g);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? r->generated_tokens : std::vector<TokenId>();
  }

  Expected e_;
  std::unique_ptr<registry::Registry> reg_;
};

// Memory for k layers on a sim device (its KV stays on the cpu: the sim
// devices cannot write cache rows), and one byte more.
std::string room_for(const Expected& e, int k, bool output) {
  uint64_t b = e.layer_compute + static_cast<uint64_t>(k) * e.layer + (output ? e.output + e.output_compute : 0);
  return std::to_string(b + 1);
}

TEST_F(Fit, AutoPutsWhatFitsOnEachSimAndTheRestOnCpu) {
  ASSERT_EQ(e_.n_layer, 5);
  load(room_for(e_, 2, false), room_for(e_, 1, false));
  FitRequest r;
  r.devices = devs({"sim0", "sim1", "cpu"});
  auto plan = fit_model(stories_path(), r);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->devices.size(), 3u);
  EXPECT_TRUE(plan->automatic);
  EXPECT_EQ(plan->devices[0].layers, 2);
  EXPECT_EQ(plan->devices[1].layers, 1);
  EXPECT_EQ(plan->devices[2].layers, 2);
  EXPECT_TRUE(plan->devices[2].output);
  EXPECT_EQ(plan->devices[0].weights, 2 * e_.layer);
  EXPECT_EQ(plan->devices[1].weights, e_.layer);
  EXPECT_EQ(plan->devices[2].weights, e_.total - 3 * e_.layer);
  EXPECT_EQ(plan->devices[0].kv, 0u);
  EXPECT_EQ(plan->devices[2].kv, 5 * e_.kv);  // every layer's cache on the cpu
  EXPECT_EQ(plan->devices[0].compute, e_.layer_compute);
  EXPECT_LE(plan->devices[0].need(), plan->devices[0].free);
  EXPECT_EQ(plan->tensor_split, (std::vector<double>{2, 1, 2}));
  const std::string rep = plan->report();
  EXPECT_NE(rep.find("sim0"), std::string::npos) << rep;
  EXPECT_NE(rep.find("layers chosen by free memory"), std::string::npos) << rep;

  LoadOptions cpu;
  cpu.devices = devs({"cpu"});
  const std::vector<TokenId> want = greedy(cpu, nullptr);
  LoadOptions lo;
  lo.devices = r.devices;
  lo.tensor_split = plan->tensor_split;
  std::string placement;
  EXPECT_EQ(greedy(lo, &placement), want);
  EXPECT_EQ(placement, "sim0: layers 0-1; sim1: layer 2; cpu: layers 3-4, output");
}

TEST_F(Fit, AllLayersAndTheOutputWhenTheyFit) {
  load(room_for(e_, 5, true), room_for(e_, 1, false));
  FitRequest r;
  r.devices = devs({"sim0", "sim1", "cpu"});
  auto plan = fit_model(stories_path(), r);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->devices[0].layers, 5);
  EXPECT_TRUE(plan->devices[0].output);
  EXPECT_EQ(plan->devices[1].layers, 0);
  EXPECT_EQ(plan->devices[2].layers, 0);
  // Room for 5 layers but not the output head too: 4 layers, cpu keeps one.
  load(room_for(e_, 5, false), room_for(e_, 0, false));
  r.devices = devs({"sim0", "sim1", "cpu"});
  plan = fit_model(stories_path(), r);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->devices[0].layers, 5 - 1) << plan->report();
  EXPECT_EQ(plan->devices[2].layers, 1) << plan->report();
  EXPECT_TRUE(plan->devices[2].output);
}

TEST_F(Fit, TooSmallForAnyLayerKeepsEverythingOnCpu) {
  load("1000", "1000");
  FitRequest r;
  r.devices = devs({"sim0", "sim1", "cpu"});
  auto plan = fit_model(stories_path(), r);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->devices[2].layers, 5);
  EXPECT_TRUE(plan->tensor_split.empty());
  EXPECT_EQ(plan->n_gpu_layers, 0);
}

TEST_F(Fit, ExplicitRequestThatDoesNotFitIsAnErrorWithTheNumbers) {
  load(room_for(e_, 1, false), "1000");
  FitRequest r;
  r.devices = devs({"sim0", "cpu"});
  r.n_gpu_layers = 3;
  auto plan = fit_model(stories_path(), r);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), StatusCode::kResourceExhausted);
  const std::string need = std::to_string(3 * e_.layer + e_.layer_compute);
  EXPECT_NE(plan.status().message().find("sim0 needs " + need + " bytes"), std::string::npos)
      << plan.status().message();
  EXPECT_NE(plan.status().message().find("but has " + room_for(e_, 1, false) + " bytes"), std::string::npos)
      << plan.status().message();
  // One layer fits.
  r.n_gpu_layers = 1;
  EXPECT_TRUE(fit_model(stories_path(), r).ok());
  // A split giving sim1 (1000 bytes) a layer does not.
  r.devices = devs({"sim0", "sim1", "cpu"});
  r.tensor_split = {1, 1, 3};
  plan = fit_model(stories_path(), r);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("sim1 needs"), std::string::npos) << plan.status().message();
  EXPECT_EQ(plan.status().message().find("sim0 needs"), std::string::npos) << plan.status().message();
  // Everything on sim0 alone (the host device when no cpu is listed).
  r.devices = devs({"sim0"});
  r.tensor_split.clear();
  r.n_gpu_layers = -1;
  plan = fit_model(stories_path(), r);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("sim0 needs"), std::string::npos) << plan.status().message();
}

// The fit report and the load are one placement (llm/placement/placement.hpp): for
// an automatic fit, -ngl, a tensor split and a split with overrides, the
// plan's device of every layer and of the output is the loaded model's, and
// the bytes it counts off the host device are the ones the load moved.
TEST_F(Fit, ReportAndLoadPlaceEveryLayerAlike) {
  load(room_for(e_, 2, false), room_for(e_, 1, false));
  const std::vector<registry::Device*> three = devs({"sim0", "sim1", "cpu"});
  std::vector<std::pair<std::string, LoadOptions>> cases(4);
  for (auto& [what, lo] : cases) {
    lo.devices = three;
    lo.check_fit = true;
  }
  cases[0].first = "auto";
  cases[0].second.n_gpu_layers = -1;
  cases[1].first = "-ngl 2";
  cases[1].second.n_gpu_layers = 2;
  cases[2].first = "-ts 1,1,3";
  cases[2].second.tensor_split = {1, 1, 3};
  cases[3].first = "-ts 2,1,2 -ot blk.0.ffn_*=cpu";
  cases[3].second.tensor_split = {2, 1, 2};
  cases[3].second.overrides = {{"blk\\.0\\.ffn_.*", reg_->device("cpu")}};
  for (const auto& [what, lo] : cases) {
    SCOPED_TRACE(what);
    auto plan = fit_model(stories_path(), fit_request(lo));
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    auto m = LlamaModel::load(stories_path(), lo);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    ASSERT_NE((*m)->fit(), nullptr);
    EXPECT_EQ((*m)->fit()->layer_device, plan->layer_device);
    ASSERT_EQ(plan->layer_device.size(), static_cast<size_t>(e_.n_layer));
    int64_t offloaded = 0;
    for (int64_t il = 0; il < e_.n_layer; ++il) {
      registry::Device* d = plan->devices[plan->layer_device[static_cast<size_t>(il)]].device;
      EXPECT_EQ(d, (*m)->layer_device(il)) << "layer " << il;
      offloaded += d != reg_->device("cpu") ? 1 : 0;
    }
    EXPECT_EQ((*m)->n_gpu_layers(), offloaded);
    uint64_t off_bytes = 0;
    for (const DeviceFit& f : plan->devices) {
      if (f.output) {
        EXPECT_EQ(f.device, (*m)->output_device());
      }
      if (!f.host) off_bytes += f.weights;  // stories260K has no rope_freqs to copy
    }
    EXPECT_EQ(off_bytes, (*m)->offloaded_bytes()) << plan->report();
  }
  {  // The automatic case offloads what the fit chose: 2 layers, 1 layer, the rest.
    auto m = LlamaModel::load(stories_path(), cases[0].second);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ((*m)->placement(), "sim0: layers 0-1; sim1: layer 2; cpu: layers 3-4, output");
  }
  // The overrides moved blk.0's FFN back to the cpu.
  auto o = LlamaModel::load(stories_path(), cases[3].second);
  ASSERT_TRUE(o.ok()) << o.status().to_string();
  EXPECT_EQ((*o)->weight_device((*o)->layers[0].ffn_up), reg_->device("cpu"));
  EXPECT_EQ((*o)->weight_device(test::q_weight((*o)->layers[0])), reg_->device("sim0"));
}

// LoadOptions::n_gpu_layers < 0 is the automatic fit inside the load: what
// does not fit is refused before any weight is placed, with the numbers.
TEST_F(Fit, LoadFitsByItselfAndRefusesWhatCannotFit) {
  load(room_for(e_, 2, false), room_for(e_, 1, false));
  LoadOptions lo;
  lo.devices = devs({"sim0", "cpu"});
  lo.n_gpu_layers = -1;
  std::string placement;
  LoadOptions cpu;
  cpu.devices = devs({"cpu"});
  EXPECT_EQ(greedy(lo, &placement), greedy(cpu, nullptr));
  EXPECT_EQ(placement, "sim0: layers 0-1; cpu: layers 2-4, output");
  lo.devices = devs({"sim0"});
  auto m = LlamaModel::load(stories_path(), lo);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(m.status().message().find("sim0 needs"), std::string::npos) << m.status().message();
  // An explicit request is checked only when asked (check_fit).
  lo.devices = devs({"sim0", "cpu"});
  lo.n_gpu_layers = 3;
  lo.check_fit = true;
  m = LlamaModel::load(stories_path(), lo);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("does not fit"), std::string::npos) << m.status().message();
}

}  // namespace
}  // namespace loom::llm
