// Device selection and the memory fit as a user sees them: the default
// policy auto (no emulated device, the cpu last), LOOM_DEVICES and
// cpu-only honoured, `run --fit` / `run -v` / `plan --fit` reports with
// the layer counts the sim devices' memory sizes allow, the cpu's text,
// and an explicit request that does not fit refused with the numbers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/json_test_util.hpp"
#include "cli/run_loom.hpp"
#include "loom/runtime/gguf.hpp"

namespace fs = std::filesystem;

namespace {

using loom::test::run_loom;

std::string model_path() {
  const char* env = std::getenv("LOOM_MODELS_DIR");
  return std::string(env && *env ? env : LOOM_TEST_SOURCE_DIR "/../shared/models") + "/stories260K.gguf";
}

const std::string kOps = "MUL_MAT,ADD,MUL,RMS_NORM,SOFT_MAX,SILU,GET_ROWS,CONT,CPY,SCALE";

// stories260K's sizes by fit.hpp's rules, computed here from the file
// (batch 32, context 512 given by -c, kv_pad 256): one layer's bytes and a
// sim device's compute estimate for the layers it holds.
struct Sizes {
  uint64_t layer = 0, compute = 0;
};

Sizes sizes(const std::string& path) {
  Sizes s;
  auto f = loom::GgufFile::open(path);
  EXPECT_TRUE(f.ok());
  if (!f.ok()) return s;
  for (const auto& t : f->tensors()) {
    if (t.name.rfind("blk.0.", 0) == 0) s.layer += t.nbytes;
  }
  auto u = [&](const char* k) { return static_cast<uint64_t>(*f->get_int(std::string("llama.") + k)); };
  const uint64_t e = u("embedding_length"), ff = u("feed_forward_length"), h = u("attention.head_count");
  const uint64_t hkv = f->has("llama.attention.head_count_kv") ? u("attention.head_count_kv") : h;
  const uint64_t kv = e / h * hkv;
  s.compute = 4 * 32 * (3 * e + e + 2 * kv + 3 * ff + 512 * h);
  return s;
}

std::string sims(const std::string& mem0, const std::string& mem1) {
  return "LOOM_SIM_DEVICES=2 LOOM_SIM_OPS_0=" + kOps + " LOOM_SIM_OPS_1=" + kOps + " LOOM_SIM_MEMORY_0=" + mem0 +
         " LOOM_SIM_MEMORY_1=" + mem1;
}
const std::string kSimPath = " --plugin-path " + std::string(LOOM_TEST_SIM_DIR);

}  // namespace

TEST(CliFit, DefaultIsAutoWithoutEmulatedDevicesAndTheCpuLast) {
  const std::string model = model_path();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  auto r = run_loom("run -m " + model + " -n 40 --json", "", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = loom::test::parse_json(r.out);
  ASSERT_GE(j.at("devices").size(), 1u);
  EXPECT_EQ(j.at("devices").back().get<std::string>(), "cpu");
  for (const auto& d : j.at("devices")) EXPECT_EQ(d.get<std::string>().rfind("vulkan", 0), std::string::npos) << r.out;
  EXPECT_EQ(j.at("text").get<std::string>().rfind("Once upon a time, there was a little girl named Lily.", 0), 0u);

  // cpu-only and LOOM_DEVICES are honoured; --device beats LOOM_DEVICES.
  auto c = run_loom("run -m " + model + " -n 4 --json --device cpu-only", "", false);
  ASSERT_EQ(c.exit_code, 0) << c.out;
  EXPECT_EQ(loom::test::parse_json(c.out).at("devices").dump(), "[\"cpu\"]");
  auto e = run_loom("run -m " + model + " -n 4 --json" + kSimPath, "LOOM_DEVICES=sim1,cpu " + sims("1", "100000000"), false);
  ASSERT_EQ(e.exit_code, 0) << e.out;
  EXPECT_EQ(loom::test::parse_json(e.out).at("devices").dump(), "[\"sim1\",\"cpu\"]");
  auto g = run_loom("run -m " + model + " -n 4 --json --device cpu" + kSimPath, "LOOM_DEVICES=sim1,cpu " + sims("1", "1"),
                    false);
  ASSERT_EQ(g.exit_code, 0) << g.out;
  EXPECT_EQ(loom::test::parse_json(g.out).at("devices").dump(), "[\"cpu\"]");
}

TEST(CliFit, AutoPlacesWhatFitsAndReportsIt) {
  const std::string model = model_path();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  const Sizes s = sizes(model);
  ASSERT_GT(s.layer, 0u);
  // sim0: room for 2 layers, sim1 for 1; the cpu keeps 2 and the output.
  const std::string env = sims(std::to_string(s.compute + 2 * s.layer + 1), std::to_string(s.compute + s.layer + 1));
  const std::string base = "-m " + model + " -c 512 --device sim0,sim1,cpu" + kSimPath;

  auto fit = run_loom("run --fit " + base, env, false);
  ASSERT_EQ(fit.exit_code, 0) << fit.out;
  EXPECT_NE(fit.out.find("layers chosen by free memory"), std::string::npos) << fit.out;
  EXPECT_EQ(fit.out.find("Once upon"), std::string::npos) << "--fit generated text: " << fit.out;
  // One row per device: name, free, weights, KV, compute, layers.
  auto row = [&](const std::string& text, const std::string& dev) {
    const size_t at = text.find("\n  " + dev + " ");
    return at == std::string::npos ? std::string() : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  EXPECT_NE(row(fit.out, "sim0").find(" 2"), std::string::npos) << fit.out;
  EXPECT_EQ(row(fit.out, "sim0").substr(row(fit.out, "sim0").size() - 2), " 2") << fit.out;
  EXPECT_EQ(row(fit.out, "sim1").substr(row(fit.out, "sim1").size() - 2), " 1") << fit.out;
  EXPECT_NE(row(fit.out, "cpu").find(" 2 +output"), std::string::npos) << fit.out;

  auto one = run_loom("run -m " + model + " -c 512 -n 30 --json --device cpu", "", false);
  auto r = run_loom("run -n 30 --json " + base, env, false);
  ASSERT_EQ(one.exit_code, 0) << one.out;
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto a = loom::test::parse_json(one.out), b = loom::test::parse_json(r.out);
  EXPECT_EQ(b.at("text").get<std::string>(), a.at("text").get<std::string>());
  EXPECT_EQ(b.at("placement").get<std::string>(), "sim0: layers 0-1; sim1: layer 2; cpu: layers 3-4, output");

  auto v = run_loom("run -v -n 2 " + base, env);
  ASSERT_EQ(v.exit_code, 0) << v.out;
  EXPECT_NE(v.out.find("free"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("weights"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("compute buffers reserved"), std::string::npos) << v.out;
  EXPECT_NE(row(v.out, "sim0").find("MiB"), std::string::npos) << v.out;

  // plan sizes a decode step (--batch 1) over the model's context: its own
  // numbers, the same report.
  auto p = run_loom("plan --fit -m " + model + " --device sim0,sim1,cpu" + kSimPath, env, false);
  ASSERT_EQ(p.exit_code, 0) << p.out;
  EXPECT_EQ(p.out.find("digraph"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("layers chosen by free memory"), std::string::npos) << p.out;
  EXPECT_NE(row(p.out, "sim1").find("MiB"), std::string::npos) << p.out;
  // Without --fit, the report on stderr and the DOT on stdout.
  auto dot = run_loom("plan -m " + model + " --device sim0,sim1,cpu" + kSimPath, env, false);
  ASSERT_EQ(dot.exit_code, 0) << dot.out;
  EXPECT_NE(dot.out.find("digraph"), std::string::npos) << dot.out.substr(0, 400);
  EXPECT_EQ(dot.out.find("layers chosen"), std::string::npos) << dot.out.substr(0, 400);
}

TEST(CliFit, ExplicitRequestThatDoesNotFitIsRefusedWithTheNumbers) {
  const std::string model = model_path();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  const Sizes s = sizes(model);
  const std::string free0 = std::to_string(s.compute + s.layer + 1);
  const std::string env = sims(free0, "1000");
  auto r = run_loom("run -n 2 -c 512 -m " + model + " --device sim0,cpu -ngl 99" + kSimPath, env);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("does not fit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sim0 needs " + std::to_string(5 * s.layer + s.compute) + " bytes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("but has " + free0 + " bytes"), std::string::npos) << r.out;
  auto ts = run_loom("run -n 2 -c 512 -m " + model + " --device sim0,sim1,cpu -ts 1,1,3" + kSimPath, env);
  EXPECT_EQ(ts.exit_code, 1) << ts.out;
  EXPECT_NE(ts.out.find("sim1 needs"), std::string::npos) << ts.out;
  auto ok = run_loom("run -n 2 -c 512 -m " + model + " --device sim0,cpu -ngl 1" + kSimPath, env);
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
}
