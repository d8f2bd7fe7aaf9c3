// `loom conformance` with a case that kills its process, hangs or loses the
// device's context (issue 28): each case family runs in a child process, so
// that case fails with the signal, exit status or timeout, and every other
// case still runs and reports. The plugins are tests/fake_plugins kinds
// 14-17: right MUL_MAT and SCALE on F32, but a MUL_MAT over rows of 1024 or
// more (MatMulTest.DecodeShapesEveryTypeAndLayout) crashes, aborts, hangs,
// or fails and leaves every later stream_create of the process failing.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "cli/json_test_util.hpp"
#include "cli/run_loom.hpp"

namespace {

using loom::test::run_loom;
using nlohmann::json;

#if defined(LOOM_SANITIZE_ADDRESS) || defined(LOOM_SANITIZE_THREAD)
constexpr bool kSanitizer = true;  // the sanitizer's own SIGSEGV handler turns the signal into an exit status
#else
constexpr bool kSanitizer = false;
#endif

// The case whose graph has rows of 1024: the one the fakes misbehave in.
constexpr const char* kBadCase = "MatMulTest.DecodeShapesEveryTypeAndLayout";

std::string fake(const std::string& name) {
  return std::string(LOOM_TEST_HOSTILE_DIR) + "/compute/libloom-" + name + ".so";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// `loom conformance --plugin <fake> --json ARGS` -> the device's object (null
// when the output is not the expected JSON), *exit_code.
json run_json(const std::string& plugin, const std::string& args, int* exit_code) {
  const loom::test::LoomResult r =
      run_loom("conformance --plugin " + fake(plugin) + " --json " + args, "", /*merge_stderr=*/false, 300);
  *exit_code = r.exit_code;
  const json j = loom::test::parse_json(r.out);
  if (!j.is_object() || !j.contains("devices") || j.at("devices").size() != 1) {
    ADD_FAILURE() << "want one device in:\n" << r.out;
    return json();
  }
  return j.at("devices").at(0);
}

const json* find_case(const json& dev, const std::string& name) {
  for (const json& c : dev.at("cases")) {
    if (c.at("case").get<std::string>() == name) return &c;
  }
  return nullptr;
}

std::string outcome(const json& dev, const std::string& name) {
  const json* c = find_case(dev, name);
  return c == nullptr ? "(missing)" : c->at("outcome").get<std::string>();
}

std::string failures_of(const json& dev, const std::string& name) {
  const json* c = find_case(dev, name);
  std::string all;
  if (c != nullptr) {
    for (const json& f : c->at("failures")) all += f.get<std::string>() + "\n";
  }
  return all;
}

std::vector<std::string> case_names(const json& dev) {
  std::vector<std::string> v;
  for (const json& c : dev.at("cases")) v.push_back(c.at("case").get<std::string>());
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::string> failed_cases(const json& dev) {
  std::vector<std::string> v;
  for (const json& c : dev.at("cases")) {
    if (c.at("outcome").get<std::string>() == "FAILED") v.push_back(c.at("case").get<std::string>());
  }
  return v;
}

// The same cases, all reported, as a run in one process of a plugin that
// does not crash.
std::vector<std::string> every_case() {
  int rc = 0;
  const json dev = run_json("deadcontext", "--no-isolate", &rc);
  return dev.is_null() ? std::vector<std::string>() : case_names(dev);
}

TEST(ConformanceIsolation, CrashLosesOnlyTheCaseItHappenedIn) {
  int rc = 0;
  const json dev = run_json("segvcompute", "", &rc);
  ASSERT_FALSE(dev.is_null());
  EXPECT_EQ(rc, 1);
  EXPECT_FALSE(dev.at("ok").get<bool>());
  // The crash: that case failed, naming the signal.
  EXPECT_EQ(outcome(dev, kBadCase), "FAILED");
  const std::string why = failures_of(dev, kBadCase);
  EXPECT_TRUE(contains(why, kSanitizer ? "status" : "crashed with SIGSEGV")) << why;
  EXPECT_TRUE(find_case(dev, kBadCase)->value("lost", false));
  // Its family's cases before it kept their results, the ones after it ran
  // in a new child, and the other families ran as usual.
  EXPECT_EQ(outcome(dev, "MatMulTest.FloatTypesOddSizes"), "passed");
  EXPECT_EQ(outcome(dev, "MatMulTest.EveryLayoutPair"), "passed");
  EXPECT_EQ(outcome(dev, "MatMulTest.PrefillShapesEveryFloatType"), "passed");
  EXPECT_EQ(outcome(dev, "UnaryTest.EveryOpTypeAndLayout"), "passed");
  EXPECT_EQ(outcome(dev, "Abi.StreamsAndEvents"), "passed");
  EXPECT_EQ(failed_cases(dev), std::vector<std::string>{kBadCase});
  EXPECT_EQ(case_names(dev), every_case());
  // The loss, in the isolation record and the summary.
  const json& lost = dev.at("isolation").at("lost");
  ASSERT_EQ(lost.size(), 1u) << dev.dump(1);
  EXPECT_EQ(lost[0].at("case").get<std::string>(), kBadCase);
  if (!kSanitizer) {
    EXPECT_EQ(lost[0].at("signal").get<std::string>(), "SIGSEGV");
  }
  EXPECT_EQ(dev.at("summary").at("lost").get<int>(), 1);
  EXPECT_EQ(dev.at("isolation").at("mode").get<std::string>(), "process per case family");
}

TEST(ConformanceIsolation, TextReportNamesTheSignal) {
  const loom::test::LoomResult r = run_loom("conformance --plugin " + fake("abortcompute"), "", true, 300);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "crashed with SIGABRT")) << r.out;
  EXPECT_TRUE(contains(r.out, "lost with their child process")) << r.out;
  EXPECT_TRUE(contains(r.out, std::string(kBadCase) + ":")) << r.out;
  EXPECT_TRUE(contains(r.out, "-> FAIL")) << r.out;
  // The other cases are in the table and the checks as usual.
  EXPECT_TRUE(contains(r.out, "| SCALE ")) << r.out;
  EXPECT_TRUE(contains(r.out, "Abi.StreamsAndEvents")) << r.out;
}

TEST(ConformanceIsolation, HangIsKilledAfterTheCaseTimeout) {
  // Long enough for every honest case: under a sanitizer on a loaded CI
  // machine MatMulTest.LongRowsOfWeightTypes took more than 2 s.
  const int timeout_s = kSanitizer ? 20 : 2;
  int rc = 0;
  const auto start = std::chrono::steady_clock::now();
  const json dev = run_json("hangcompute", "--case-timeout " + std::to_string(timeout_s), &rc);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(dev.is_null());
  EXPECT_EQ(rc, 1);
  EXPECT_TRUE(contains(failures_of(dev, kBadCase), "no answer in " + std::to_string(timeout_s) + " s"))
      << failures_of(dev, kBadCase);
  EXPECT_EQ(outcome(dev, "MatMulTest.PrefillShapesEveryFloatType"), "passed");
  EXPECT_EQ(failed_cases(dev), std::vector<std::string>{kBadCase});
  const json& lost = dev.at("isolation").at("lost");
  ASSERT_EQ(lost.size(), 1u);
  EXPECT_TRUE(lost[0].at("timed_out").get<bool>());
  EXPECT_EQ(dev.at("isolation").at("case_timeout_s").get<double>(), static_cast<double>(timeout_s));
  EXPECT_LT(secs, 120.0);  // one timeout, not the default 600 s
}

TEST(ConformanceIsolation, DeadContextLosesOnlyItsFamily) {
  int rc = 0;
  const json dev = run_json("deadcontext", "", &rc);
  ASSERT_FALSE(dev.is_null());
  EXPECT_EQ(rc, 1);
  // The failed graph and, in the same process, every later one of the family.
  EXPECT_TRUE(contains(failures_of(dev, kBadCase), "illegal memory access")) << failures_of(dev, kBadCase);
  EXPECT_TRUE(contains(failures_of(dev, "MatMulTest.PrefillShapesEveryFloatType"), "context was lost"));
  for (const std::string& name : failed_cases(dev)) EXPECT_EQ(name.rfind("MatMulTest.", 0), 0u) << name;
  // Families after it have a live context of their own.
  EXPECT_EQ(outcome(dev, "UnaryTest.EveryOpTypeAndLayout"), "passed");
  EXPECT_EQ(outcome(dev, "CpuPluginTest.UnsupportedNodeIsUnimplementedWithNames"), "passed");
  EXPECT_TRUE(dev.at("isolation").at("lost").empty());

  // In one process (--no-isolate) the lost context takes them down too.
  const json one = run_json("deadcontext", "--no-isolate", &rc);
  ASSERT_FALSE(one.is_null());
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(one.at("isolation").at("mode").get<std::string>(), "in process");
  EXPECT_EQ(outcome(one, "UnaryTest.EveryOpTypeAndLayout"), "FAILED");
  EXPECT_EQ(case_names(one), case_names(dev));
}

TEST(ConformanceIsolation, ChildrenReportWhatOneProcessReports) {
  // Every row and case crosses the pipe unchanged (the cpu plugin, two ops).
  auto cpu = [](const std::string& extra) {
    const loom::test::LoomResult r =
        run_loom("conformance --device cpu --ops mul_mat,scale --json " + extra, "", false, 600);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    json j = loom::test::parse_json(r.out);
    if (j.is_object() && j.contains("devices")) {
      for (json& d : j.at("devices")) d.erase("isolation");
    }
    return j;
  };
  const json isolated = cpu("");
  const json one = cpu("--no-isolate");
  ASSERT_TRUE(isolated.is_object());
  EXPECT_EQ(isolated, one);
}

TEST(ConformanceIsolation, HelpAndArguments) {
  const loom::test::LoomResult help = run_loom("conformance --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(contains(help.out, "--no-isolate")) << help.out;
  EXPECT_TRUE(contains(help.out, "--case-timeout S")) << help.out;
  EXPECT_TRUE(contains(help.out, "Default: each case family")) << help.out;
  const loom::test::LoomResult bad = run_loom("conformance --device cpu --case-timeout soon");
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_TRUE(contains(bad.out, "--case-timeout")) << bad.out;
}

}  // namespace
