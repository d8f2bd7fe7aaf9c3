// Runs the built `loom` binary as a user would and checks its output.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cli/json_test_util.hpp"
#include "cli/run_loom.hpp"

namespace fs = std::filesystem;

namespace {

using Result = loom::test::LoomResult;
using loom::test::run_loom;
using loom::test::stories_model;

nlohmann::json parse_or_fail(const std::string& text) { return loom::test::parse_json(text); }

// The record of plugin `name`: its ready variant when one is, else the first.
const nlohmann::json* find_plugin(const nlohmann::json& j, const std::string& name) {
  const nlohmann::json* first = nullptr;
  for (const auto& p : j.at("plugins")) {
    if (p.at("plugin").get<std::string>() != name) continue;
    if (p.at("fate").get<std::string>() == "ready") return &p;
    if (!first) first = &p;
  }
  return first;
}

bool has_device(const nlohmann::json& j, const std::string& name) {
  for (const auto& d : j.at("devices")) {
    if (d.at("name").get<std::string>() == name) return true;
  }
  return false;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/loom-cli-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

TEST(Cli, VersionAndHelp) {
  Result v = run_loom("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("loom " LOOM_VERSION_STRING_FOR_TEST), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("plugin ABI 1."), std::string::npos) << v.out;
  Result h = run_loom("--help");
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("devices"), std::string::npos);
  EXPECT_NE(h.out.find("LOOM_PLUGIN_PATH"), std::string::npos);
}

TEST(Cli, BadArgumentsExitTwo) {
  Result r = run_loom("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("unknown command 'frobnicate'"), std::string::npos) << r.out;
  Result d = run_loom("devices --bogus");
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_NE(d.out.find("--bogus"), std::string::npos) << d.out;
  Result e = run_loom("");
  EXPECT_EQ(e.exit_code, 2);
  // Both value forms, a value missing at the end, a switch given a value.
  for (const char* args : {"run -m", "bench --model", "plan --device", "profile -o", "tokenize -p"}) {
    Result m = run_loom(args);
    EXPECT_EQ(m.exit_code, 2) << args;
    EXPECT_NE(m.out.find("needs a value"), std::string::npos) << args << ": " << m.out;
  }
  for (const char* args : {"run --fit=1 -m x", "plan --fit=yes -m x", "tokenize --ids=1 -m x -p a"}) {
    Result s = run_loom(args);
    EXPECT_EQ(s.exit_code, 2) << args;
    EXPECT_NE(s.out.find("unexpected argument '--"), std::string::npos) << args << ": " << s.out;
  }
  Result inl = run_loom("run --model=/nonexistent/m.gguf -n 1");
  EXPECT_EQ(inl.exit_code, 1) << inl.out;  // parsed: the model file is what fails
  EXPECT_NE(inl.out.find("/nonexistent/m.gguf"), std::string::npos) << inl.out;
}

// One option table (tools/loom/options/option_table.cpp): a flag is refused with
// the same words and exit status 2 by every command that takes it (chat
// used to ignore a bad --threads that run refused), and every command's
// --help is written from it.
TEST(Cli, EveryCommandRefusesBadValuesAlike) {
  const std::string m = " -m /nonexistent/model.gguf";
  for (const char* cmd : {"run", "chat", "bench"}) {
    Result r = run_loom(std::string(cmd) + " --threads abc" + m);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("--threads 'abc': expected an integer in [1, 1024]"), std::string::npos) << cmd << ": "
                                                                                                  << r.out;
    Result t = run_loom(std::string(cmd) + " -t 0" + m);
    EXPECT_EQ(t.exit_code, 2) << cmd << ": " << t.out;
    EXPECT_NE(t.out.find("-t '0': expected an integer in [1, 1024]"), std::string::npos) << cmd << ": " << t.out;
  }
  for (const char* cmd : {"run", "chat", "bench", "plan", "profile", "check", "conformance"}) {
    Result r = run_loom(std::string(cmd) + " --device ''" + m);
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.out;
    EXPECT_NE(r.out.find("--device '': expected a device list or policy"), std::string::npos) << cmd << ": " << r.out;
  }
  for (const char* cmd : {"run", "chat", "profile"}) {
    for (const char* bad : {"abc", "0", "1.5"}) {
      Result r = run_loom(std::string(cmd) + " -c " + bad + m);
      EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.out;
      EXPECT_NE(r.out.find(std::string("-c '") + bad + "': expected an integer >= 1"), std::string::npos)
          << cmd << ": " << r.out;
      EXPECT_EQ(r.out.find("at most"), std::string::npos) << cmd << ": " << r.out;
    }
    // Too large: the message names the largest value (also past int64).
    for (const char* big : {"2147483648", "99999999999999999999999"}) {
      Result r = run_loom(std::string(cmd) + " -c " + big + m);
      EXPECT_EQ(r.exit_code, 2) << cmd << ": " << r.out;
      EXPECT_NE(r.out.find(std::string("-c '") + big + "': expected an integer >= 1, at most 2147483647"),
                std::string::npos)
          << cmd << ": " << r.out;
    }
  }
  for (const char* cmd :
       {"devices", "check", "run", "plan", "bench", "tokenize", "chat", "conformance", "profile", "serve"}) {
    Result h = run_loom(std::string(cmd) + " --help");
    EXPECT_EQ(h.exit_code, 0) << cmd;
    EXPECT_NE(h.out.find(std::string("usage: loom ") + cmd + " [options]"), std::string::npos) << h.out;
    EXPECT_NE(h.out.find("--plugin-path DIR"), std::string::npos) << h.out;
    // Each flag once: one row of the table per command.
    std::istringstream lines(h.out);
    std::set<std::string> flags;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("  -", 0) != 0) continue;
      const size_t at = line.find("--");
      const std::string flag = line.substr(at, line.find(' ', at) - at);
      EXPECT_TRUE(flags.insert(flag).second) << cmd << ": " << flag << " twice";
    }
  }
  // A flag of other commands is named with them; an unknown one is called so.
  Result other = run_loom("run --n-gen 3" + m);
  EXPECT_EQ(other.exit_code, 2) << other.out;
  EXPECT_NE(other.out.find("loom run: unexpected argument '--n-gen': an option of bench, not of run"),
            std::string::npos)
      << other.out;
  Result unknown = run_loom("chat --bogus" + m);
  EXPECT_EQ(unknown.exit_code, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("loom chat: unknown option '--bogus'"), std::string::npos) << unknown.out;
  Result run = run_loom("run --help");
  EXPECT_NE(run.out.find("-t, --threads N"), std::string::npos) << run.out;
  std::string flat = run.out;  // the help wraps lines
  for (char& c : flat) c = c == '\n' ? ' ' : c;
  EXPECT_NE(flat.find("(llama, qwen2, qwen3, qwen3moe, phi3, gemma, gemma2, gemma3, smollm3, granite, granitemoe, "
                      "qwen2vl, exaone, ernie4_5, internlm2, command-r, olmo2, gpt2, gptneox, phi2, starcoder2, "
                      "stablelm, cohere2, qwen2moe, olmoe, glm4, minicpm, exaone4, bloom, mpt, falcon, starcoder, "
                      "olmo, nemotron, arcee, seed_oss, baichuan, qwen3vl, qwen3vlmoe)"),
            std::string::npos)
      << run.out;                                                                // llm/model/arch's table
  EXPECT_EQ(run.out.find("--n-gen"), std::string::npos) << run.out;              // bench's, not run's
  Result chat = run_loom("chat --help");
  EXPECT_NE(chat.out.find("chatml"), std::string::npos) << chat.out;  // llm/chat/chat_template's names
}

TEST(Cli, DevicesJsonListsCpu) {
  Result r = run_loom("devices --json", "", /*merge_stderr=*/false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = parse_or_fail(r.out);
  const auto* cpu = find_plugin(j, "cpu");
  ASSERT_NE(cpu, nullptr) << r.out;
  EXPECT_EQ((*cpu).at("fate").get<std::string>(), "ready");
  EXPECT_EQ((*cpu).at("stage").get<std::string>(), "ready");
  ASSERT_TRUE(has_device(j, "cpu")) << r.out;
  for (const auto& d : j.at("devices")) {
    if (d.at("name").get<std::string>() != "cpu") continue;
    EXPECT_EQ(d.at("type").get<std::string>(), "cpu");
    EXPECT_GT(d.at("memory_total").get<double>(), 0);
    EXPECT_EQ(d.at("plugin").get<std::string>(), "cpu");
  }
  // The null skeleton is found but reports no hardware unless asked.
  const auto* null_plugin = find_plugin(j, "null");
  ASSERT_NE(null_plugin, nullptr);
  EXPECT_EQ((*null_plugin).at("fate").get<std::string>(), "unavailable");
  EXPECT_NE((*null_plugin).at("reason").get<std::string>().find("LOOM_NULL_DEVICES"), std::string::npos);
}

TEST(Cli, BrokenPluginInPathIsListedWithReasonAndCpuStillWorks) {
  TempDir dir;
  { std::ofstream(dir.path() + "/libloom-broken.so") << "this is not a shared object\n"; }
  Result r = run_loom("devices --json", "LOOM_PLUGIN_PATH=" + dir.path(), false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = parse_or_fail(r.out);
  const auto* broken = find_plugin(j, "broken");
  ASSERT_NE(broken, nullptr) << r.out;
  EXPECT_EQ((*broken).at("fate").get<std::string>(), "failed");
  EXPECT_EQ((*broken).at("origin").get<std::string>(), "LOOM_PLUGIN_PATH");
  EXPECT_FALSE((*broken).at("reason").get<std::string>().empty());
  EXPECT_TRUE(has_device(j, "cpu"));

  // The text form names it too, and the cpu device still computes.
  Result t = run_loom("devices", "LOOM_PLUGIN_PATH=" + dir.path());
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_NE(t.out.find("broken"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("failed"), std::string::npos) << t.out;
  Result c = run_loom("check --device cpu", "LOOM_PLUGIN_PATH=" + dir.path());
  EXPECT_EQ(c.exit_code, 0) << c.out;
  EXPECT_NE(c.out.find("OK"), std::string::npos) << c.out;
}

TEST(Cli, FakePluginFolderShowsEveryFate) {
  Result r = run_loom("devices --json --plugin-path " LOOM_TEST_FAKE_DIR, "", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = parse_or_fail(r.out);
  int failed = 0, unavailable = 0;
  for (const auto& p : j.at("plugins")) {
    if (p.at("fate").get<std::string>() == "failed") {
      ++failed;
      EXPECT_FALSE(p.at("reason").get<std::string>().empty()) << p.at("plugin").get<std::string>();
    }
    if (p.at("fate").get<std::string>() == "unavailable") ++unavailable;
    EXPECT_EQ(p.at("origin").get<std::string>() == "application", p.at("path").get<std::string>().rfind(LOOM_TEST_FAKE_DIR, 0) == 0)
        << p.at("path").get<std::string>();
  }
  EXPECT_GE(failed, 5) << r.out;
  EXPECT_GE(unavailable, 1) << r.out;
  EXPECT_TRUE(has_device(j, "cpu"));
}

TEST(Cli, CheckRunsOnChosenDevice) {
  Result ok = run_loom("check --device cpu --json", "", false);
  ASSERT_EQ(ok.exit_code, 0) << ok.out;
  nlohmann::json j = parse_or_fail(ok.out);
  EXPECT_TRUE(j.at("ok").get<bool>());
  EXPECT_EQ(j.at("device").get<std::string>(), "cpu");
  EXPECT_LT(j.at("max_abs_diff").get<double>(), 1e-4);

  // With no device named, the first selected device that runs every op is
  // used (a matmul-only accelerator listed before the CPU is passed over).
  Result autopick = run_loom("check --json", "", false);
  ASSERT_EQ(autopick.exit_code, 0) << autopick.out;
  EXPECT_TRUE(parse_or_fail(autopick.out).at("ok").get<bool>()) << autopick.out;

  Result missing = run_loom("check --device nosuch");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("nosuch"), std::string::npos) << missing.out;

  // LOOM_DEVICES naming a device that does not exist is an error, not a fallback.
  Result env = run_loom("check", "LOOM_DEVICES=cuda0");
  EXPECT_EQ(env.exit_code, 1);
  EXPECT_NE(env.out.find("cuda0"), std::string::npos) << env.out;
}

TEST(Cli, DisabledPluginIsSkippedWithReason) {
  Result r = run_loom("devices --json", "LOOM_PLUGINS_DISABLE=null", false);
  ASSERT_EQ(r.exit_code, 0);
  nlohmann::json j = parse_or_fail(r.out);
  const auto* n = find_plugin(j, "null");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ((*n).at("fate").get<std::string>(), "skipped");
  EXPECT_NE((*n).at("reason").get<std::string>().find("LOOM_PLUGINS_DISABLE"), std::string::npos) << (*n).at("reason").get<std::string>();
}

// ------------------------------------------------------------------ loom run

namespace {

// The cpu plugin's variants: the best one this CPU and OS run is loaded;
// LOOM_CPU_VARIANT forces one; a variant the CPU cannot run is never loaded
// (LOOM_CPU_MASK makes its features read as absent, as on an older CPU).
TEST(Cli, CpuVariantsFollowTheCpuAndTheForcedChoice) {
  Result all = run_loom("devices --json", "", /*merge_stderr=*/false);
  ASSERT_EQ(all.exit_code, 0) << all.out;
  nlohmann::json j = parse_or_fail(all.out);
  std::vector<std::string> ready, runnable;
  for (const auto& p : j.at("plugins")) {
    if (p.at("plugin").get<std::string>() != "cpu") continue;
    const std::string v = p.at("variant").get<std::string>().empty() ? "baseline" : p.at("variant").get<std::string>();
    if (p.at("fate").get<std::string>() == "ready") ready.push_back(v);
    if (p.at("reason").get<std::string>().find("score 0") == std::string::npos) runnable.push_back(v);
  }
  ASSERT_EQ(ready.size(), 1u) << all.out;
  const std::string model = stories_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  const std::string run = "run -m " + model + " -n 4";
  // Each runnable variant can be forced and then runs a model.
  for (const std::string& v : runnable) {
    SCOPED_TRACE(v);
    Result r = run_loom(run + " --threads 2", "LOOM_CPU_VARIANT=" + v);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    Result d = run_loom("devices", "LOOM_CPU_VARIANT=" + v);
    EXPECT_NE(d.out.find("not the variant LOOM_CPU_VARIANT=" + v), std::string::npos) << d.out;
  }
  // Masked features: the variants that need them score 0 and never load.
  Result masked = run_loom("devices", "LOOM_CPU_MASK=avx512,avx2");
  EXPECT_EQ(masked.exit_code, 0) << masked.out;
  if (masked.out.find("cpu-avx2 ") != std::string::npos) {
    EXPECT_NE(masked.out.find("cannot run here (score 0)"), std::string::npos) << masked.out;
  }
  Result forced = run_loom(run, "LOOM_CPU_MASK=avx512,avx2 LOOM_CPU_VARIANT=avx2");
  if (masked.out.find("cpu-avx2 ") != std::string::npos) {
    EXPECT_EQ(forced.exit_code, 1) << forced.out;
    EXPECT_NE(forced.out.find("LOOM_CPU_VARIANT=avx2: this CPU or OS cannot run that variant"), std::string::npos)
        << forced.out;
    EXPECT_NE(forced.out.find("baseline (score 10)"), std::string::npos) << forced.out;
  }
  Result unknown = run_loom(run, "LOOM_CPU_VARIANT=nosuch");
  EXPECT_EQ(unknown.exit_code, 1) << unknown.out;
  EXPECT_NE(unknown.out.find("LOOM_CPU_VARIANT=nosuch names no variant of cpu"), std::string::npos) << unknown.out;
}

}  // namespace

TEST(Cli, RunGreedyStoriesJson) {
  const std::string model = stories_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  Result r = run_loom("run -m " + model + " -n 40 --json", "", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = parse_or_fail(r.out);
  EXPECT_EQ(j.at("text").get<std::string>().rfind("Once upon a time, there was a little girl named Lily. She loved to play", 0), 0u)
      << j.at("text").get<std::string>();
  EXPECT_EQ(j.at("generated_tokens").size(), 40u);
  ASSERT_EQ(j.at("prompt_tokens").size(), 1u);  // BOS only
  EXPECT_EQ(j.at("prompt_tokens").at(0).get<double>(), 1);
  // The default policy auto: the accelerators that are not emulated, the cpu last.
  ASSERT_GE(j.at("devices").size(), 1u);
  EXPECT_EQ(j.at("devices").back().get<std::string>(), "cpu");
  EXPECT_GT(j.at("gen_tokens_per_s").get<double>(), 0);
  EXPECT_TRUE(j.contains("prompt_tokens_per_s"));
}

// Both KV cache types tell the same story (f16 is the default).
TEST(Cli, RunKvTypesTellTheSameStory) {
  const std::string model = stories_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  std::string text[3];
  const char* const flags[3] = {"", " --kv-type f16", " --kv-type f32"};
  for (int i = 0; i < 3; ++i) {
    Result r = run_loom("run -m " + model + " -n 60 --json" + flags[i], "", false);
    ASSERT_EQ(r.exit_code, 0) << flags[i] << ": " << r.out;
    nlohmann::json j = parse_or_fail(r.out);
    EXPECT_EQ(j.at("kv_type").get<std::string>(), i == 2 ? "f32" : "f16") << r.out;
    text[i] = j.at("text").get<std::string>();
  }
  EXPECT_EQ(text[0].rfind("Once upon a time, there was a little girl named Lily. She loved to play outside", 0), 0u)
      << text[0];
  EXPECT_EQ(text[1], text[0]);
  EXPECT_EQ(text[2], text[0]);
}

TEST(Cli, RunStreamsTextAndReportsSpeed) {
  const std::string model = stories_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  Result r = run_loom("run -m " + model + " -n 12 -p 'Once upon a time' --threads 2");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("Once upon a time, there was", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("tokens/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loom run: device"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu;"), std::string::npos) << r.out;  // auto: the cpu last
}

TEST(Cli, RunErrors) {
  Result missing = run_loom("run -m /nonexistent/model.gguf");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("/nonexistent/model.gguf"), std::string::npos) << missing.out;

  TempDir dir;
  const std::string junk = dir.path() + "/junk.gguf";
  std::ofstream(junk) << "not a gguf file";
  Result bad = run_loom("run -m " + junk);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find(junk), std::string::npos) << bad.out;

  Result num = run_loom("run -n lots");
  EXPECT_EQ(num.exit_code, 2);
  EXPECT_NE(num.out.find("-n 'lots'"), std::string::npos) << num.out;
  Result top_p = run_loom("run --top-p 1.5");
  EXPECT_EQ(top_p.exit_code, 2);
  Result kv = run_loom("run --kv-type bf16");
  EXPECT_EQ(kv.exit_code, 2);
  EXPECT_NE(kv.out.find("--kv-type 'bf16': expected f16, f32 or q8_0"), std::string::npos) << kv.out;
  Result sparse = run_loom("run --sparse maybe");
  EXPECT_EQ(sparse.exit_code, 2);
  EXPECT_NE(sparse.out.find("--sparse 'maybe': expected on or off"), std::string::npos) << sparse.out;
  Result unknown = run_loom("run --bogus");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.out.find("--bogus"), std::string::npos) << unknown.out;

  const std::string model = stories_model();
  if (!fs::exists(model)) return;
  Result dev = run_loom("run -m " + model + " --device nosuch");
  EXPECT_EQ(dev.exit_code, 1);
  EXPECT_NE(dev.out.find("nosuch"), std::string::npos) << dev.out;
  EXPECT_NE(dev.out.find("cpu"), std::string::npos) << dev.out;  // lists what exists
  Result ngl = run_loom("run -m " + model + " --n-gpu-layers -1");
  EXPECT_EQ(ngl.exit_code, 2);
  EXPECT_NE(ngl.out.find("--n-gpu-layers"), std::string::npos) << ngl.out;
  Result ctx = run_loom("run -m " + model + " --ctx 4 -p 'Once upon a time there was a dog'");
  EXPECT_EQ(ctx.exit_code, 1);
  EXPECT_NE(ctx.out.find("more than the context of 4"), std::string::npos) << ctx.out;
  // The echoed prompt ends its line before the error, also when stdout is a
  // file (buffered apart from stderr).
  EXPECT_NE(ctx.out.find("\nloom run: "), std::string::npos) << ctx.out;
}

// ------------------------------------------------------- multi-device run, plan

TEST(Cli, RunOnSimAndCpuWithLayersOffloaded) {
  const std::string model = stories_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  const std::string env =
      "LOOM_SIM_DEVICES=1 LOOM_SIM_OPS_0=MUL_MAT,ADD,MUL,RMS_NORM,SOFT_MAX,SILU,GET_ROWS,CONT,CPY,SCALE";
  Result one = run_loom("run -m " + model + " -n 30 --json", "", false);
  Result r = run_loom("run -m " + model + " -n 30 --json --device sim0,cpu --n-gpu-layers 3 --plugin-path " +
                          std::string(LOOM_TEST_SIM_DIR),
                      env, false);
  ASSERT_EQ(one.exit_code, 0) << one.out;
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json a = parse_or_fail(one.out);
  nlohmann::json b = parse_or_fail(r.out);
  EXPECT_EQ(b.at("text").get<std::string>(), a.at("text").get<std::string>());
  ASSERT_EQ(b.at("devices").size(), 2u);
  EXPECT_EQ(b.at("devices").at(0).get<std::string>(), "sim0");
  EXPECT_EQ(b.at("devices").at(1).get<std::string>(), "cpu");
  EXPECT_EQ(b.at("n_gpu_layers").get<double>(), 3);
  EXPECT_GT(b.at("splits").get<double>(), 1);
  EXPECT_GT(b.at("bytes_copied_per_token").get<double>(), 0);
  EXPECT_TRUE(b.at("bytes_copied_per_token").is_number_unsigned()) << r.out;

  Result text = run_loom("run -m " + model + " -n 5 --device sim0,cpu --n-gpu-layers 3 --plugin-path " +
                             std::string(LOOM_TEST_SIM_DIR),
                         env);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("devices sim0,cpu; 3/5 layers on sim0"), std::string::npos) << text.out;
}

// --tensor-split over three devices and --override-tensor: the cpu's text,
// the placement printed; bad values are errors naming the flag.
TEST(Cli, LayerSplitOverThreeDevicesAndOverrides) {
  const std::string model = stories_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found (set LOOM_MODELS_DIR)";
  const std::string ops = "MUL_MAT,ADD,MUL,RMS_NORM,SOFT_MAX,SILU,GET_ROWS,CONT,CPY,SCALE";
  const std::string env = "LOOM_SIM_DEVICES=2 LOOM_SIM_OPS_0=" + ops + " LOOM_SIM_OPS_1=" + ops;
  const std::string sims = " --plugin-path " + std::string(LOOM_TEST_SIM_DIR);
  Result one = run_loom("run -m " + model + " -n 40 --json", "", false);
  ASSERT_EQ(one.exit_code, 0) << one.out;
  const std::string want = parse_or_fail(one.out).at("text").get<std::string>();

  Result r = run_loom("run -m " + model + " -n 40 --json --device sim0,sim1,cpu --tensor-split 2,2,1" + sims, env,
                      false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json b = parse_or_fail(r.out);
  EXPECT_EQ(b.at("text").get<std::string>(), want);
  EXPECT_EQ(b.at("placement").get<std::string>(), "sim0: layers 0-1; sim1: layers 2-3; cpu: layer 4, output");
  EXPECT_EQ(b.at("n_gpu_layers").get<int>(), 4);

  Result eq = run_loom("run -m " + model + " -n 5 --device sim0,sim1,cpu -sm layer" + sims, env);
  ASSERT_EQ(eq.exit_code, 0) << eq.out;  // equal shares of 5 layers end at round(1.67), round(3.33), 5
  EXPECT_NE(eq.out.find("devices sim0,sim1,cpu; sim0: layers 0-1; sim1: layer 2; cpu: layers 3-4, output"),
            std::string::npos)
      << eq.out;

  Result ot = run_loom("run -m " + model + " -n 40 --json --device sim0,cpu -ts 1,0 -ot 'blk\\..*\\.ffn_.*=cpu'" +
                           sims,
                       env, false);
  ASSERT_EQ(ot.exit_code, 0) << ot.out;
  nlohmann::json c = parse_or_fail(ot.out);
  EXPECT_EQ(c.at("text").get<std::string>(), want);
  EXPECT_EQ(c.at("placement").get<std::string>(), "sim0: layers 0-4, output; cpu: 20 overridden tensors");

  Result n = run_loom("run -m " + model + " --device sim0,sim1,cpu --tensor-split 1,1" + sims, env);
  EXPECT_EQ(n.exit_code, 1);
  EXPECT_NE(n.out.find("tensor split has 2 proportions for 3 devices (sim0,sim1,cpu)"), std::string::npos) << n.out;
  // A device named twice counts once, and the user is told so (the split's
  // count is then for the devices left).
  Result rep = run_loom("run -m " + model + " --device sim0,cpu,sim0 --tensor-split 1,1,1" + sims, env);
  EXPECT_EQ(rep.exit_code, 1);
  EXPECT_NE(rep.out.find("--device sim0,cpu,sim0 names 'sim0' more than once; each device is used once: sim0,cpu"),
            std::string::npos)
      << rep.out;
  EXPECT_NE(rep.out.find("tensor split has 3 proportions for 2 devices (sim0,cpu)"), std::string::npos) << rep.out;
  Result d = run_loom("run -m " + model + " --device sim0,cpu -ot 'output.*=sim1'" + sims, env);
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_NE(d.out.find("device 'sim1' is not in the device list (sim0,cpu"), std::string::npos) << d.out;
  Result v = run_loom("run -m " + model + " --tensor-split 1,x");
  EXPECT_EQ(v.exit_code, 2);
  EXPECT_NE(v.out.find("--tensor-split '1,x'"), std::string::npos) << v.out;
  for (const char* cmd : {"bench", "chat", "plan"}) {  // the same flags, the same parser
    Result o = run_loom(std::string(cmd) + " -m " + model + " -ts 1,x");
    EXPECT_EQ(o.exit_code, 2) << cmd << ": " << o.out;
    EXPECT_NE(o.out.find("-ts '1,x'"), std::string::npos) << cmd << ": " << o.out;
  }
  Result m = run_loom("run -m " + model + " --split-mode rows");
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.out.find("expected none or layer"), std::string::npos) << m.out;
  Result re = run_loom("run -m " + model + " --device sim0,cpu -ot '(=cpu'" + sims, env);
  EXPECT_EQ(re.exit_code, 1);
  EXPECT_NE(re.out.find("is not a regular expression"), std::string::npos) << re.out;
}

TEST(Cli, PlanWritesDot) {
  Result r = run_loom("plan --device cpu", "", false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("digraph", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("s0 [label=\"split 0 on cpu"), std::string::npos) << r.out;  // a box per split

  // No model from the environment: the synthetic two-matmul graph unless
  // ../shared/models (relative to the test's folder) has one.
  Result syn = run_loom("plan --device cpu --batch 4", "LOOM_MODEL= LOOM_MODELS_DIR=/nonexistent", false);
  ASSERT_EQ(syn.exit_code, 0) << syn.out;
  EXPECT_EQ(syn.out.rfind("digraph", 0), 0u) << syn.out;

  Result bad = run_loom("plan --batch 0");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("--batch"), std::string::npos) << bad.out;
  Result dev = run_loom("plan --device nosuch");
  EXPECT_EQ(dev.exit_code, 1);
  EXPECT_NE(dev.out.find("nosuch"), std::string::npos) << dev.out;
}

namespace {

// Issue 11's check: a folder of plugins that segfault, abort, exit or hang,
// and a FIFO named like a plugin: each is a record with its reason, and the
// built-in cpu and blas devices are still ready.
TEST(Cli, HostilePluginsAreRecordsAndBuiltinsStayReady) {
  TempDir dir;
  ASSERT_EQ(mkfifo((dir.path() + "/libloom-fifo.so").c_str(), 0600), 0);
  const std::string env = "LOOM_CACHE_DIR=" + dir.path() + "/cache LOOM_PLUGIN_PROBE_TIMEOUT=2 LOOM_PLUGIN_PATH=" +
                          std::string(LOOM_TEST_HOSTILE_DIR) + ":" + dir.path();
  Result r = run_loom("devices --json", env, false);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  nlohmann::json j = parse_or_fail(r.out);
  for (const char* name : {"segvctor", "segvquery", "segvscore", "segvinit", "segvcount", "segvprops",
                           "abortinit", "exitinit", "hanginit", "fifo"}) {
    const auto* p = find_plugin(j, name);
    ASSERT_NE(p, nullptr) << name << "\n" << r.out;
    EXPECT_EQ((*p).at("fate").get<std::string>(), "failed") << name;
    EXPECT_FALSE((*p).at("reason").get<std::string>().empty()) << name;
  }
  EXPECT_NE(find_plugin(j, "hanginit")->at("reason").get<std::string>().find("no answer in 2 s"), std::string::npos);
  EXPECT_TRUE(has_device(j, "cpu")) << r.out;
  if (std::ifstream(std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom-blas.so")) {
    EXPECT_TRUE(has_device(j, "blas")) << r.out;
  }
  // Still a working cpu, and the second run reads the cached verdicts.
  Result c = run_loom("check --device cpu", env);
  EXPECT_EQ(c.exit_code, 0) << c.out;
}

}  // namespace

namespace {

// The build tree's loom once had a RUNPATH ending in an empty entry, which
// makes ld.so search the current directory: a libm.so.6 there was loaded
// before main. A bogus one must now be ignored.
TEST(Cli, LibrariesInTheCurrentDirectoryAreNotLoaded) {
  TempDir dir;
  for (const char* lib : {"libm.so.6", "libloom.so.0", "libstdc++.so.6"}) {
    std::ofstream(dir.path() + "/" + lib) << "not a library\n";
  }
  const std::string cmd = "cd " + dir.path() + " && " + std::string(LOOM_TEST_BIN_DIR) + "/loom --version 2>&1";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << out;
  EXPECT_NE(out.find("loom " LOOM_VERSION_STRING_FOR_TEST), std::string::npos) << out;
}

}  // namespace

namespace {

// Naming devices loads only the plugins that serve them (after the probe,
// which lists every plugin's devices without loading it in the process).
TEST(Cli, NamedDeviceLoadsOnlyItsPlugin) {
  TempDir dir;
  Result r = run_loom("check --device cpu", "LOOM_CACHE_DIR=" + dir.path() + " LOOM_LOG=registry:debug");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  if (std::ifstream(std::string(LOOM_TEST_PLUGIN_DIR) + "/libloom-blas.so")) {
    EXPECT_NE(r.out.find("libloom-blas.so: not loaded: its devices (blas) are not among the requested cpu"),
              std::string::npos)
        << r.out;
  }
}

}  // namespace

namespace {

TEST(Cli, ChatTakesTurnsFromStdin) {
  const std::string model = stories_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found";
  TempDir dir;
  { std::ofstream(dir.path() + "/in.txt") << "Once upon a time\nThe end?\n/exit\nnot read\n"; }
  Result r = run_loom("chat -m " + model + " -n 8 < " + dir.path() + "/in.txt");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("no chat template"), std::string::npos) << r.out;  // stories260K has none: warned
  EXPECT_NE(r.out.find("format plain"), std::string::npos) << r.out;
  Result bad = run_loom("chat -m " + model + " --chat-format nosuch < /dev/null");
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find("chatml"), std::string::npos) << bad.out;
}

}  // namespace

namespace {

// The prompt from a file (-f) or stdin (-p -) is the same prompt as -p TEXT;
// llama.cpp's short flags work.
TEST(Cli, PromptFromFileOrStdinAndShortFlags) {
  const std::string model = stories_model();
  if (!fs::exists(model)) GTEST_SKIP() << model << " not found";
  TempDir dir;
  { std::ofstream(dir.path() + "/p.txt") << "Once upon a time"; }
  const std::string base = "run -m " + model + " -n 6 --json -c 64 -t 1 -b 4 -s 1";
  Result direct = run_loom(base + " -p 'Once upon a time'", "", false);
  Result file = run_loom(base + " -f " + dir.path() + "/p.txt", "", false);
  Result stdin_prompt = run_loom(base + " -p - < " + dir.path() + "/p.txt", "", false);
  ASSERT_EQ(direct.exit_code, 0) << direct.out;
  ASSERT_EQ(file.exit_code, 0) << file.out;
  ASSERT_EQ(stdin_prompt.exit_code, 0) << stdin_prompt.out;
  nlohmann::json a = parse_or_fail(direct.out), b = parse_or_fail(file.out), c = parse_or_fail(stdin_prompt.out);
  EXPECT_EQ(a.at("text").get<std::string>(), b.at("text").get<std::string>());
  EXPECT_EQ(a.at("text").get<std::string>(), c.at("text").get<std::string>());
  EXPECT_EQ(a.at("prompt_tokens").size(), 5u) << direct.out;  // BOS + 4 pieces, the prompt was used
  Result missing = run_loom("run -m " + model + " -f " + dir.path() + "/nosuch.txt");
  EXPECT_EQ(missing.exit_code, 1) << missing.out;
  EXPECT_NE(missing.out.find("cannot read the prompt"), std::string::npos) << missing.out;
}

}  // namespace
