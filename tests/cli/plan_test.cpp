// `loom plan`: the split-level drawing (default) and the op-level one
// (--detail nodes) of stories260K on the cpu and over sim0,sim1,cpu parse
// with graphviz (`dot -Tsvg`, skipped with the reason when dot is absent),
// and their content holds: every node id used in an edge is declared, one
// cluster per split, weights in the cluster of the device holding them,
// copies as labelled edges; the text format says the same.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/run_loom.hpp"

namespace fs = std::filesystem;

namespace {

using loom::test::run_loom;

std::string plan_model() {
  const char* env = std::getenv("LOOM_MODELS_DIR");
  return std::string(env && *env ? env : LOOM_TEST_SOURCE_DIR "/../shared/models") + "/stories260K.gguf";
}

const char kSimOps[] = "MUL_MAT,ADD,MUL,RMS_NORM,SOFT_MAX,SILU,GET_ROWS,CONT,CPY,SCALE";

std::string sim_env() {
  return std::string("LOOM_SIM_DEVICES=2 LOOM_SIM_OPS_0=") + kSimOps + " LOOM_SIM_OPS_1=" + kSimOps;
}

std::string sim_args() {
  return " --device sim0,sim1,cpu -ts 2,2,1 --plugin-path " + std::string(LOOM_TEST_SIM_DIR);
}

bool have_dot() { return std::system("command -v dot >/dev/null 2>&1") == 0; }

// Renders `text` with `dot -Tsvg`; "" when it parsed and drew without a
// word on stderr, else what dot said.
std::string render_svg(const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("loom-plan-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path in = dir / "plan.dot", out = dir / "plan.svg", err = dir / "dot.err";
  std::ofstream(in) << text;
  const std::string cmd = "dot -Tsvg '" + in.string() + "' -o '" + out.string() + "' 2>'" + err.string() + "'";
  const int rc = std::system(cmd.c_str());
  std::stringstream said, svg;
  said << std::ifstream(err).rdbuf();
  svg << std::ifstream(out).rdbuf();
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (rc != 0) return "dot exit " + std::to_string(rc) + ": " + said.str();
  if (!said.str().empty()) return "dot said: " + said.str();
  if (svg.str().find("<svg") == std::string::npos) return "no <svg> in dot's output";
  return "";
}

// The structure of a DOT text written by loom plan (one statement a line).
struct Dot {
  std::map<std::string, std::string> label;    // declared node id -> its label
  std::map<std::string, std::string> cluster;  // declared node id -> innermost cluster ("" top level)
  std::map<std::string, std::string> parent;   // cluster -> the cluster holding it
  std::map<std::string, std::string> cluster_label;
  struct Edge {
    std::string from, to, attrs;
  };
  std::vector<Edge> edges;
};

Dot parse(const std::string& text) {
  static const std::regex sub(R"(^\s*subgraph (\w+) \{$)");
  static const std::regex edge(R"(^\s*(\w+) -> (\w+)(?: \[(.*)\])?;$)");
  static const std::regex node(R"(^\s*(\w+) \[(.*)\];$)");
  static const std::regex label(R"re(label="((?:[^"\\]|\\.)*)")re");
  static const std::regex graph_label(R"re(^\s*label="((?:[^"\\]|\\.)*)";$)re");
  Dot d;
  std::vector<std::string> stack;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, sub)) {
      d.parent[m[1]] = stack.empty() ? "" : stack.back();
      stack.push_back(m[1]);
    } else if (line.find_first_not_of(' ') != std::string::npos && line.substr(line.find_first_not_of(' ')) == "}") {
      if (!stack.empty()) stack.pop_back();
    } else if (std::regex_match(line, m, edge)) {
      d.edges.push_back({m[1], m[2], m[3]});
    } else if (std::regex_match(line, m, node) && m[1] != "node" && m[1] != "edge" && m[1] != "graph") {
      std::smatch l;
      const std::string attrs = m[2];
      d.label[m[1]] = std::regex_search(attrs, l, label) ? l[1].str() : "";
      d.cluster[m[1]] = stack.empty() ? "" : stack.back();
    } else if (!stack.empty() && std::regex_match(line, m, graph_label)) {
      d.cluster_label[stack.back()] = m[1];
    }
  }
  return d;
}

// "in N splits" of the headline.
int split_count(const std::string& text) {
  std::smatch m;
  static const std::regex re(R"(nodes in (\d+) splits?)");
  return std::regex_search(text, m, re) ? std::stoi(m[1]) : -1;
}

int count_prefix(const Dot& d, const std::string& prefix) {
  int n = 0;
  for (const auto& [id, l] : d.label) n += id.rfind(prefix, 0) == 0;
  return n;
}

void expect_edges_declared(const Dot& d) {
  for (const Dot::Edge& e : d.edges) {
    EXPECT_TRUE(d.label.count(e.from)) << "edge from undeclared " << e.from;
    EXPECT_TRUE(d.label.count(e.to)) << "edge to undeclared " << e.to;
  }
}

class Plan : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(plan_model())) GTEST_SKIP() << plan_model() << " not found (set LOOM_MODELS_DIR)";
  }
  // stdout of `loom plan -m MODEL <args>`; the test fails when it fails.
  std::string plan(const std::string& args, const std::string& env = "") {
    auto r = run_loom("plan -m " + plan_model() + " " + args, env, false);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << run_loom("plan -m " + plan_model() + " " + args, env).out;
    return r.out;
  }
};

TEST_F(Plan, SplitsOnTheCpu) {
  const std::string text = plan("--device cpu --batch 4");
  EXPECT_EQ(text.rfind("digraph loom_plan {", 0), 0u) << text;
  Dot d = parse(text);
  EXPECT_EQ(split_count(text), 1) << text;
  ASSERT_EQ(count_prefix(d, "s"), 1) << text;
  EXPECT_NE(d.label["s0"].find("split 0 on cpu\\llayers 0-4 + output.weight, output_norm.weight, token_embd.weight\\l"), std::string::npos) << text;
  EXPECT_NE(d.label["s0"].find("weights read here: 1.1 MiB in 48 tensors"), std::string::npos) << text;
  EXPECT_NE(d.label["s0"].find("compute memory of cpu: "), std::string::npos) << text;
  EXPECT_TRUE(d.edges.empty()) << text;
  if (!have_dot()) GTEST_SKIP() << "graphviz 'dot' not found (apt-get install graphviz): DOT not rendered";
  EXPECT_EQ(render_svg(text), "") << text;
}

TEST_F(Plan, NodesOnTheCpu) {
  const std::string text = plan("--device cpu --batch 4 --detail nodes");
  Dot d = parse(text);
  ASSERT_EQ(split_count(text), 1) << text;
  expect_edges_declared(d);
  // Every node declared (views too), each in the split's cluster; every
  // weight in the cpu's cluster.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"(plan: (\d+) nodes)"))) << text;
  const int n_nodes = std::stoi(m[1]);
  EXPECT_EQ(count_prefix(d, "n"), n_nodes) << text;
  for (int i = 0; i < n_nodes; ++i) EXPECT_EQ(d.cluster["n" + std::to_string(i)], "cluster_split_0") << i;
  EXPECT_EQ(d.parent["cluster_split_0"], "cluster_dev_0");
  int weights = 0;
  for (const auto& [id, l] : d.label) {
    if (l.find(", weight\\l") == std::string::npos) continue;
    ++weights;
    EXPECT_EQ(d.cluster[id], "cluster_dev_0") << id << " " << l;
  }
  EXPECT_EQ(weights, 48) << text;
  // Ops, types and shapes on the nodes, views included.
  EXPECT_NE(text.find("attn_norm.0\\lMUL f32 [64, 4]\\l"), std::string::npos) << text;
  EXPECT_NE(text.find("\\lRESHAPE f32 ["), std::string::npos) << text;
  if (!have_dot()) GTEST_SKIP() << "graphviz 'dot' not found (apt-get install graphviz): DOT not rendered";
  EXPECT_EQ(render_svg(text), "") << text;
}

TEST_F(Plan, SplitsOverThreeDevices) {
  const std::string text = plan(sim_args(), sim_env());
  Dot d = parse(text);
  const int n = split_count(text);
  ASSERT_GT(n, 2) << text;
  EXPECT_EQ(count_prefix(d, "s"), n) << text;
  expect_edges_declared(d);
  std::set<std::string> devices;
  for (int i = 0; i < n; ++i) {
    const std::string& l = d.label["s" + std::to_string(i)];
    std::smatch m;
    ASSERT_TRUE(std::regex_search(l, m, std::regex("^split " + std::to_string(i) + R"( on (\w+)\\l)"))) << l;
    devices.insert(m[1]);
    EXPECT_NE(l.find("\\lnodes "), std::string::npos) << l;
    EXPECT_NE(l.find("compute memory of " + m[1].str()), std::string::npos) << l;
  }
  EXPECT_EQ(devices, (std::set<std::string>{"sim0", "sim1", "cpu"})) << text;
  // The embedding lookup stays with its table on the cpu (GET_ROWS costs
  // the rows it gathers); layer 0 starts on sim0.
  EXPECT_NE(d.label["s0"].find("split 0 on cpu\\lweights token_embd.weight"), std::string::npos) << text;
  EXPECT_NE(d.label["s1"].find("split 1 on sim0\\llayer 0"), std::string::npos) << text;
  EXPECT_NE(d.label["s" + std::to_string(n - 1)].find("on cpu\\llayer 4 + output.weight, output_norm.weight\\l"), std::string::npos) << text;
  // Copies: red edges labelled with tensors and bytes, summing to the headline.
  static const std::regex copy_label(R"re(label="copy (\d+) tensors?, (\d+(?:\.\d)?) (B|KiB|MiB)")re");
  int copies = 0;
  for (const Dot::Edge& e : d.edges) {
    if (e.attrs.find("color=red") == std::string::npos) continue;
    std::smatch m;
    EXPECT_TRUE(std::regex_search(e.attrs, m, copy_label)) << e.attrs;
    if (!m.empty()) copies += std::stoi(m[1]);
  }
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"((\d+) copies per step)"))) << text;
  EXPECT_GT(copies, 0) << text;
  EXPECT_EQ(copies, std::stoi(m[1])) << text;
  if (!have_dot()) GTEST_SKIP() << "graphviz 'dot' not found (apt-get install graphviz): DOT not rendered";
  EXPECT_EQ(render_svg(text), "") << text;
}

TEST_F(Plan, NodesOverThreeDevices) {
  const std::string text = plan(sim_args() + " --detail nodes", sim_env());
  Dot d = parse(text);
  const int n = split_count(text);
  ASSERT_GT(n, 2) << text;
  expect_edges_declared(d);
  // One cluster per split, inside the cluster of its device.
  int clusters = 0;
  for (const auto& [c, parent] : d.parent) {
    if (c.rfind("cluster_split_", 0) != 0) continue;
    ++clusters;
    EXPECT_EQ(parent.rfind("cluster_dev_", 0), 0u) << c << " in " << parent;
  }
  EXPECT_EQ(clusters, n) << text;
  std::map<std::string, std::string> dev_cluster;  // device name -> cluster
  for (const auto& [c, l] : d.cluster_label) {
    if (c.rfind("cluster_dev_", 0) == 0) dev_cluster[l.substr(0, l.find(':'))] = c;
  }
  ASSERT_EQ(dev_cluster.size(), 3u) << text;
  // Weights in the cluster of the device holding them (-ts 2,2,1: layers
  // 0-1 on sim0, 2-3 on sim1, 4 and the output head on the cpu).
  int weights = 0;
  for (const auto& [id, l] : d.label) {
    if (l.find(", weight\\l") == std::string::npos) continue;
    ++weights;
    std::string want = "cpu";
    if (l.rfind("blk.0.", 0) == 0 || l.rfind("blk.1.", 0) == 0) want = "sim0";
    if (l.rfind("blk.2.", 0) == 0 || l.rfind("blk.3.", 0) == 0) want = "sim1";
    EXPECT_EQ(d.cluster[id], dev_cluster[want]) << l;
  }
  // 48 file tensors, less two for each of the sims' 4 layers: their Q, K
  // and V are one joined weight (LlamaModel::plan_joined_qkv; the cpu's
  // layer reads the file's mapping in place and keeps three).
  EXPECT_EQ(weights, 40);
  // Each copy is a node in the split that makes it, fed by one red edge
  // labelled with its size.
  int copy_nodes = 0;
  for (const auto& [id, l] : d.label) {
    if (id[0] != 'c') continue;
    ++copy_nodes;
    EXPECT_EQ(d.cluster[id].rfind("cluster_split_", 0), 0u) << id;
    int fed = 0;
    for (const Dot::Edge& e : d.edges) {
      if (e.to != id) continue;
      ++fed;
      EXPECT_TRUE(std::regex_search(e.attrs, std::regex(R"re(color=red.*label="copy \d+(\.\d)? (B|KiB|MiB)")re")))
          << e.attrs;
    }
    EXPECT_EQ(fed, 1) << id;
  }
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"((\d+) copies per step)"))) << text;
  EXPECT_EQ(copy_nodes, std::stoi(m[1])) << text;
  EXPECT_GT(copy_nodes, 0);
  if (!have_dot()) GTEST_SKIP() << "graphviz 'dot' not found (apt-get install graphviz): DOT not rendered";
  EXPECT_EQ(render_svg(text), "") << text;
}

TEST_F(Plan, TextAtBothLevels) {
  const std::string splits = plan(sim_args() + " --format text", sim_env());
  EXPECT_EQ(splits.rfind("plan: ", 0), 0u) << splits;
  EXPECT_NE(splits.find("split 0 on cpu: weights token_embd.weight"), std::string::npos) << splits;
  EXPECT_NE(splits.find("split 1 on sim0: layer 0"), std::string::npos) << splits;
  EXPECT_TRUE(std::regex_search(splits, std::regex(R"(\n  in: copy \d+ tensors?, [\d.]+ (B|KiB) from split \d+ \(sim0\)\n)")))
      << splits;
  EXPECT_NE(splits.find("\ndevice sim1: weights "), std::string::npos) << splits;
  const std::string nodes = plan("--device cpu --detail nodes --format text");
  EXPECT_NE(nodes.find("[sched] split 0 on cpu: nodes 0.."), std::string::npos) << nodes;
  EXPECT_NE(nodes.find("weights 'blk.0.attn_q.weight' live there"), std::string::npos) << nodes;
  // -o writes the same text to a file.
  const fs::path out = fs::temp_directory_path() / ("loom-plan-" + std::to_string(::getpid()) + ".txt");
  auto r = run_loom("plan -m " + plan_model() + " --device cpu --format text -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::stringstream file;
  file << std::ifstream(out).rdbuf();
  fs::remove(out);
  EXPECT_EQ(file.str(), plan("--device cpu --format text"));
}

TEST(PlanArgs, BadDetailAndFormatAreNamed) {
  auto d = run_loom("plan --detail ops");
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_NE(d.out.find("--detail 'ops': expected splits or nodes"), std::string::npos) << d.out;
  auto f = run_loom("plan --format svg");
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_NE(f.out.find("--format 'svg': expected dot or text"), std::string::npos) << f.out;
  auto help = run_loom("plan --help");
  EXPECT_NE(help.out.find("--detail splits|nodes"), std::string::npos) << help.out;
}

// Without a model, the synthetic two-matmul graph draws at both levels.
TEST(PlanArgs, SyntheticGraphDraws) {
  for (const char* detail : {"splits", "nodes"}) {
    auto r = run_loom(std::string("plan --device cpu --batch 4 --detail ") + detail,
                      "LOOM_MODEL= LOOM_MODELS_DIR=/nonexistent", false);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    Dot d = parse(r.out);
    expect_edges_declared(d);
    EXPECT_EQ(split_count(r.out), 1) << r.out;
    if (have_dot()) {
      EXPECT_EQ(render_svg(r.out), "") << r.out;
    }
  }
}

}  // namespace
