#include "coopmat_check.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/fp16.h"
#include "common/glue.h"
#include "device.h"
#include "stream.h"

namespace loom::vulkan {

namespace {

constexpr int64_t kK = 128;  // the planner's shortest row for the kernel (kShortK)
constexpr int64_t kM = 80;   // a whole 64-row tile and a partial one
constexpr int64_t kN = 24;   // above 8 columns (the F16-inputs rule), a partial tile

// Frees a status the check does not pass on; true when there was one.
bool failed(loom_status_t* st) {
  if (st == nullptr) return false;
  common::host_services()->status_free(st);
  return true;
}

float f16_rounded(float x) { return common::f16_to_f32(common::f32_to_f16(x)); }

void dense(loom_tensor_t* t, int32_t type, int64_t ne0, int64_t ne1, size_t elem,
           const char* name) {
  std::memset(t, 0, sizeof *t);
  t->struct_size = sizeof *t;
  t->type = type;
  t->op = LOOM_OP_NONE;
  t->ne[0] = ne0;
  t->ne[1] = ne1;
  t->ne[2] = t->ne[3] = 1;
  t->nb[0] = elem;
  t->nb[1] = elem * static_cast<size_t>(ne0);
  t->nb[2] = t->nb[3] = t->nb[1] * static_cast<size_t>(ne1);
  std::snprintf(t->name, sizeof t->name, "%s", name);
}

// Owns the check's buffer and stream.
struct Scratch {
  loom_buffer_t* buffer = nullptr;
  loom_stream_t* stream = nullptr;
  ~Scratch() {
    if (stream != nullptr) stream->iface->destroy(stream);
    if (buffer != nullptr) buffer->iface->free(buffer);
  }
};

}  // namespace

std::string coopmat_self_check(Device* dev) {
  // A and B: fixed values in [-1, 1) from a small generator.
  uint32_t seed = 12345u;
  auto next = [&seed] {
    seed = seed * 1664525u + 1013904223u;
    return static_cast<float>(seed >> 8) / 8388608.0f - 1.0f;
  };
  std::vector<uint16_t> a(static_cast<size_t>(kK * kM));
  std::vector<float> b(static_cast<size_t>(kK * kN));
  for (uint16_t& v : a) v = common::f32_to_f16(next());
  for (float& v : b) v = 2.0f * next();

  loom_tensor_t ta, tb, td;
  dense(&ta, LOOM_TYPE_F16, kK, kM, 2, "coopmat_check.a");
  dense(&tb, LOOM_TYPE_F32, kK, kN, 4, "coopmat_check.b");
  dense(&td, LOOM_TYPE_F32, kM, kN, 4, "coopmat_check.d");
  td.op = LOOM_OP_MUL_MAT;
  td.src[0] = &ta;
  td.src[1] = &tb;
  td.flags = LOOM_TENSOR_FLAG_OUTPUT;

  loom_buffer_type_t* bt = dev->buffer_type().handle();
  const size_t align = bt->iface->alignment(bt);
  auto up = [align](size_t x) { return (x + align - 1) / align * align; };
  const size_t off_b = up(a.size() * 2);
  const size_t off_d = off_b + up(b.size() * 4);
  const size_t bytes = off_d + static_cast<size_t>(kM * kN) * 4;
  Scratch s;
  if (failed(bt->iface->alloc(bt, bytes, &s.buffer)))
    return "could not allocate its " + std::to_string(bytes) + " bytes";
  char* base = static_cast<char*>(s.buffer->iface->base(s.buffer));
  const size_t offs[3] = {0, off_b, off_d};
  loom_tensor_t* ts[3] = {&ta, &tb, &td};
  for (int i = 0; i < 3; ++i) {
    ts[i]->buffer = s.buffer;
    ts[i]->data = base + offs[i];
    if (s.buffer->iface->init_tensor != nullptr &&
        failed(s.buffer->iface->init_tensor(s.buffer, ts[i])))
      return "could not place its tensors";
  }
  if (failed(s.buffer->iface->set_tensor(s.buffer, &ta, a.data(), 0, a.size() * 2)) ||
      failed(s.buffer->iface->set_tensor(s.buffer, &tb, b.data(), 0, b.size() * 4)))
    return "could not upload its inputs";
  if (failed(Stream::create(dev, &s.stream))) return "could not create a stream";
  loom_tensor_t* const nodes[1] = {&td};
  loom_graph_t g{};
  g.struct_size = sizeof g;
  g.n_nodes = 1;
  g.nodes = nodes;
  g.fingerprint = 0x636f6f706d617431ull;  // "coopmat1"
  if (failed(s.stream->iface->compute(s.stream, &g)) ||
      failed(s.stream->iface->synchronize(s.stream)))
    return "the kernel failed to build or run";
  std::vector<float> d(static_cast<size_t>(kM * kN));
  if (failed(s.buffer->iface->get_tensor(s.buffer, &td, d.data(), 0, d.size() * 4)))
    return "could not read its result";

  // The F16-inputs reference in double; the rule allows the sums' f32
  // rounding: well inside 1e-4 of sum |a b| here, while a lost or
  // misplaced fragment is off by O(1).
  double worst = 0;
  int64_t worst_at = 0;
  for (int64_t n = 0; n < kN; ++n) {
    for (int64_t m = 0; m < kM; ++m) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < kK; ++k) {
        const double p =
            static_cast<double>(common::f16_to_f32(a[static_cast<size_t>(m * kK + k)])) *
            f16_rounded(b[static_cast<size_t>(n * kK + k)]);
        ref += p;
        mag += std::fabs(p);
      }
      const double got = d[static_cast<size_t>(n * kM + m)];
      const double err = std::isfinite(got) ? std::fabs(got - ref) / (mag + 1e-30) : INFINITY;
      if (!(err <= worst)) {
        worst = err;
        worst_at = n * kM + m;
      }
    }
  }
  const char* force = std::getenv("LOOM_VULKAN_COOPMAT_CHECK");
  if (force != nullptr && std::strcmp(force, "fail") == 0)
    return "failed (forced by LOOM_VULKAN_COOPMAT_CHECK=fail)";
  if (!(worst <= 1e-4)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "gave %g for output (%lld, %lld), off by %.3g of its magnitude",
                  static_cast<double>(d[static_cast<size_t>(worst_at)]),
                  static_cast<long long>(worst_at % kM), static_cast<long long>(worst_at / kM),
                  worst);
    return buf;
  }
  return "";
}

}  // namespace loom::vulkan
