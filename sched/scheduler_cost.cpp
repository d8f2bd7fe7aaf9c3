// Scheduler cost model: estimated microseconds for a node on a device, as
// op time (the plugin's loom.cost estimate, else flops over a throughput per
// device type) plus the copies its
// sources would need (bytes over a link bandwidth, plus a fixed latency per
// copy). Crude on purpose: it only has to rank candidates, and it is what
// decides offload (docs/scheduler.md, "Costs").
#include "sched/scheduler_plan.hpp"

namespace loom::sched {
namespace {

constexpr double kLinkBytesPerUs = 1e4;  // 10 GB/s between devices
constexpr double kCopyLatencyUs = 10.0;

double flops_per_us(loom_device_type_t type) {
  switch (type) {
    case LOOM_DEVICE_TYPE_GPU:
      return 5e6;  // 5 TFLOP/s
    case LOOM_DEVICE_TYPE_IGPU:
      return 5e5;
    case LOOM_DEVICE_TYPE_ACCEL:
      return 2e5;
    default:
      return 5e4;  // CPU: 50 GFLOP/s
  }
}

double node_flops(const Tensor* t) {
  if (t->op == LOOM_OP_MUL_MAT && t->src[0]) {
    return 2.0 * static_cast<double>(t->src[0]->ne[0]) * static_cast<double>(t->nelements());
  }
  return 4.0 * static_cast<double>(t->nelements());
}

}  // namespace

double Builder::estimate_us(size_t d, const Tensor* t) const {
  double us = devices_[d]->op_time_us(t);
  if (us < 0) us = node_flops(t) / flops_per_us(devices_[d]->info().type);
  for (int k = 0; k < LOOM_MAX_SRC; ++k) {
    const Tensor* s = t->source(k);
    if (!s) continue;
    bool host_data = false;
    // Sources whose place is not decided yet cost nothing on either side.
    if (!location(s, &host_data) && !host_data) continue;
    if (!readable(d, s)) us += static_cast<double>(s->nbytes()) / kLinkBytesPerUs + kCopyLatencyUs;
  }
  return us;
}

}  // namespace loom::sched
