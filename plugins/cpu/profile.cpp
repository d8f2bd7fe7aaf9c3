#include "profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/env.h"
#include "common/glue.h"
#include "common/op_info.h"
#include "common/type_traits.h"

namespace loom::cpu {
namespace {

// "MUL_MAT q4_0 n=1" / "MUL_MAT f32 n>4" / "ADD".
std::string kind_of(const loom_tensor_t* node) {
  std::string k = common::op_name(node->op);
  if (node->op == LOOM_OP_MUL_MAT && node->src[0] != nullptr && node->src[1] != nullptr) {
    k += std::string(" ") + common::type_traits(node->src[0]->type).name;
    k += node->src[1]->ne[1] <= 4 ? " n<=4" : " n>4";
  }
  return k;
}

}  // namespace

Profile::Profile() {
  on_ = common::plugin_env_flag("LOOM_CPU_PROFILE", false);
}

Profile::~Profile() {
  if (on_ && computes_ > 0) report();
}

void Profile::add(const loom_tensor_t* node, std::chrono::nanoseconds t) {
  Entry& e = pending_[kind_of(node)];
  ++e.calls;
  e.ns += t.count();
}

void Profile::computed(const loom_graph_t* graph, std::chrono::nanoseconds t) {
  bool batch = false;
  for (int32_t i = 0; i < graph->n_nodes && !batch; ++i) {
    const loom_tensor_t* n = graph->nodes[i];
    batch = n->op == LOOM_OP_MUL_MAT && n->src[1] != nullptr && n->src[1]->ne[1] > 4;
  }
  Table& table = tables_[batch ? 1 : 0];
  ++table.computes;
  table.ns += t.count();
  for (const auto& [k, e] : pending_) {
    Entry& to = table.by_kind[k];
    to.calls += e.calls;
    to.ns += e.ns;
  }
  pending_.clear();
  if (++computes_ % 1000 == 0) report();
}

void Profile::report() const {
  std::string text = "profile after " + std::to_string(computes_) + " computes:";
  const char* const names[2] = {"decode computes (every MUL_MAT n<=4)", "batch computes"};
  for (int b = 0; b < 2; ++b) {
    const Table& t = tables_[b];
    if (t.computes == 0) continue;
    int64_t total = 0;
    for (const auto& [k, e] : t.by_kind) total += e.ns;
    char head[200];
    std::snprintf(head, sizeof head, "\n %s: %lld, %.3f ms (%.2f us each, %.2f us in nodes)", names[b],
                  static_cast<long long>(t.computes), static_cast<double>(t.ns) / 1e6,
                  static_cast<double>(t.ns) / 1e3 / static_cast<double>(t.computes),
                  static_cast<double>(total) / 1e3 / static_cast<double>(t.computes));
    text += head;
    std::vector<std::pair<int64_t, std::string>> rows;
    for (const auto& [k, e] : t.by_kind) {
      char line[200];
      std::snprintf(line, sizeof line, "%-24s %9lld calls %10.3f ms %5.1f%% %8.2f us/call %8.2f us/compute",
                    k.c_str(), static_cast<long long>(e.calls), static_cast<double>(e.ns) / 1e6,
                    total > 0 ? 100.0 * static_cast<double>(e.ns) / static_cast<double>(total) : 0.0,
                    static_cast<double>(e.ns) / 1e3 / static_cast<double>(e.calls),
                    static_cast<double>(e.ns) / 1e3 / static_cast<double>(t.computes));
      rows.emplace_back(e.ns, line);
    }
    std::sort(rows.rbegin(), rows.rend());
    for (const auto& r : rows) text += "\n  " + r.second;
  }
  common::plugin_log(LOOM_LOG_LEVEL_INFO, "cpu", text);
}

}  // namespace loom::cpu
