#include "llm/session/finite_check.hpp"

#include <cmath>
#include <vector>

#include "loom/sched/executor.hpp"
#include "loom/runtime/types.hpp"

namespace loom::llm {
namespace {

std::string shape_of(const Tensor* t) {
  std::string s = "[" + std::to_string(t->ne[0]);
  int last = 0;
  for (int d = 1; d < LOOM_MAX_DIMS; ++d) {
    if (t->ne[d] != 1) last = d;
  }
  for (int d = 1; d <= last; ++d) s += ", " + std::to_string(t->ne[d]);
  return s + "]";
}

std::string name_of(const Tensor* t) { return t->name[0] ? "'" + std::string(t->name) + "'" : "(unnamed)"; }

// "op 'name' [shape] type (sources: 'a', 'b')".
std::string describe(const Tensor* t) {
  std::string s = std::string(op_name(t->op)) + " " + name_of(t) + " " + shape_of(t) + " " + type_name(t->type);
  std::string srcs;
  for (int i = 0; i < LOOM_MAX_SRC; ++i) {
    if (t->src[i]) srcs += (srcs.empty() ? "" : ", ") + name_of(t->source(i));
  }
  return srcs.empty() ? s : s + " (sources: " + srcs + ")";
}

}  // namespace

size_t first_non_finite(const float* v, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(v[i])) return i;
  }
  return n;
}

const char* non_finite_name(float v) {
  if (std::isnan(v)) return "NaN";
  return v > 0 ? "+inf" : "-inf";
}

StatusOr<Graph> keep_every_node(const Graph& g) {
  std::vector<Tensor*> outputs;
  for (Tensor* t : g.nodes()) {
    if (t->view_src == nullptr) outputs.push_back(t);
  }
  for (Tensor* t : g.outputs()) {
    if (t->view_src != nullptr) outputs.push_back(t);  // a view the caller reads stays an output
  }
  return Graph::build(outputs);
}

Status check_nodes_finite(const Graph& g, const Scheduler& sched, const std::string& step) {
  std::vector<uint8_t> raw;
  std::vector<float> vals;
  const auto& nodes = g.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Tensor* t = nodes[i];
    if (t->view_src != nullptr || !type_is_float(t->type) || !t->is_contiguous() || !t->data) continue;
    const auto n = static_cast<size_t>(t->nelements());
    raw.resize(t->nbytes());
    LOOM_RETURN_IF_ERROR(tensor_get(t, raw.data(), raw.size()));
    vals.resize(n);
    to_float(t->type, raw.data(), vals.data(), static_cast<int64_t>(n));
    const size_t bad = first_non_finite(vals.data(), n);
    if (bad == n) continue;
    const int dev = sched.device_of(i);
    const std::string device = dev >= 0 ? sched.devices()[static_cast<size_t>(dev)]->name() : "an unknown device";
    return internal_error("[llm.check_finite] " + step + ": node " + std::to_string(i) + ", " + describe(t) +
                          " on " + device + ", is the first to produce a non-finite value: " +
                          non_finite_name(vals[bad]) + " at element " + std::to_string(bad) + " of " +
                          std::to_string(n));
  }
  return Status();
}

}  // namespace loom::llm
