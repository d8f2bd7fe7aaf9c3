// `loom bench`: runs the built binary on stories260K and checks the JSON.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli/json_test_util.hpp"
#include "cli/run_loom.hpp"

namespace fs = std::filesystem;

namespace {

using BenchResult = loom::test::LoomResult;

// `loom bench <args>`; stderr kept or dropped.
BenchResult run_bench(const std::string& args, bool merge_stderr) {
  return loom::test::run_loom("bench " + args, "", merge_stderr);
}

std::string bench_model() {
  const char* env = std::getenv("LOOM_MODELS_DIR");
  return std::string(env && *env ? env : LOOM_TEST_SOURCE_DIR "/../shared/models") + "/stories260K.gguf";
}

const nlohmann::json* find_test(const nlohmann::json& j, const std::string& test) {
  for (const auto& r : j.at("results")) {
    if (r.at("test").get<std::string>() == test) return &r;
  }
  return nullptr;
}

}  // namespace

TEST(CliBench, JsonHasPositiveRates) {
  const std::string model = bench_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  BenchResult r = run_bench("-m " + model + " -p 16 -n 8 -r 2 --threads 1 --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = loom::test::parse_json(r.out);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j.at("model").get<std::string>(), "stories260K.gguf");
  EXPECT_GT(j.at("size_bytes").get<double>(), 0);
  const nlohmann::json* pp = find_test(j, "pp16");
  const nlohmann::json* tg = find_test(j, "tg8");
  ASSERT_NE(pp, nullptr) << r.out;
  ASSERT_NE(tg, nullptr) << r.out;
  EXPECT_GT((*pp).at("avg_ts").get<double>(), 0) << r.out;
  EXPECT_GT((*tg).at("avg_ts").get<double>(), 0) << r.out;
  EXPECT_EQ((*pp).at("samples_ts").size(), 2u);
  EXPECT_EQ((*tg).at("samples_ts").size(), 2u);
  // The default policy auto: the accelerators that are not emulated, the cpu last.
  const std::string dev = (*tg).at("device").get<std::string>();
  EXPECT_TRUE(dev == "cpu" || (dev.size() > 4 && dev.substr(dev.size() - 4) == ",cpu")) << dev;
  EXPECT_GT(j.at("bandwidth").at("read_gb_per_s").get<double>(), 0) << r.out;
  EXPECT_GT(j.at("gen_bound").at("tokens_per_s").get<double>(), 0) << r.out;
  // The bound counts the KV cache a step attends over as well as the weights.
  EXPECT_GT(j.at("gen_bound").at("kv_bytes_per_token").get<double>(), 0) << r.out;
  EXPECT_GT(j.at("gen_bound").at("weights_only_tokens_per_s").get<double>(),
            j.at("gen_bound").at("tokens_per_s").get<double>())
      << r.out;
  // Every tg repetition has its own bandwidth probe and ratio to the bound
  // that probe gives: tokens/s x bytes per token / bandwidth.
  const nlohmann::json& beside = tg->at("beside_gb_per_s");
  const nlohmann::json& ratios = tg->at("beside_bound_ratios");
  ASSERT_EQ(beside.size(), 2u) << r.out;
  ASSERT_EQ(ratios.size(), 2u) << r.out;
  const double per_token = j.at("gen_bound").at("weight_bytes_per_token").get<double>() +
                           j.at("gen_bound").at("kv_bytes_per_token").get<double>();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_GT(beside[i].get<double>(), 0) << r.out;
    const double want = tg->at("samples_ts")[i].get<double>() * per_token / (beside[i].get<double>() * 1e9);
    EXPECT_NEAR(ratios[i].get<double>(), want, 1e-9 * want) << r.out;
  }
}

// Prefill alone (-n 0) and generation alone with one token (-p 0 -n 1): the
// context is exactly what is measured, so the untimed warm-up must not add
// a decode step to the prompt batch (it did: "16 cached + 1 new tokens
// exceed the context of 16 tokens").
TEST(CliBench, OnlyPrefillOrOnlyOneTokenFitsTheContext) {
  const std::string model = bench_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  for (const char* args : {"-p 16 -n 0", "-p 0 -n 1"}) {
    BenchResult r = run_bench("-m " + model + " " + args + " -r 1 --threads 1 --json", true);
    ASSERT_EQ(r.exit_code, 0) << args << ": " << r.out;
    EXPECT_NE(r.out.find(args[3] == '1' ? "\"pp16\"" : "\"tg1\""), std::string::npos) << args << ": " << r.out;
  }
}

// Byte counts are JSON integers written with every digit: stories260K's
// weights (about 1 MB) once printed as 1.04038e+06.
TEST(CliBench, JsonByteCountsAreExactIntegers) {
  const std::string model = bench_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  BenchResult r = run_bench("-m " + model + " -p 4 -n 2 -r 1 --threads 1 --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = loom::test::parse_json(r.out);
  ASSERT_TRUE(j.is_object()) << r.out;
  const nlohmann::json* counts[] = {&j.at("size_bytes"), &j.at("bandwidth").at("buffer_bytes"),
                                    &j.at("gen_bound").at("weight_bytes_per_token"),
                                    &j.at("gen_bound").at("kv_bytes_per_token")};
  for (const nlohmann::json* c : counts) {
    EXPECT_TRUE(c->is_number_unsigned()) << c->dump() << " in " << r.out;
    // The text itself: the digits of the value, not a rounded float.
    const std::string digits = std::to_string(c->get<uint64_t>());
    EXPECT_NE(r.out.find(":" + digits + ","), std::string::npos) << digits << " in " << r.out;
  }
  EXPECT_GT(j.at("size_bytes").get<uint64_t>(), 1000000u);
  EXPECT_GT(j.at("gen_bound").at("weight_bytes_per_token").get<uint64_t>(), 1000000u);
}

// --kv-type: the cache type is in the JSON and the bound counts its bytes
// (f32 rows are twice the f16 ones; f16 is the default).
TEST(CliBench, KvTypeSetsTheCacheAndItsBytes) {
  const std::string model = bench_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  double kv_bytes[2] = {0, 0};
  const char* const types[2] = {"f16", "f32"};
  for (int i = 0; i < 2; ++i) {
    BenchResult r = run_bench("-m " + model + " -p 8 -n 4 -r 1 --threads 1 --json --kv-type " + types[i], false);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const nlohmann::json j = loom::test::parse_json(r.out);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j.at("kv_type").get<std::string>(), types[i]) << r.out;
    kv_bytes[i] = j.at("gen_bound").at("kv_bytes_per_token").get<double>();
  }
  EXPECT_GT(kv_bytes[0], 0);
  EXPECT_DOUBLE_EQ(kv_bytes[1], 2 * kv_bytes[0]);
  BenchResult def = run_bench("-m " + model + " -p 4 -n 1 -r 1 --threads 1 --json", false);
  ASSERT_EQ(def.exit_code, 0) << def.out;
  const nlohmann::json j = loom::test::parse_json(def.out);
  ASSERT_TRUE(j.is_object()) << def.out;
  EXPECT_EQ(j.at("kv_type").get<std::string>(), "f16") << def.out;
}

TEST(CliBench, TableHasPpAndTgRows) {
  const std::string model = bench_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  BenchResult r = run_bench("-m " + model + " -p 8 -n 4 -r 1 --threads 1", true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("| model | size | type | device | threads | test | t/s |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| pp8 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| tg4 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("generation bound"), std::string::npos) << r.out;
}

TEST(CliBench, BadArguments) {
  for (const char* args : {"-r 0", "-p lots", "-n -1", "--threads 0", "--threads 1,,2", "--batch 0", "-p 0 -n 0",
                           "--bogus", "-m", "--kv-type q4_0", "--kv-type", "--sparse 1"}) {
    BenchResult r = run_bench(args, true);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find("loom bench:"), std::string::npos) << args << ": " << r.out;
  }
  BenchResult missing = run_bench("-m /nonexistent/model.gguf", true);
  EXPECT_EQ(missing.exit_code, 1) << missing.out;
  EXPECT_NE(missing.out.find("/nonexistent/model.gguf"), std::string::npos) << missing.out;
  const std::string model = bench_model();
  if (!fs::exists(model)) return;
  BenchResult dev = run_bench("-m " + model + " --device nosuch -p 4 -n 1 -r 1", true);
  EXPECT_EQ(dev.exit_code, 1) << dev.out;
  EXPECT_NE(dev.out.find("nosuch"), std::string::npos) << dev.out;
  BenchResult ctx = run_bench("-m " + model + " -p 100000 -n 1 -r 1", true);
  EXPECT_NE(ctx.exit_code, 0) << ctx.out;
  EXPECT_NE(ctx.out.find("loom bench:"), std::string::npos) << ctx.out;
}

// The host probe reads memory, not cache: its buffer is several times the
// last-level cache it reports, read with vector loads on pinned threads, and
// `loom bench` says so (issue: a 256 MiB probe on a 260 MiB L3 flattered the bound).
TEST(CliBench, HostProbeReadsBeyondTheLastLevelCache) {
  const std::string model = bench_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  BenchResult r = run_bench("-m " + model + " -p 0 -n 4 -r 1 --threads 2 --device cpu --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const nlohmann::json j = loom::test::parse_json(r.out);
  const nlohmann::json& bw = j.at("bandwidth");
  EXPECT_EQ(bw.at("memory").get<std::string>(), "host") << r.out;
  const std::string probe = bw.at("probe").get<std::string>();
  EXPECT_NE(probe.find("vector sum"), std::string::npos) << probe;
  EXPECT_NE(probe.find("pinned"), std::string::npos) << probe;
  const double buffer = bw.at("buffer_bytes").get<double>();
  const double cache = bw.at("cache_bytes").get<double>();
  if (bw.at("cache_source").get<std::string>() == "unknown") GTEST_SKIP() << "no cache size reported here";
  ASSERT_GT(cache, 0) << r.out;
  // 4x the cache unless a quarter of the free memory is less; never within it.
  EXPECT_GT(buffer, cache) << r.out;
  EXPECT_GE(buffer, 256.0 * 1024 * 1024) << r.out;
}

// The table's footnote names the probe and its buffer against the cache.
TEST(CliBench, TextNamesTheProbe) {
  const std::string model = bench_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  BenchResult r = run_bench("-m " + model + " -p 0 -n 2 -r 1 --device cpu", true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("memory bandwidth"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vector sum ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" buffer"), std::string::npos) << r.out;
}
