// One source, many broken (or odd) plugins: each build of this file in
// CMakeLists.txt sets FAKE_KIND and friends to exercise one registry path.
// The devices, buffers and streams are the null plugin's pieces. The
// hostile kinds (10 to 13) crash, exit or hang in one entry each; they are
// built into their own folder and must only ever run in a probe child.
// Kinds 14 to 17 do it inside compute (their own folder too: only a child
// process of `loom conformance` may run their graphs).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/glue.h"
#include "common/plugin_entry.h"
#include "common/op_info.h"
#include "common/type_traits.h"
#include "device.h"
#include "loom/plugin.h"

#define FAKE_OK 0           // works: FAKE_DEVICES devices named FAKE_PREFIX<i>
#define FAKE_NO_SYMBOL 1    // exports no loom_plugin_query
#define FAKE_UNAVAILABLE 2  // init: UNAVAILABLE
#define FAKE_INIT_ERROR 3   // init: INTERNAL
#define FAKE_THROW_INIT 4   // init throws a C++ exception across the ABI
#define FAKE_THROW_PROPS 5  // get_props throws after a good init
#define FAKE_BAD_SIZE 6     // loom_plugin_t struct_size too small
#define FAKE_NULL_QUERY 7   // loom_plugin_query returns NULL
#define FAKE_MISSING_DEP 8  // linked against a library dlopen cannot find
#define FAKE_BAD_IFACE 9    // a device table with a NULL required entry
// Hostile: FAKE_HOSTILE_AT names the entry (FAKE_AT_*) that misbehaves.
#define FAKE_SEGV 10   // raises SIGSEGV there
#define FAKE_ABORT 11  // calls abort() there
#define FAKE_EXIT 12   // calls exit(0) there
#define FAKE_HANG 13   // never returns from there
// Kinds 20+: what a probe's answer depends on (tests/registry/isolation_test.cpp).
#define FAKE_GATED 20  // init: UNAVAILABLE unless LOOM_FAKE_GATE names a file that opens; exits if it says "exit"
#define FAKE_IS_HOSTILE ((FAKE_KIND >= FAKE_SEGV && FAKE_KIND <= FAKE_HANG) || FAKE_COMPUTE_HOSTILE)
#define FAKE_AT_CTOR 0
#define FAKE_AT_QUERY 1
#define FAKE_AT_SCORE 2
#define FAKE_AT_INIT 3
#define FAKE_AT_COUNT 4
#define FAKE_AT_PROPS 5
// Kinds 14-17 misbehave inside compute, in a MUL_MAT over rows of 1024 or
// more elements (an out-of-bounds kernel), not in a registry entry: they
// claim MUL_MAT and SCALE on F32 and compute them right everywhere else.
// `loom conformance` must lose that case alone (tests/cli/conformance_isolation_test.cpp).
#define FAKE_SEGV_COMPUTE 14   // raises SIGSEGV there
#define FAKE_ABORT_COMPUTE 15  // calls abort() there
#define FAKE_HANG_COMPUTE 16   // never returns from there
#define FAKE_DEAD_CONTEXT 17   // fails that graph; every later stream_create in the process fails
#define FAKE_AT_NOWHERE -1     // no registry entry misbehaves
#if FAKE_KIND >= FAKE_SEGV_COMPUTE && FAKE_KIND <= FAKE_DEAD_CONTEXT
#define FAKE_COMPUTE_HOSTILE 1
#define FAKE_HOSTILE_AT FAKE_AT_NOWHERE
#else
#define FAKE_COMPUTE_HOSTILE 0
#endif

#ifndef FAKE_KIND
#error "FAKE_KIND must be set"
#endif
#ifndef FAKE_NAME
#error "FAKE_NAME must be set"
#endif
#ifndef FAKE_VARIANT
#define FAKE_VARIANT ""
#endif
#ifndef FAKE_ABI_MAJOR
#define FAKE_ABI_MAJOR LOOM_ABI_VERSION_MAJOR
#endif
#ifndef FAKE_ABI_MINOR
#define FAKE_ABI_MINOR LOOM_ABI_VERSION_MINOR
#endif
#ifndef FAKE_SCORE
#define FAKE_SCORE -1  // -1: no score entry (the host assumes 1)
#endif
#ifndef FAKE_DEVICES
#define FAKE_DEVICES 1
#endif
#ifndef FAKE_PREFIX
#define FAKE_PREFIX FAKE_NAME
#endif
#ifndef FAKE_DEVICE_TYPE
#define FAKE_DEVICE_TYPE LOOM_DEVICE_TYPE_ACCEL
#endif
#ifndef FAKE_SUPPORTS_ALL
#define FAKE_SUPPORTS_ALL 0  // 1: supports_op answers true for every node, known op or not
#endif
#ifndef FAKE_WRONG_MATH
#define FAKE_WRONG_MATH 0  // 1: claims MUL_MAT and SCALE on F32 and computes them wrong
#endif
#ifndef FAKE_UUID_TAG
#define FAKE_UUID_TAG FAKE_NAME
#endif

#if FAKE_KIND == FAKE_MISSING_DEP
extern "C" int loomfake_dep_answer(void);
#endif

#if FAKE_IS_HOSTILE
#include <signal.h>
#include <unistd.h>
// Misbehave if this is the entry FAKE_HOSTILE_AT names.
#define FAKE_HOSTILE(at) \
  do {                   \
    if ((at) == FAKE_HOSTILE_AT) misbehave(); \
  } while (0)
namespace {
[[maybe_unused]] void misbehave() {
#if FAKE_KIND == FAKE_SEGV
  raise(SIGSEGV);
#elif FAKE_KIND == FAKE_ABORT
  std::abort();
#elif FAKE_KIND == FAKE_EXIT
  std::exit(0);
#else
  for (;;) pause();
#endif
}
__attribute__((constructor)) void fake_ctor() { FAKE_HOSTILE(FAKE_AT_CTOR); }
}  // namespace
#else
#define FAKE_HOSTILE(at) ((void)0)
#endif

namespace {

using loom::common::guarded;
using loom::common::make_status;
using loom::null::Device;

struct FakeContext {
  std::vector<std::unique_ptr<Device>> devices;
  loom_device_iface_t iface;  // a patched copy of the null device table
};

#if FAKE_KIND == FAKE_THROW_PROPS
loom_status_t* throwing_get_props(loom_device_t*, loom_device_props_t*) {
  throw std::runtime_error("fake get_props exploded");  // deliberately not guarded
}
#define FAKE_PATCHED_GET_PROPS throwing_get_props
#else
#define FAKE_PATCHED_GET_PROPS nullptr
#endif

#if FAKE_SUPPORTS_ALL
// A careless plugin: claims every node, even op ids its ABI minor predates.
bool supports_everything(loom_device_t*, const loom_tensor_t*) { return true; }
#endif

#if FAKE_WRONG_MATH
// A plugin that claims MUL_MAT and SCALE on F32 and gets them wrong, as a
// buggy kernel would: MUL_MAT drops the last term of every dot product,
// SCALE ignores the bias. `loom conformance` must fail it.
bool supports_wrong(loom_device_t*, const loom_tensor_t* n) {
  const bool f32 = n->type == LOOM_TYPE_F32 && n->src[0] != nullptr && n->src[0]->type == LOOM_TYPE_F32;
  if (n->op == LOOM_OP_SCALE) return f32;
  return n->op == LOOM_OP_MUL_MAT && f32 && n->src[1] != nullptr && n->src[1]->type == LOOM_TYPE_F32;
}

float& el(const loom_tensor_t* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return *reinterpret_cast<float*>(static_cast<char*>(t->data) + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] +
                                   i3 * t->nb[3]);
}

void wrong_kernel(const loom_tensor_t* n) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  for (int64_t i3 = 0; i3 < n->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < n->ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < n->ne[1]; ++i1)
        for (int64_t i0 = 0; i0 < n->ne[0]; ++i0) {
          if (n->op == LOOM_OP_SCALE) {
            float scale;
            std::memcpy(&scale, &n->op_params[0], sizeof scale);
            el(n, i0, i1, i2, i3) = el(a, i0, i1, i2, i3) * scale;  // the bias is forgotten
            continue;
          }
          float sum = 0.0f;
          for (int64_t k = 0; k + 1 < a->ne[0]; ++k) {  // one term short
            sum += el(a, k, i0, i2 / (b->ne[2] / a->ne[2]), i3 / (b->ne[3] / a->ne[3])) * el(b, k, i1, i2, i3);
          }
          el(n, i0, i1, i2, i3) = sum;
        }
}

void wrong_destroy(loom_stream_t* s) { delete s; }
loom_status_t* wrong_compute(loom_stream_t*, const loom_graph_t* g) {
  for (int32_t i = 0; i < g->n_nodes; ++i) {
    const loom_tensor_t* n = g->nodes[i];
    if (n->op == LOOM_OP_SCALE || n->op == LOOM_OP_MUL_MAT) wrong_kernel(n);
  }
  return nullptr;
}
loom_status_t* wrong_sync(loom_stream_t*) { return nullptr; }
const loom_stream_iface_t kWrongStream = {sizeof(loom_stream_iface_t), wrong_destroy, wrong_compute, wrong_sync,
                                          nullptr, nullptr, nullptr, nullptr};
loom_status_t* wrong_stream_create(loom_device_t* d, loom_stream_t** out) {
  *out = new loom_stream_t{sizeof(loom_stream_t), &kWrongStream, d, nullptr};
  return nullptr;
}
#endif

#if FAKE_COMPUTE_HOSTILE
// Right F32 kernels (any strides, broadcast batches) but for the bad rows.
constexpr int64_t kBadRow = 1024;
bool g_context_lost = false;  // FAKE_DEAD_CONTEXT: a graph failed in this process

bool supports_f32(loom_device_t*, const loom_tensor_t* n) {
  const bool f32 = n->type == LOOM_TYPE_F32 && n->src[0] != nullptr && n->src[0]->type == LOOM_TYPE_F32;
  if (n->op == LOOM_OP_SCALE) return f32;
  return n->op == LOOM_OP_MUL_MAT && f32 && n->src[1] != nullptr && n->src[1]->type == LOOM_TYPE_F32;
}

float& at(const loom_tensor_t* t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
  return *reinterpret_cast<float*>(static_cast<char*>(t->data) + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] +
                                   i3 * t->nb[3]);
}

void right_kernel(const loom_tensor_t* n) {
  const loom_tensor_t* a = n->src[0];
  const loom_tensor_t* b = n->src[1];
  float scale = 0.0f, bias = 0.0f;
  if (n->op == LOOM_OP_SCALE) {
    std::memcpy(&scale, &n->op_params[0], sizeof scale);
    std::memcpy(&bias, &n->op_params[1], sizeof bias);
  }
  for (int64_t i3 = 0; i3 < n->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < n->ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < n->ne[1]; ++i1)
        for (int64_t i0 = 0; i0 < n->ne[0]; ++i0) {
          if (n->op == LOOM_OP_SCALE) {
            at(n, i0, i1, i2, i3) = at(a, i0, i1, i2, i3) * scale + bias;
            continue;
          }
          double sum = 0.0;
          for (int64_t k = 0; k < a->ne[0]; ++k) {
            sum += static_cast<double>(at(a, k, i0, i2 / (b->ne[2] / a->ne[2]), i3 / (b->ne[3] / a->ne[3]))) *
                   at(b, k, i1, i2, i3);
          }
          at(n, i0, i1, i2, i3) = static_cast<float>(sum);
        }
}

// What the broken kernel does to the process.
loom_status_t* bad_rows(const loom_tensor_t* n) {
#if FAKE_KIND == FAKE_SEGV_COMPUTE
  (void)n;
  raise(SIGSEGV);
#elif FAKE_KIND == FAKE_ABORT_COMPUTE
  (void)n;
  std::abort();
#elif FAKE_KIND == FAKE_HANG_COMPUTE
  (void)n;
  for (;;) pause();
#endif
  g_context_lost = true;  // a sticky error, as CUDA's cudaErrorIllegalAddress
  return make_status(LOOM_STATUS_INTERNAL, std::string("[" FAKE_NAME ".compute] ") + n->name +
                                               ": an illegal memory access was encountered (the context is lost)");
}

void hostile_destroy(loom_stream_t* s) { delete s; }
loom_status_t* hostile_compute(loom_stream_t*, const loom_graph_t* g) {
  for (int32_t i = 0; i < g->n_nodes; ++i) {
    const loom_tensor_t* n = g->nodes[i];
    if (n->op == LOOM_OP_NONE || loom::common::is_view_op(n->op)) continue;
    if (!supports_f32(nullptr, n)) {
      return make_status(LOOM_STATUS_UNIMPLEMENTED, std::string("[" FAKE_NAME ".compute] op ") +
                                                        loom::common::op_name(n->op) + " of node '" + n->name +
                                                        "' (" + loom::common::type_name(n->type) + ") is not supported");
    }
    if (n->op == LOOM_OP_MUL_MAT && n->src[0]->ne[0] >= kBadRow) return bad_rows(n);
    right_kernel(n);
  }
  return nullptr;
}
// No loom.threads: the null pieces' one names the null plugin in its errors.
const void* no_extension(loom_device_t*, const char*, uint32_t) { return nullptr; }
loom_status_t* hostile_sync(loom_stream_t*) { return nullptr; }
const loom_stream_iface_t kHostileStream = {sizeof(loom_stream_iface_t), hostile_destroy, hostile_compute,
                                            hostile_sync, nullptr, nullptr, nullptr, nullptr};
loom_status_t* hostile_stream_create(loom_device_t* d, loom_stream_t** out) {
  if (g_context_lost) {
    return make_status(LOOM_STATUS_INTERNAL, "[" FAKE_NAME ".stream_create] the context was lost to an earlier error");
  }
  *out = new loom_stream_t{sizeof(loom_stream_t), &kHostileStream, d, nullptr};
  return nullptr;
}
#endif

#if FAKE_IS_HOSTILE && FAKE_HOSTILE_AT == FAKE_AT_PROPS
loom_status_t* hostile_get_props(loom_device_t*, loom_device_props_t*) {
  misbehave();
  return nullptr;
}
#undef FAKE_PATCHED_GET_PROPS
#define FAKE_PATCHED_GET_PROPS hostile_get_props
#endif

loom_status_t* fake_init([[maybe_unused]] void** out_context) {
  FAKE_HOSTILE(FAKE_AT_INIT);
#if FAKE_KIND == FAKE_THROW_INIT
  throw std::runtime_error("fake init exploded");  // deliberately not guarded
#else
  return guarded("fake.init", [&]() -> loom_status_t* {
#if FAKE_KIND == FAKE_UNAVAILABLE
    return make_status(LOOM_STATUS_UNAVAILABLE, "fake hardware is absent (UNAVAILABLE by design)");
#elif FAKE_KIND == FAKE_INIT_ERROR
    return make_status(LOOM_STATUS_INTERNAL, "[fake.init] driver table corrupt: expected 7, got 3");
#else
#if FAKE_KIND == FAKE_GATED
    // Like a driver found through a variable and a file on disk.
    const char* gate = std::getenv("LOOM_FAKE_GATE");
    FILE* f = gate ? std::fopen(gate, "r") : nullptr;
    if (f == nullptr) return make_status(LOOM_STATUS_UNAVAILABLE, "fake driver file absent (LOOM_FAKE_GATE)");
    char first[8] = {0};
    const bool broken = std::fgets(first, sizeof first, f) != nullptr && std::strncmp(first, "exit", 4) == 0;
    std::fclose(f);
    if (broken) std::_Exit(7);  // a driver that takes its process down (only ever run in a probe child)
#endif
    auto ctx = std::make_unique<FakeContext>();
    for (size_t i = 0; i < FAKE_DEVICES; ++i) {
      loom::null::DeviceConfig config = loom::null::make_device_config(FAKE_PREFIX, i, FAKE_UUID_TAG);
      config.type = FAKE_DEVICE_TYPE;
      config.description = "fake device of libloom-" FAKE_NAME;
      ctx->devices.push_back(std::make_unique<Device>(std::move(config)));
    }
#if FAKE_KIND == FAKE_THROW_PROPS || FAKE_KIND == FAKE_BAD_IFACE || \
    (FAKE_IS_HOSTILE && FAKE_HOSTILE_AT == FAKE_AT_PROPS)
    ctx->iface = *ctx->devices[0]->raw()->iface;
    ctx->iface.get_props = FAKE_PATCHED_GET_PROPS;
    for (auto& d : ctx->devices) d->raw()->iface = &ctx->iface;
#endif
#if FAKE_WRONG_MATH
    ctx->iface = *ctx->devices[0]->raw()->iface;
    ctx->iface.supports_op = supports_wrong;
    ctx->iface.stream_create = wrong_stream_create;
    for (auto& d : ctx->devices) d->raw()->iface = &ctx->iface;
#endif
#if FAKE_COMPUTE_HOSTILE
    ctx->iface = *ctx->devices[0]->raw()->iface;
    ctx->iface.supports_op = supports_f32;
    ctx->iface.stream_create = hostile_stream_create;
    ctx->iface.get_extension = no_extension;
    for (auto& d : ctx->devices) d->raw()->iface = &ctx->iface;
#endif
#if FAKE_SUPPORTS_ALL
    ctx->iface = *ctx->devices[0]->raw()->iface;
    ctx->iface.supports_op = supports_everything;
    for (auto& d : ctx->devices) d->raw()->iface = &ctx->iface;
#endif
    *out_context = ctx.release();
    return nullptr;
#endif
  });
#endif
}

void fake_shutdown(void* context) { delete static_cast<FakeContext*>(context); }

size_t fake_device_count(void* context) {
  FAKE_HOSTILE(FAKE_AT_COUNT);
  return static_cast<FakeContext*>(context)->devices.size();
}

loom_device_t* fake_device_get(void* context, size_t index) {
  auto* ctx = static_cast<FakeContext*>(context);
  return index < ctx->devices.size() ? ctx->devices[index]->raw() : nullptr;
}

#if FAKE_IS_HOSTILE && FAKE_HOSTILE_AT == FAKE_AT_SCORE && FAKE_SCORE < 0
#undef FAKE_SCORE
#define FAKE_SCORE 1
#endif
#if FAKE_SCORE >= 0 || FAKE_KIND == FAKE_MISSING_DEP
int32_t fake_score(void) {
  FAKE_HOSTILE(FAKE_AT_SCORE);
#if FAKE_KIND == FAKE_MISSING_DEP
  return loomfake_dep_answer() > 0 ? 1 : 0;  // the reference keeps the dependency linked
#else
  return FAKE_SCORE;
#endif
}
#define FAKE_SCORE_ENTRY fake_score
#else
#define FAKE_SCORE_ENTRY nullptr
#endif

const loom_plugin_t kPlugin = {
#if FAKE_KIND == FAKE_BAD_SIZE
    LOOM_STRUCT_END(loom_plugin_t, name),  // claims to end after `name`
#else
    sizeof(loom_plugin_t),
#endif
    LOOM_ABI_MAKE_VERSION(FAKE_ABI_MAJOR, FAKE_ABI_MINOR),
    FAKE_NAME,
    FAKE_VARIANT,
    "0.0.1-fake",
    FAKE_SCORE_ENTRY,
    fake_init,
    fake_shutdown,
    fake_device_count,
    fake_device_get,
    nullptr,
};

}  // namespace

#if FAKE_KIND == FAKE_NO_SYMBOL
#define FAKE_QUERY_NAME loom_plugin_query_misspelt
#else
#define FAKE_QUERY_NAME loom_plugin_query
#endif

namespace {
// What the entry hands out once the host is accepted (the hostile kinds
// misbehave here: "in loom_plugin_query").
const loom_plugin_t* fake_table() {
  FAKE_HOSTILE(FAKE_AT_QUERY);
#if FAKE_KIND == FAKE_NULL_QUERY
  return nullptr;
#else
  return &kPlugin;
#endif
}
}  // namespace

LOOM_PLUGIN_DEFINE_NAMED(FAKE_QUERY_NAME, fake_table())
