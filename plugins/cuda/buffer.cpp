#include "buffer.h"

#include <cuda_runtime_api.h>

#include <cstring>
#include <new>
#include <vector>

#include "common/glue.h"
#include "common/type_traits.h"
#include "device.h"
#include "weight_layout.h"

namespace loom::cuda {
namespace {

using common::guarded;
using common::make_status;

constexpr size_t kAlignment = 256;

struct BufferCtx {
  BufferType* type;
  void* ptr;
  size_t size;  // bytes held (the pool block may be larger)
  size_t block;
};

BufferCtx* ctx_of(loom_buffer_t* b) { return static_cast<BufferCtx*>(b->context); }

std::string where(BufferType* t, const char* op) { return "[cuda." + std::string(op) + "] " + t->name() + ": "; }

loom_status_t* cuda_error(BufferType* t, const char* op, cudaError_t e) {
  return make_status(LOOM_STATUS_INTERNAL, where(t, op) + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// Byte range [offset, offset + size) of tensor t inside buffer b.
loom_status_t* check_range(loom_buffer_t* b, const loom_tensor_t* t, size_t offset, size_t size, const char* op) {
  BufferCtx* c = ctx_of(b);
  const uint8_t* base = static_cast<const uint8_t*>(c->ptr);
  const uint8_t* p = static_cast<const uint8_t*>(t->data);
  if (p == nullptr || p < base || static_cast<size_t>(p - base) + offset + size > c->size) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       where(c->type, op) + "tensor '" + t->name + "' range [" + std::to_string(offset) + ", " +
                           std::to_string(offset + size) + ") is outside its buffer of " + std::to_string(c->size) +
                           " bytes");
  }
  return nullptr;
}

void buffer_free(loom_buffer_t* b) {
  if (b == nullptr) return;
  BufferCtx* c = ctx_of(b);
  if (c->ptr) c->type->release(c->ptr, c->block);
  delete c;
  delete b;
}

void* buffer_base(loom_buffer_t* b) { return ctx_of(b)->ptr; }

loom_status_t* buffer_set_tensor(loom_buffer_t* b, loom_tensor_t* t, const void* data, size_t offset, size_t size) {
  return guarded("cuda.set_tensor", [&]() -> loom_status_t* {
    if (size == 0) return nullptr;
    if (loom_status_t* st = check_range(b, t, offset, size, "set_tensor")) return st;
    BufferCtx* c = ctx_of(b);
    if (c->type->pinned()) {
      std::memcpy(static_cast<uint8_t*>(t->data) + offset, data, size);
      return nullptr;
    }
    c->type->device()->make_current();
    const cudaError_t e = cudaMemcpy(static_cast<uint8_t*>(t->data) + offset, data, size, cudaMemcpyDefault);
    return e == cudaSuccess ? nullptr : cuda_error(c->type, "set_tensor", e);
  });
}

loom_status_t* buffer_get_tensor(loom_buffer_t* b, const loom_tensor_t* t, void* data, size_t offset, size_t size) {
  return guarded("cuda.get_tensor", [&]() -> loom_status_t* {
    if (size == 0) return nullptr;
    if (loom_status_t* st = check_range(b, t, offset, size, "get_tensor")) return st;
    BufferCtx* c = ctx_of(b);
    if (c->type->pinned()) {
      std::memcpy(data, static_cast<const uint8_t*>(t->data) + offset, size);
      return nullptr;
    }
    c->type->device()->make_current();
    const cudaError_t e = cudaMemcpy(data, static_cast<const uint8_t*>(t->data) + offset, size, cudaMemcpyDefault);
    return e == cudaSuccess ? nullptr : cuda_error(c->type, "get_tensor", e);
  });
}

loom_status_t* buffer_clear(loom_buffer_t* b, uint8_t value) {
  return guarded("cuda.clear", [&]() -> loom_status_t* {
    BufferCtx* c = ctx_of(b);
    if (c->size == 0) return nullptr;
    if (c->type->pinned()) {
      std::memset(c->ptr, value, c->size);
      return nullptr;
    }
    c->type->device()->make_current();
    const cudaError_t e = cudaMemset(c->ptr, value, c->size);
    return e == cudaSuccess ? nullptr : cuda_error(c->type, "clear", e);
  });
}

bool dense(const loom_tensor_t* t) {
  if (!common::type_is_valid(t->type)) return false;
  const common::TypeTraits& tr = common::type_traits(t->type);
  size_t expect = tr.type_size;
  if (t->nb[0] != expect) return false;
  expect = common::row_size(t->type, t->ne[0]);
  for (int d = 1; d < LOOM_MAX_DIMS; ++d) {
    if (t->ne[d] > 1 && t->nb[d] != expect) return false;
    expect *= static_cast<size_t>(t->ne[d]);
  }
  return true;
}

// Direct copies into device memory from this plugin's buffers (any CUDA
// device: peer or staged by the driver) and from host memory.
loom_status_t* buffer_copy_tensor(loom_buffer_t* b, const loom_tensor_t* src, loom_tensor_t* dst) {
  return guarded("cuda.copy_tensor", [&]() -> loom_status_t* {
    BufferCtx* c = ctx_of(b);
    const loom_buffer_type_t* sbt = src && src->buffer ? src->buffer->buffer_type : nullptr;
    const bool host = sbt && sbt->iface && sbt->iface->is_host && sbt->iface->is_host(const_cast<loom_buffer_type_t*>(sbt));
    bool same = dst && src && src->data && src->type == dst->type && (BufferType::is_ours(sbt) || host);
    for (int d = 0; same && d < LOOM_MAX_DIMS; ++d) same = src->ne[d] == dst->ne[d];
    if (!same || !dense(src) || !dense(dst)) {
      return make_status(LOOM_STATUS_UNIMPLEMENTED, where(c->type, "copy_tensor") + "only dense copies from CUDA or host buffers");
    }
    size_t n = common::row_size(dst->type, dst->ne[0]);
    for (int d = 1; d < LOOM_MAX_DIMS; ++d) n *= static_cast<size_t>(dst->ne[d]);
    if (loom_status_t* st = check_range(b, dst, 0, n, "copy_tensor")) return st;
    c->type->device()->make_current();
    const cudaError_t e = cudaMemcpy(dst->data, src->data, n, cudaMemcpyDefault);
    return e == cudaSuccess ? nullptr : cuda_error(c->type, "copy_tensor", e);
  });
}

const loom_buffer_iface_t kBufferIface = {
    sizeof(loom_buffer_iface_t), buffer_free, buffer_base, buffer_set_tensor, buffer_get_tensor, buffer_clear,
    /*init_tensor=*/nullptr, buffer_copy_tensor,
};

// The weights type's buffers (weight_layout.h): canonical blocks
// [offset, offset + size) of a whole matrix move as two copies, the quants
// and the scales, each contiguous in the split layout.
struct SplitRange {
  SplitShape shape;
  size_t first, count, total;  // blocks
};

loom_status_t* split_range(loom_buffer_t* b, const loom_tensor_t* t, size_t offset, size_t size, const char* op,
                           SplitRange* r) {
  BufferCtx* c = ctx_of(b);
  if (const char* why = weight_layout_unsupported(t)) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       where(c->type, op) + "tensor '" + t->name + "' cannot live in this buffer type: " + why);
  }
  split_shape(t->type, &r->shape);
  const size_t bb = static_cast<size_t>(r->shape.block_bytes);
  if (offset % bb != 0 || size % bb != 0) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, where(c->type, op) + "tensor '" + t->name + "' range [" +
                                                         std::to_string(offset) + ", " + std::to_string(offset + size) +
                                                         ") is not whole blocks of " + std::to_string(bb) + " bytes");
  }
  r->first = offset / bb;
  r->count = size / bb;
  r->total = split_block_count(t, r->shape);
  return nullptr;
}

// The range's quants and scales between the host (quants, scales) and the
// tensor's two regions, one direction.
cudaError_t split_copy(BufferCtx* c, const loom_tensor_t* t, const SplitRange& r, uint8_t* quants, uint8_t* scales,
                       bool to_device) {
  c->type->device()->make_current();
  const size_t q = static_cast<size_t>(r.shape.quant_bytes);
  auto* base = static_cast<uint8_t*>(t->data);
  uint8_t* dq = base + r.first * q;
  uint8_t* ds = base + r.total * q + 2 * r.first;
  if (to_device) {
    const cudaError_t e = cudaMemcpy(dq, quants, r.count * q, cudaMemcpyHostToDevice);
    return e != cudaSuccess ? e : cudaMemcpy(ds, scales, r.count * 2, cudaMemcpyHostToDevice);
  }
  const cudaError_t e = cudaMemcpy(quants, dq, r.count * q, cudaMemcpyDeviceToHost);
  return e != cudaSuccess ? e : cudaMemcpy(scales, ds, r.count * 2, cudaMemcpyDeviceToHost);
}

loom_status_t* weights_set_tensor(loom_buffer_t* b, loom_tensor_t* t, const void* data, size_t offset, size_t size) {
  return guarded("cuda.set_tensor", [&]() -> loom_status_t* {
    if (size == 0) return nullptr;
    if (loom_status_t* st = check_range(b, t, offset, size, "set_tensor")) return st;
    SplitRange r{};
    if (loom_status_t* st = split_range(b, t, offset, size, "set_tensor", &r)) return st;
    std::vector<uint8_t> quants(r.count * static_cast<size_t>(r.shape.quant_bytes)), scales(r.count * 2);
    split_blocks(r.shape, static_cast<const uint8_t*>(data), r.count, quants.data(), scales.data());
    const cudaError_t e = split_copy(ctx_of(b), t, r, quants.data(), scales.data(), true);
    return e == cudaSuccess ? nullptr : cuda_error(ctx_of(b)->type, "set_tensor", e);
  });
}

loom_status_t* weights_get_tensor(loom_buffer_t* b, const loom_tensor_t* t, void* data, size_t offset, size_t size) {
  return guarded("cuda.get_tensor", [&]() -> loom_status_t* {
    if (size == 0) return nullptr;
    if (loom_status_t* st = check_range(b, t, offset, size, "get_tensor")) return st;
    SplitRange r{};
    if (loom_status_t* st = split_range(b, t, offset, size, "get_tensor", &r)) return st;
    std::vector<uint8_t> quants(r.count * static_cast<size_t>(r.shape.quant_bytes)), scales(r.count * 2);
    const cudaError_t e = split_copy(ctx_of(b), t, r, quants.data(), scales.data(), false);
    if (e != cudaSuccess) return cuda_error(ctx_of(b)->type, "get_tensor", e);
    join_blocks(r.shape, quants.data(), scales.data(), r.count, static_cast<uint8_t*>(data));
    return nullptr;
  });
}

// Nothing is copied into the layout in place: the host falls back to
// get_tensor + set_tensor (canonical bytes both ways).
loom_status_t* weights_copy_tensor(loom_buffer_t* b, const loom_tensor_t*, loom_tensor_t*) {
  return make_status(LOOM_STATUS_UNIMPLEMENTED,
                     where(ctx_of(b)->type, "copy_tensor") + "the split weight layout takes its bytes through set_tensor");
}

const loom_buffer_iface_t kWeightsBufferIface = {
    sizeof(loom_buffer_iface_t), buffer_free, buffer_base, weights_set_tensor, weights_get_tensor, buffer_clear,
    /*init_tensor=*/nullptr, weights_copy_tensor,
};

const char* bt_name(loom_buffer_type_t* bt) { return BufferType::from(bt)->name().c_str(); }
loom_status_t* bt_alloc(loom_buffer_type_t* bt, size_t size, loom_buffer_t** out) {
  return guarded("cuda.alloc", [&] { return BufferType::from(bt)->alloc(size, out); });
}
size_t bt_alignment(loom_buffer_type_t*) { return kAlignment; }
bool bt_is_host(loom_buffer_type_t* bt) { return BufferType::from(bt)->pinned(); }

const loom_buffer_type_iface_t kBufferTypeIface = {
    sizeof(loom_buffer_type_iface_t), bt_name, bt_alloc, bt_alignment, /*max_size=*/nullptr, /*alloc_size=*/nullptr,
    bt_is_host,
};
// The weights type: its own table, so is_ours (whose buffers hold
// canonical bytes) never matches it.
const loom_buffer_type_iface_t kWeightsTypeIface = {
    sizeof(loom_buffer_type_iface_t), bt_name, bt_alloc, bt_alignment, /*max_size=*/nullptr, /*alloc_size=*/nullptr,
    bt_is_host,
};

const char* kind_suffix(BufferType::Kind k) {
  return k == BufferType::Kind::kPinned ? "_host" : k == BufferType::Kind::kWeights ? "_weights" : "";
}

size_t round_up(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

BufferType::BufferType(Device* device, Kind kind)
    : device_(device),
      kind_(kind),
      name_(device->name() + kind_suffix(kind)),
      handle_{sizeof(loom_buffer_type_t), kind == Kind::kWeights ? &kWeightsTypeIface : &kBufferTypeIface,
              device->handle(), this},
      cap_(kind == Kind::kPinned ? 0 : device->memory_total() / 8) {
  if (kind == Kind::kWeights) set_weights_type_iface(&kWeightsTypeIface);
}

BufferType::~BufferType() { trim(); }

bool BufferType::is_ours(const loom_buffer_type_t* bt) { return bt != nullptr && bt->iface == &kBufferTypeIface; }

void* BufferType::raw_alloc(size_t size) {
  device_->make_current();
  void* p = nullptr;
  const cudaError_t e = pinned() ? cudaHostAlloc(&p, size, cudaHostAllocPortable | cudaHostAllocMapped) : cudaMalloc(&p, size);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so the device stays usable
    return nullptr;
  }
  return p;
}

void BufferType::raw_free(void* p) {
  device_->make_current();
  if (pinned()) {
    cudaFreeHost(p);
  } else {
    cudaFree(p);
  }
}

loom_status_t* BufferType::alloc(size_t size, loom_buffer_t** out) {
  if (out == nullptr) return make_status(LOOM_STATUS_INVALID_ARGUMENT, where(this, "alloc") + "out_buffer is null");
  const size_t block = round_up(size == 0 ? 1 : size);
  void* p = nullptr;
  size_t got = block;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest cached block that fits without wasting more than a quarter.
    auto it = cache_.lower_bound(block);
    if (it != cache_.end() && it->first <= block + block / 4) {
      p = it->second;
      got = it->first;
      cached_ -= it->first;
      cache_.erase(it);
    }
  }
  if (p == nullptr) p = raw_alloc(block);
  if (p == nullptr) {
    trim();
    p = raw_alloc(block);
  }
  if (p == nullptr) {
    size_t free_b = 0, total_b = 0;
    device_->make_current();
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) cudaGetLastError();
    return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED,
                       where(this, "alloc") + "out of " + (pinned() ? "pinned host" : "device") + " memory: requested " +
                           std::to_string(size) + " bytes, " + std::to_string(free_b) + " bytes free of " +
                           std::to_string(total_b) + " on the device");
  }
  auto* ctx = new BufferCtx{this, p, size, got};
  *out = new loom_buffer_t{sizeof(loom_buffer_t), weights() ? &kWeightsBufferIface : &kBufferIface, &handle_, size, ctx};
  return nullptr;
}

void BufferType::release(void* p, size_t block) {
  // Kernels queued on any stream may still use the block: a cached block is
  // handed out again at once, so wait for the device first (cudaFree waits
  // by itself).
  device_->make_current();
  if (cudaDeviceSynchronize() != cudaSuccess) cudaGetLastError();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cached_ + block <= cap_) {
      cache_.emplace(block, p);
      cached_ += block;
      return;
    }
  }
  raw_free(p);
}

void BufferType::trim() {
  std::multimap<size_t, void*> drop;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    drop.swap(cache_);
    cached_ = 0;
  }
  for (auto& kv : drop) raw_free(kv.second);
}

size_t BufferType::cached_bytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

}  // namespace loom::cuda
