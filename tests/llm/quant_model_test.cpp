// Real quantized GGUF files (../shared/models/quant/: one random-weight
// llama, dim 256, quantized by a widely used GGUF tool to every common type;
// three also dequantized back to F32 by it). Every file loads and generates
// on the cpu; where the tool's F32 twin exists, greedy tokens from BOS agree
// with the twin's for the first steps and the logits' relative error is
// reported. IQ4_XS has no file there: Iq4XsModel writes one (and its twin).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <iterator>
#include <fstream>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "llm/model/llama_model.hpp"
#include "llm/session/generate.hpp"
#include "llm/session/llama_session.hpp"
#include "llm_test_util.hpp"
#include "loom/registry/registry.hpp"
#include "loom/runtime/types.hpp"

#include <unistd.h>

namespace loom::llm {
namespace {

namespace fs = std::filesystem;

std::string quant_file(const std::string& type) { return test::models_dir() + "/quant/synth256-" + type + ".gguf"; }

class QuantModels : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(quant_file("q4_k_m"))) GTEST_SKIP() << quant_file("q4_k_m") << " not found (set LOOM_MODELS_DIR)";
    registry::Options o;
    o.paths = {LOOM_TEST_PLUGIN_DIR};
    o.use_env = false;
    reg_ = registry::Registry::load(o);
    ASSERT_NE(reg_->device("cpu"), nullptr);
  }

  std::unique_ptr<LlamaModel> load(const std::string& path, const std::vector<std::string>& devices = {"cpu"}) {
    LoadOptions lo;
    for (const auto& d : devices) lo.devices.push_back(reg_->device(d));
    auto m = LlamaModel::load(path, lo);
    EXPECT_TRUE(m.ok()) << path << ": " << m.status().to_string();
    return m.ok() ? std::move(m).value() : nullptr;
  }

  // Greedy steps from BOS: the token chosen at each step and the logits of
  // the first step.
  static std::vector<TokenId> greedy(LlamaModel* m, int n, std::vector<float>* first_logits) {
    auto s = LlamaSession::create(m, {});
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return {};
    std::vector<TokenId> out;
    std::vector<TokenId> in = {1};  // BOS of the stories vocabulary these files carry
    for (int i = 0; i < n; ++i) {
      std::vector<float> logits;
      const Status st = (*s)->eval(in, false, &logits);
      EXPECT_TRUE(st.ok()) << st.to_string();
      if (!st.ok()) break;
      if (i == 0 && first_logits) *first_logits = logits;
      TokenId best = 0;
      for (size_t k = 1; k < logits.size(); ++k) {
        if (logits[k] > logits[static_cast<size_t>(best)]) best = static_cast<TokenId>(k);
      }
      out.push_back(best);
      in = {best};
    }
    return out;
  }

  std::unique_ptr<registry::Registry> reg_;
};

TEST_F(QuantModels, EveryTypeLoadsAndGenerates) {
  for (const char* t : {"bf16", "q4_1", "q5_0", "q5_1", "iq4_nl", "q2_k", "q3_k_m", "q4_k_m", "q5_k_m", "q6_k"}) {
    SCOPED_TRACE(t);
    if (!fs::exists(quant_file(t))) continue;
    auto m = load(quant_file(t));
    ASSERT_NE(m, nullptr);
    const std::vector<TokenId> toks = greedy(m.get(), 4, nullptr);
    ASSERT_EQ(toks.size(), 4u);
    for (TokenId id : toks) EXPECT_LT(id, m->hparams().n_vocab);
  }
}

TEST_F(QuantModels, GreedyTokensFollowTheToolsF32Twin) {
  for (const char* t : {"iq4_nl", "q2_k", "q3_k_m"}) {
    SCOPED_TRACE(t);
    const std::string twin = test::models_dir() + "/quant/synth256-" + t + ".deq-f32.gguf";
    if (!fs::exists(twin)) continue;
    auto q = load(quant_file(t));
    auto f = load(twin);
    ASSERT_NE(q, nullptr);
    ASSERT_NE(f, nullptr);
    std::vector<float> lq, lf;
    const std::vector<TokenId> tq = greedy(q.get(), 8, &lq);
    const std::vector<TokenId> tf = greedy(f.get(), 8, &lf);
    EXPECT_EQ(tq, tf);
    ASSERT_EQ(lq.size(), lf.size());
    double num = 0, den = 0;
    for (size_t i = 0; i < lq.size(); ++i) {
      num += (double(lq[i]) - lf[i]) * (double(lq[i]) - lf[i]);
      den += double(lf[i]) * lf[i];
    }
    const double rel = std::sqrt(num / den);
    std::cout << "[ quant ] " << t << " vs its F32 twin: first-step logits relative L2 error " << rel << "\n";
    EXPECT_LT(rel, 0.05);
  }
}

// A GGUF image's tensors as the test needs them: the bytes before the
// tensor infos (header and metadata, copied as they are), and per tensor
// its name, extents, type and data.
struct GgufTensors {
  std::vector<uint8_t> head;
  uint64_t alignment = 32;
  struct T {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    const uint8_t* data;
  };
  std::vector<T> tensors;
  std::vector<uint8_t> image;
};

// Parses just enough of a GGUF file (independently of the reader) to copy
// its metadata and reach every tensor's bytes; "" or why not.
std::string read_gguf(const std::string& path, GgufTensors* g) {
  std::ifstream f(path, std::ios::binary);
  g->image.assign(std::istreambuf_iterator<char>(f), {});
  const std::vector<uint8_t>& d = g->image;
  size_t o = 0;
  const auto take = [&](size_t n) {
    if (o + n > d.size()) throw std::runtime_error(path + ": truncated");
    const size_t at = o;
    o += n;
    return d.data() + at;
  };
  const auto u32 = [&] { uint32_t v; std::memcpy(&v, take(4), 4); return v; };
  const auto u64 = [&] { uint64_t v; std::memcpy(&v, take(8), 8); return v; };
  const auto str = [&] { const uint64_t n = u64(); return std::string(reinterpret_cast<const char*>(take(n)), n); };
  try {
    if (std::memcmp(take(4), "GGUF", 4) != 0) return path + ": not GGUF";
    u32();
    const uint64_t n_tensors = u64(), n_kv = u64();
    const auto skip = [&](uint32_t t, auto& self) -> void {
      static const size_t sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
      if (t == 8) {
        str();
      } else if (t == 9) {
        const uint32_t et = u32();
        const uint64_t n = u64();
        for (uint64_t i = 0; i < n; ++i) self(et, self);
      } else if (t < 13) {
        take(sizes[t]);
      } else {
        throw std::runtime_error(path + ": bad value type");
      }
    };
    for (uint64_t i = 0; i < n_kv; ++i) {
      const std::string key = str();
      const uint32_t t = u32();
      if (key == "general.alignment" && t == 4) {
        g->alignment = u32();
      } else {
        skip(t, skip);
      }
    }
    g->head.assign(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(o));
    std::vector<uint64_t> offs;
    for (uint64_t i = 0; i < n_tensors; ++i) {
      GgufTensors::T t;
      t.name = str();
      const uint32_t nd = u32();
      for (uint32_t k = 0; k < nd; ++k) t.ne.push_back(u64());
      t.type = u32();
      offs.push_back(u64());
      g->tensors.push_back(t);
    }
    const uint64_t data = (o + g->alignment - 1) / g->alignment * g->alignment;
    for (size_t i = 0; i < offs.size(); ++i) g->tensors[i].data = d.data() + data + offs[i];
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

uint64_t elements(const GgufTensors::T& t) {
  uint64_t n = 1;
  for (uint64_t e : t.ne) n *= e;
  return n;
}

// g's header and metadata with its tensors replaced by `tensors` (type and
// bytes each, in g's order; names and extents kept), written to `out`. ""
// or why not.
std::string write_gguf(const GgufTensors& g, const std::vector<std::pair<uint32_t, std::vector<uint8_t>>>& tensors,
                       const std::string& out) {
  std::vector<uint8_t> o = g.head;
  const auto put = [&o](const void* p, size_t n) {
    o.insert(o.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  };
  const auto pad = [&] { o.resize((o.size() + g.alignment - 1) / g.alignment * g.alignment, 0); };
  uint64_t off = 0;
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const auto& t = g.tensors[i];
    const uint64_t len = t.name.size();
    const uint32_t nd = static_cast<uint32_t>(t.ne.size()), type = tensors[i].first;
    put(&len, 8);
    put(t.name.data(), len);
    put(&nd, 4);
    put(t.ne.data(), 8 * t.ne.size());
    put(&type, 4);
    put(&off, 8);
    off += (tensors[i].second.size() + g.alignment - 1) / g.alignment * g.alignment;
  }
  pad();
  for (const auto& t : tensors) {
    put(t.second.data(), t.second.size());
    pad();
  }
  std::ofstream f(out, std::ios::binary);
  f.write(reinterpret_cast<const char*>(o.data()), static_cast<std::streamsize>(o.size()));
  return f ? "" : out + ": write failed";
}

// `path` with every tensor dequantized to F32 by loom::to_float (ggml's
// dequantization, bit for bit: the cpu's reference path matches the tool's
// twins exactly), written to `out`: an F32 twin for the files the tool made
// none of. "" or why not.
std::string write_f32_twin(const std::string& path, const std::string& out) {
  GgufTensors g;
  std::string err = read_gguf(path, &g);
  if (!err.empty()) return err;
  std::vector<std::pair<uint32_t, std::vector<uint8_t>>> f32;
  for (const auto& t : g.tensors) {
    std::vector<float> v(elements(t));
    loom::to_float(static_cast<int32_t>(t.type), t.data, v.data(), static_cast<int64_t>(v.size()));
    std::vector<uint8_t> bytes(4 * v.size());
    std::memcpy(bytes.data(), v.data(), bytes.size());
    f32.emplace_back(uint32_t{LOOM_TYPE_F32}, std::move(bytes));
  }
  return write_gguf(g, f32, out);
}

// The vulkan plugin has shaders for every weight type (shaders/quant.glsl):
// with vulkan0 alone (no cpu beside it, so a declined node would fail the
// load) every quantized file runs there. The shaders dequantize to f32 and
// multiply in f32 (the cpu rounds B to 8-bit blocks for these types, so its
// tokens may part from an exact run after a few steps), so the honest
// reference is an F32 twin: the tool's where it made one, else one written
// here by loom::to_float. The quantized file on vulkan0 gives the twin's
// greedy tokens (twin on the cpu and on vulkan0) and first-step logits
// within 1e-3 relative L2 of the twin's on either device. Measured: 3e-7
// to 1.6e-4 (f32 sums in another order; these random-weight models amplify
// it: the twin itself on vulkan0 vs the cpu differs up to 1.4e-4), while a
// wrong scale, nibble or bit in a shader gives 1e-2 and more.
double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return got.size() == want.size() && den > 0 ? std::sqrt(num / den) : INFINITY;
}

TEST_F(QuantModels, VulkanAloneRunsEveryTypeAsItsF32Twin) {
  if (reg_->device("vulkan0") == nullptr) GTEST_SKIP() << "no vulkan0 (the vulkan plugin is not built or finds no device)";
  const std::string tmp = (fs::temp_directory_path() / ("loom-quant-twin-" + std::to_string(::getpid()) + ".gguf")).string();
  for (const char* t : {"iq4_nl", "q2_k", "q3_k_m", "q4_1", "q5_0", "q5_1", "q4_k_m", "q5_k_m", "q6_k", "bf16"}) {
    SCOPED_TRACE(t);
    if (!fs::exists(quant_file(t))) continue;
    const std::string tool_twin = test::models_dir() + "/quant/synth256-" + t + ".deq-f32.gguf";
    const std::string err = write_f32_twin(quant_file(t), tmp);
    ASSERT_EQ(err, "");
    if (fs::exists(tool_twin)) {
      // The twin written here is the tool's, tensor for tensor.
      GgufTensors mine, tools;
      ASSERT_EQ(read_gguf(tmp, &mine), "");
      ASSERT_EQ(read_gguf(tool_twin, &tools), "");
      ASSERT_EQ(mine.tensors.size(), tools.tensors.size());
      for (size_t i = 0; i < mine.tensors.size(); ++i) {
        const auto& a = mine.tensors[i];
        const auto it = std::find_if(tools.tensors.begin(), tools.tensors.end(), [&](const auto& x) { return x.name == a.name; });
        ASSERT_NE(it, tools.tensors.end()) << a.name;
        EXPECT_EQ(it->type, uint32_t{LOOM_TYPE_F32});
        EXPECT_EQ(elements(*it), elements(a));
        EXPECT_EQ(std::memcmp(it->data, a.data, 4 * elements(a)), 0) << a.name << " differs from the tool's twin";
      }
    }
    const std::string twin = fs::exists(tool_twin) ? tool_twin : tmp;
    auto vk = load(quant_file(t), {"vulkan0"});
    auto vk_twin = load(twin, {"vulkan0"});
    auto cpu_twin = load(twin);
    ASSERT_NE(vk, nullptr);
    ASSERT_NE(vk_twin, nullptr);
    ASSERT_NE(cpu_twin, nullptr);
    std::vector<float> lv, lvt, lct;
    const std::vector<TokenId> tv = greedy(vk.get(), 8, &lv);
    EXPECT_EQ(tv, greedy(vk_twin.get(), 8, &lvt));
    EXPECT_EQ(tv, greedy(cpu_twin.get(), 8, &lct));
    const double rel_vk = rel_l2(lv, lvt), rel_cpu = rel_l2(lv, lct);
    std::cout << "[ quant ] " << t << " on vulkan0: first-step logits relative L2 error vs the F32 twin ("
              << (twin == tmp ? "loom's" : "the tool's") << ") on vulkan0 " << rel_vk << ", on the cpu " << rel_cpu
              << "\n";
    EXPECT_LT(rel_vk, 1e-3);
    EXPECT_LT(rel_cpu, 1e-3);
  }
  fs::remove(tmp);
}

// vulkan0's decode GEMV as its loom.details names it ("int8 ..." when B is
// rounded to 8-bit blocks), "" without the extension.
std::string vulkan_gemv(const registry::Device* d) {
  const auto* ext = static_cast<const loom_ext_details_t*>(d->extension(LOOM_EXT_DETAILS, LOOM_EXT_DETAILS_VERSION));
  if (ext == nullptr) return "";
  std::string text(1024, '\0');
  text.resize(std::min(text.size() - 1, ext->get_details(d->raw(), text.data(), text.size())));
  const size_t at = text.find("decode GEMV: ");
  return at == std::string::npos ? "" : text.substr(at + 13, text.find('\n', at) - at - 13);
}

// The int8 decode GEMV (mul_mat_vec_q8; on lavapipe only with
// LOOM_VULKAN_DISABLE=rows, ctest prefix vulkan_int8_model.) rounds B to
// 8-bit blocks by ggml's rule, as the cpu's int8 path does: the first
// step (one token, so every product is a GEMV) gives the cpu's logits on
// the quantized file up to f32 summation order, and stays within the
// cpu's own distance (GreedyTokensFollowTheToolsF32Twin: 0.05) of the F32
// twin. A wrong scale, offset or byte order gives 1e-2 and more against
// the cpu.
TEST_F(QuantModels, VulkanInt8DecodeRoundsBAsTheCpuDoes) {
  const registry::Device* vk0 = reg_->device("vulkan0");
  if (vk0 == nullptr) GTEST_SKIP() << "no vulkan0 (the vulkan plugin is not built or finds no device)";
  const std::string gemv = vulkan_gemv(vk0);
  if (gemv.rfind("int8", 0) != 0) GTEST_SKIP() << "vulkan0's decode GEMV is '" << gemv << "', not int8";
  for (const char* t : {"iq4_nl", "q2_k", "q3_k_m", "q4_1", "q5_0", "q5_1", "q4_k_m", "q5_k_m", "q6_k"}) {
    SCOPED_TRACE(t);
    if (!fs::exists(quant_file(t))) continue;
    auto vk = load(quant_file(t), {"vulkan0"});
    auto cpu = load(quant_file(t));
    ASSERT_NE(vk, nullptr);
    ASSERT_NE(cpu, nullptr);
    std::vector<float> lv, lc;
    greedy(vk.get(), 1, &lv);
    greedy(cpu.get(), 1, &lc);
    const double rel = rel_l2(lv, lc);
    std::cout << "[ quant ] " << t << " on vulkan0 (" << gemv << "): first-step logits relative L2 error vs the cpu "
              << rel << "\n";
    EXPECT_LT(rel, 1e-3);
  }
}

// With the cpu beside vulkan0 the scheduler may split the graph; the tokens
// are still the cpu's.
TEST_F(QuantModels, VulkanBesideTheCpuGivesTheCpusTokens) {
  if (reg_->device("vulkan0") == nullptr) GTEST_SKIP() << "no vulkan0 (the vulkan plugin is not built or finds no device)";
  auto cpu = load(quant_file("q4_k_m"));
  auto mixed = load(quant_file("q4_k_m"), {"vulkan0", "cpu"});
  ASSERT_NE(cpu, nullptr);
  ASSERT_NE(mixed, nullptr);
  EXPECT_EQ(greedy(mixed.get(), 6, nullptr), greedy(cpu.get(), 6, nullptr));
}

// IQ4_XS (ABI 1.4): ../shared/models/quant/ has no file of it, so the test
// writes one. A test-only quantizer (not ggml's search, just nearest levels
// under a per-sub-block scale) turns every weight of the tool's IQ4_NL F32
// twin whose rows are whole super-blocks into IQ4_XS blocks (all of them at
// dim 256: token embeddings, attention, FFN, output), and loom::to_float
// writes the IQ4_XS file's own F32 twin.
std::vector<uint8_t> quantize_iq4_xs(const float* x, int64_t n) {
  static const int kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  std::vector<uint8_t> out(static_cast<size_t>(n / 256) * sizeof(loom_block_iq4_xs_t));
  for (int64_t blk = 0; blk < n / 256; ++blk) {
    const float* v = x + 256 * blk;
    loom_block_iq4_xs_t b{};
    float sub[8], smax = 0.0f;
    for (int s = 0; s < 8; ++s) {
      float amax = 0.0f;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[32 * s + j]));
      sub[s] = amax / 127.0f;
      smax = std::max(smax, sub[s]);
    }
    const float d_want = smax / 31.0f;
    loom::from_float(LOOM_TYPE_F16, &d_want, &b.d, 1);
    float d;
    loom::to_float(LOOM_TYPE_F16, &b.d, &d, 1);
    for (int s = 0; s < 8; ++s) {
      const int ls = d > 0.0f ? std::clamp(static_cast<int>(std::lround(sub[s] / d)) + 32, 0, 63) : 32;
      b.scales_l[s / 2] = static_cast<uint8_t>(b.scales_l[s / 2] | ((ls & 0x0F) << (4 * (s % 2))));
      b.scales_h = static_cast<uint16_t>(b.scales_h | (((ls >> 4) & 3) << (2 * s)));
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 32; ++j) {
        int best = 8;
        float err = INFINITY;
        for (int q = 0; q < 16; ++q) {
          const float e = std::fabs(dl * static_cast<float>(kLevels[q]) - v[32 * s + j]);
          if (e < err) err = e, best = q;
        }
        uint8_t& byte = b.qs[16 * s + j % 16];
        byte = static_cast<uint8_t>(byte | (best << (j < 16 ? 0 : 4)));
      }
    }
    std::memcpy(out.data() + sizeof b * static_cast<size_t>(blk), &b, sizeof b);
  }
  return out;
}

class Iq4XsModel : public QuantModels {
 protected:
  void SetUp() override {
    QuantModels::SetUp();
    if (IsSkipped()) return;
    const std::string src = test::models_dir() + "/quant/synth256-iq4_nl.deq-f32.gguf";
    if (!fs::exists(src)) GTEST_SKIP() << src << " not found";
    const std::string stem = (fs::temp_directory_path() / ("loom-iq4xs-" + std::to_string(::getpid()))).string();
    file_ = stem + ".gguf";
    twin_ = stem + ".deq-f32.gguf";
    GgufTensors g;
    ASSERT_EQ(read_gguf(src, &g), "");
    std::vector<std::pair<uint32_t, std::vector<uint8_t>>> tensors;
    for (const auto& t : g.tensors) {
      ASSERT_EQ(t.type, uint32_t{LOOM_TYPE_F32}) << t.name;
      const auto* v = reinterpret_cast<const float*>(t.data);
      if (t.ne.size() == 2 && t.ne[0] % 256 == 0) {
        tensors.emplace_back(uint32_t{LOOM_TYPE_IQ4_XS}, quantize_iq4_xs(v, static_cast<int64_t>(elements(t))));
        ++quantized_;
      } else {
        tensors.emplace_back(t.type, std::vector<uint8_t>(t.data, t.data + 4 * elements(t)));
      }
    }
    ASSERT_EQ(write_gguf(g, tensors, file_), "");
    ASSERT_EQ(write_f32_twin(file_, twin_), "");
  }
  void TearDown() override {
    if (!file_.empty()) fs::remove(file_);
    if (!twin_.empty()) fs::remove(twin_);
  }
  std::string file_, twin_;
  int quantized_ = 0;
};

// On the cpu (B rounded to 8-bit blocks of 256 for the integer dots):
// first-step logits within the distance the tool's files keep
// (GreedyTokensFollowTheToolsF32Twin: 0.05; measured 0.026, a wrong scale
// bit or level gives far more) and the twin's greedy tokens for the first
// steps. This random-weight model has near ties later (measured: step 6 of
// 8 differs, within that rounding), so only 4 are held to; the exact f32
// path (vulkan0, below) keeps all 8.
TEST_F(Iq4XsModel, CpuForwardFollowsItsF32Twin) {
  EXPECT_GE(quantized_, 7) << "embeddings, q, k, v, o, the three FFN matrices (and the output) in IQ4_XS";
  auto q = load(file_);
  auto f = load(twin_);
  ASSERT_NE(q, nullptr);
  ASSERT_NE(f, nullptr);
  std::vector<float> lq, lf;
  const std::vector<TokenId> tq = greedy(q.get(), 4, &lq);
  const std::vector<TokenId> tf = greedy(f.get(), 4, &lf);
  EXPECT_EQ(tq, tf);
  const double rel = rel_l2(lq, lf);
  std::cout << "[ quant ] iq4_xs on the cpu vs its F32 twin: first-step logits relative L2 error " << rel << "\n";
  EXPECT_LT(rel, 0.05);
}

// On vulkan0 alone (the shaders dequantize to f32): the twin's tokens and
// logits within 1e-3, as for every other type (VulkanAloneRunsEveryTypeAsItsF32Twin).
TEST_F(Iq4XsModel, VulkanAloneFollowsItsF32Twin) {
  if (reg_->device("vulkan0") == nullptr) GTEST_SKIP() << "no vulkan0 (the vulkan plugin is not built or finds no device)";
  auto vk = load(file_, {"vulkan0"});
  auto f = load(twin_);
  ASSERT_NE(vk, nullptr);
  ASSERT_NE(f, nullptr);
  std::vector<float> lv, lf;
  const std::vector<TokenId> tv = greedy(vk.get(), 8, &lv);
  EXPECT_EQ(tv, greedy(f.get(), 8, &lf));
  const double rel = rel_l2(lv, lf);
  std::cout << "[ quant ] iq4_xs on vulkan0 vs its F32 twin on the cpu: first-step logits relative L2 error " << rel
            << "\n";
  EXPECT_LT(rel, 1e-3);
}

// vulkan0's int8 decode GEMV (ctest prefix vulkan_int8_model.) rounds B per
// 256 for IQ4_XS as the cpu does: the first step's logits agree with the
// cpu's up to f32 summation order (VulkanInt8DecodeRoundsBAsTheCpuDoes).
TEST_F(Iq4XsModel, VulkanInt8DecodeRoundsBAsTheCpuDoes) {
  const registry::Device* vk0 = reg_->device("vulkan0");
  if (vk0 == nullptr) GTEST_SKIP() << "no vulkan0 (the vulkan plugin is not built or finds no device)";
  const std::string gemv = vulkan_gemv(vk0);
  if (gemv.rfind("int8", 0) != 0) GTEST_SKIP() << "vulkan0's decode GEMV is '" << gemv << "', not int8";
  auto vk = load(file_, {"vulkan0"});
  auto cpu = load(file_);
  ASSERT_NE(vk, nullptr);
  ASSERT_NE(cpu, nullptr);
  std::vector<float> lv, lc;
  greedy(vk.get(), 1, &lv);
  greedy(cpu.get(), 1, &lc);
  const double rel = rel_l2(lv, lc);
  std::cout << "[ quant ] iq4_xs on vulkan0 (" << gemv << "): first-step logits relative L2 error vs the cpu " << rel
            << "\n";
  EXPECT_LT(rel, 1e-3);
}

}  // namespace
}  // namespace loom::llm
