#include "measure/device_bandwidth.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "loom/registry/plugin_calls.hpp"

namespace loom::cli {
namespace {

void place(loom_tensor_t* t, loom_buffer_t* b, void* base, size_t offset, size_t bytes, const char* name) {
  std::memset(t, 0, sizeof *t);
  t->struct_size = sizeof *t;
  t->type = LOOM_TYPE_F32;
  t->op = LOOM_OP_NONE;
  const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
  t->ne[0] = n;
  for (int d = 1; d < LOOM_MAX_DIMS; ++d) t->ne[d] = 1;
  t->nb[0] = sizeof(float);
  for (int d = 1; d < LOOM_MAX_DIMS; ++d) t->nb[d] = bytes;
  t->data = static_cast<char*>(base) + offset;
  t->buffer = b;
  std::snprintf(t->name, sizeof t->name, "%s", name);
}

}  // namespace

bool has_own_memory(const registry::Device& d) {
  loom_buffer_type_t* bt = d.buffer_type();
  return bt != nullptr && !registry::buffer_type_is_host(bt);
}

StatusOr<std::unique_ptr<DeviceBandwidthProbe>> DeviceBandwidthProbe::create(const registry::Device& d, size_t bytes) {
  if (bytes == 0) {
    bytes = size_t{512} << 20;
    StatusOr<registry::Device::Memory> mem = d.memory();
    if (mem.ok() && mem->free > 0) bytes = std::min<size_t>(bytes, static_cast<size_t>(mem->free / 4));
    bytes = std::max<size_t>(bytes, size_t{16} << 20);
  }
  bytes = bytes / 4096 * 4096;
  std::unique_ptr<DeviceBandwidthProbe> owned(new DeviceBandwidthProbe());
  DeviceBandwidthProbe& p = *owned;
  p.dev_ = &d;
  p.bytes_ = bytes;
  StatusOr<Buffer> buf = d.alloc_buffer(2 * bytes);
  if (!buf.ok()) return buf.status();
  p.buf_ = std::move(*buf);
  void* base = registry::buffer_base(p.buf_.raw());
  if (base == nullptr) return internal_error("[bench.device_bandwidth] " + d.name() + ": buffer has no base");
  place(&p.src_, p.buf_.raw(), base, 0, bytes, "bw_src");
  place(&p.dst_, p.buf_.raw(), base, bytes, bytes, "bw_dst");
  for (loom_tensor_t* t : {&p.src_, &p.dst_}) {
    Status st = registry::buffer_init_tensor(p.buf_.raw(), t);
    if (!st.ok()) return st;
  }
  Status st = p.buf_.clear(1);
  if (!st.ok()) return st;
  st = p.copy_once();  // untimed: also says whether the plugin can copy at all
  if (!st.ok()) return st;
  return owned;
}

Status DeviceBandwidthProbe::copy_once() {
  Status st = registry::buffer_copy_tensor(buf_.raw(), &src_, &dst_);
  if (!st.ok()) return st;
  // A read of the copy's last bytes waits for it (copies may be queued).
  float tail = 0;
  return registry::buffer_get_tensor(buf_.raw(), &dst_, &tail, bytes_ - sizeof tail, sizeof tail);
}

StatusOr<Bandwidth> DeviceBandwidthProbe::measure(int passes) {
  double best = 0;
  for (int p = 0; p < std::max(1, passes); ++p) {
    const double t0 = now_s();
    Status st = copy_once();
    const double dt = now_s() - t0;
    if (!st.ok()) return st;
    if (dt > 0) best = std::max(best, 2.0 * static_cast<double>(bytes_) / dt);
  }
  Bandwidth bw;
  bw.gb_per_s = best / 1e9;
  bw.bytes = 2 * bytes_;
  bw.threads = 0;
  bw.passes = passes;
  return bw;
}

std::string DeviceBandwidthProbe::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s's copy of %.0f MiB inside its own memory (read + write)",
                dev_ ? dev_->name().c_str() : "?", static_cast<double>(bytes_) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace loom::cli
