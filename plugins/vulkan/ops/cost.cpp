// loom.cost for the Vulkan plugin: a fixed cost per dispatch plus the work
// (multiply-adds for MUL_MAT, elements touched otherwise) over a rate. On
// lavapipe (emulated, measured with `loom bench --device vulkan0` on a
// 2-core VM, 2026-11-23) a decode step of stories260K takes ~250 us per
// dispatch and prompt processing reaches ~100 multiply-adds/us; for real
// GPUs the numbers are generic (the API says nothing about speed): 10 us
// per dispatch, 1e6 (discrete) or 1e5 (integrated) multiply-adds/us. Only
// the ranking against other devices matters.
#include <algorithm>

#include "common/op_info.h"
#include "ops/ops.h"

namespace loom::vulkan {

namespace {

double work_of(const loom_tensor_t* n) {
  double elems = 1.0;
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) elems *= static_cast<double>(n->ne[d]);
  if ((n->op == LOOM_OP_MUL_MAT || n->op == LOOM_OP_MUL_MAT_ID) && n->src[0] != nullptr) {
    return elems * static_cast<double>(n->src[0]->ne[0]);
  }
  // top_k.comp: every element compared with its row.
  if (n->op == LOOM_OP_TOP_K && n->src[0] != nullptr) {
    const loom_tensor_t* a = n->src[0];
    return static_cast<double>(a->ne[0]) * static_cast<double>(a->ne[0] * a->ne[1] * a->ne[2] * a->ne[3]);
  }
  for (int i = 0; i < LOOM_MAX_SRC; ++i) {
    if (n->src[i] == nullptr) continue;
    double s = 1.0;
    for (int d = 0; d < LOOM_MAX_DIMS; ++d) s *= static_cast<double>(n->src[i]->ne[d]);
    elems = std::max(elems, s);
  }
  return elems;
}

}  // namespace

double op_time_us(const OpCaps& caps, const loom_tensor_t* node) {
  if (node == nullptr || node->op == LOOM_OP_NONE || common::is_view_op(node->op)) return 0.0;
  if (unsupported_reason(caps, node) != nullptr) return -1.0;
  const double work = work_of(node);
  switch (caps.speed) {
    case OpCaps::Speed::kEmulated:
      return 250.0 + work / 100.0;
    case OpCaps::Speed::kIntegrated:
      return 20.0 + work / 1e5;
    default:
      return 10.0 + work / 1e6;
  }
}

}  // namespace loom::vulkan
