#include "common/host_buffer.h"

#ifdef __linux__
#include <sys/mman.h>
#endif

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "common/glue.h"
#include "common/tensor_layout.h"
#include "common/type_traits.h"

namespace loom::common {
namespace {

// "[<category>.<op>] <message>" as a status.
loom_status_t* error(loom_status_code_t code, const HostBufferType& type, const char* op,
                     const std::string& message) {
  return make_status(code, "[" + type.config().category + "." + op + "] " + message);
}

// Buffers of at least kHugePageMin bytes start on a 2 MiB boundary, span
// whole 2 MiB pages, and ask the kernel for transparent huge pages (Linux
// MADV_HUGEPAGE; granted when THP is "always" or "madvise"). Kernels stream
// through KV caches and weights with strides of a row; with 4 KiB pages
// every few rows cost a TLB miss and a page walk from memory.
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugePageMin = size_t{1} << 20;
// clear(0) hands back the pages of mappings at least this large (below).
constexpr size_t kLazyZeroMin = size_t{1} << 30;

// On Linux such buffers are private anonymous mappings of their own (their
// pages read as zero until written, and clear(0) can hand them back);
// elsewhere, and if the mapping fails, the host's aligned_alloc serves them.
// nullptr when no mapping was made.
void* map_pages(size_t bytes) {
#ifdef __linux__
  const size_t span = bytes + kHugePage;  // room to start on a 2 MiB boundary
  void* p = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const auto lo = reinterpret_cast<uintptr_t>(p);
  const uintptr_t start = (lo + kHugePage - 1) / kHugePage * kHugePage;
  const size_t head = start - lo, tail = span - head - bytes;
  if (head > 0) ::munmap(p, head);
  if (tail > 0) ::munmap(reinterpret_cast<void*>(start + bytes), tail);
  return reinterpret_cast<void*>(start);
#else
  (void)bytes;
  return nullptr;
#endif
}

void unmap_pages(void* p, size_t bytes) {
#ifdef __linux__
  ::munmap(p, bytes);
#else
  (void)p;
  (void)bytes;
#endif
}

// Whether the pages of a map_pages mapping now read as zero (Linux: a
// private anonymous mapping's pages, once MADV_DONTNEED drops them, are
// refilled with zeros on the next touch).
bool zero_pages(void* p, size_t bytes) {
#if defined(__linux__) && defined(MADV_DONTNEED)
  return ::madvise(p, bytes, MADV_DONTNEED) == 0;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

void advise_huge_pages(void* mem, size_t bytes) {
#ifdef MADV_HUGEPAGE
  (void)::madvise(mem, bytes, MADV_HUGEPAGE);  // advice only: a refusal keeps 4 KiB pages
#else
  (void)mem;
  (void)bytes;
#endif
}

// One buffer: the ABI struct plus the memory behind it. Owned by whoever
// holds the handle; freed through iface->free.
class HostBuffer {
 public:
  // mapped: the length of base's own mapping (map_pages), 0 when the
  // memory came from elsewhere.
  HostBuffer(HostBufferType* type, const loom_buffer_iface_t* iface, void* base, size_t size, bool owned,
             size_t mapped = 0)
      : type_(type), base_(base), owned_(owned), mapped_(mapped) {
    handle_ = loom_buffer_t{sizeof(loom_buffer_t), iface, type->handle(), size, this};
  }
  static HostBuffer* from(loom_buffer_t* b) { return static_cast<HostBuffer*>(b->context); }

  loom_buffer_t* handle() { return &handle_; }
  void* base() const { return base_; }
  const std::string& category() const { return type_->config().category; }

  // Frees the memory when owned, then the HostBuffer itself.
  void destroy() {
    if (mapped_ > 0) {
      unmap_pages(base_, mapped_);
    } else if (owned_ && base_ != nullptr) {
      host_services()->aligned_free(base_);
    }
    delete this;
  }

  loom_status_t* set_tensor(loom_tensor_t* t, const void* data, size_t offset, size_t size) {
    if (loom_status_t* st = check_range("set_tensor", t, offset, size)) return st;
    if (size == 0) return nullptr;
    if (const HostLayout* layout = type_->config().layout) {
      if (loom_status_t* st = check_blocks("set_tensor", t, offset, size)) return st;
      layout->store(t, data, offset, size);
      return nullptr;
    }
    std::memcpy(static_cast<char*>(t->data) + offset, data, size);
    return nullptr;
  }

  loom_status_t* get_tensor(const loom_tensor_t* t, void* data, size_t offset, size_t size) {
    if (loom_status_t* st = check_range("get_tensor", t, offset, size)) return st;
    if (size == 0) return nullptr;
    if (const HostLayout* layout = type_->config().layout) {
      if (loom_status_t* st = check_blocks("get_tensor", t, offset, size)) return st;
      layout->load(t, data, offset, size);
      return nullptr;
    }
    std::memcpy(data, static_cast<const char*>(t->data) + offset, size);
    return nullptr;
  }

  loom_status_t* init_tensor(loom_tensor_t* t) {
    const HostLayout* layout = type_->config().layout;
    if (t == nullptr || layout == nullptr) return nullptr;
    if (const char* why = layout->unsupported(t)) {
      return error(LOOM_STATUS_INVALID_ARGUMENT, *type_, "init_tensor",
                   std::string("tensor '") + t->name + "' cannot be stored as " + type_->config().name + ": " + why);
    }
    return nullptr;
  }

  loom_status_t* clear(uint8_t value) {
    // Zeros in a mapping of its own past kLazyZeroMin bytes: its pages are
    // handed back and come back zero when next touched, so a KV cache for a
    // long context costs memory as its rows fill, not all at once (a
    // 262,144-token cache of a small model: 8.6 GB written and 18 s before
    // the first token with memset). Smaller buffers are written now: a
    // first touch of a huge page in the middle of a step can wait on the
    // kernel's compaction (a server's 604 MB cache: SET_ROWS 9 -> 125 us a
    // call in some runs).
    if (value == 0 && mapped_ >= kLazyZeroMin && zero_pages(base_, mapped_)) return nullptr;
    if (handle_.size > 0) std::memset(base_, value, handle_.size);
    return nullptr;
  }

  // Direct copy from another host-visible buffer when layouts match.
  loom_status_t* copy_tensor(const loom_tensor_t* src, loom_tensor_t* dst) {
    const bool host_src =
        src != nullptr && src->buffer != nullptr && is_host_buffer_type(src->buffer->buffer_type);
    bool same = host_src && dst != nullptr && src->type == dst->type && type_is_valid(src->type);
    for (int d = 0; same && d < LOOM_MAX_DIMS; ++d) same = src->ne[d] == dst->ne[d];
    if (!same || !tensor_is_dense(src) || !tensor_is_dense(dst) || src->data == nullptr) {
      return error(LOOM_STATUS_UNIMPLEMENTED, *type_, "copy_tensor",
                   "only dense copies between host buffers");
    }
    const size_t n = tensor_span(src);
    if (loom_status_t* st = check_range("copy_tensor", dst, 0, n)) return st;
    if (n > 0) std::memmove(dst->data, src->data, n);
    return nullptr;
  }

 private:
  // INVALID_ARGUMENT unless [tensor->data + offset, + size) lies in this buffer.
  loom_status_t* check_range(const char* op, const loom_tensor_t* t, size_t offset, size_t size) const {
    if (t == nullptr || (t->data == nullptr && size > 0)) {
      return error(LOOM_STATUS_INVALID_ARGUMENT, *type_, op, "tensor or its data is null");
    }
    const auto lo = reinterpret_cast<uintptr_t>(base_);
    const auto p = reinterpret_cast<uintptr_t>(t->data);
    const size_t len = handle_.size;
    const bool outside = p < lo || p - lo > len || offset > len - (p - lo) || size > len - (p - lo) - offset;
    if (size > 0 && outside) {
      return error(LOOM_STATUS_INVALID_ARGUMENT, *type_, op,
                   std::string("tensor '") + t->name + "': " + std::to_string(size) +
                       " bytes at offset " + std::to_string(offset) + " fall outside the buffer of " +
                       std::to_string(len) + " bytes");
    }
    return nullptr;
  }

  // A layout converts whole blocks within the tensor: offset and size must
  // be multiples of the block's bytes and end inside the tensor.
  loom_status_t* check_blocks(const char* op, const loom_tensor_t* t, size_t offset, size_t size) const {
    const size_t bs = type_traits(t->type).type_size;
    const size_t nbytes = row_size(t->type, t->ne[0]) * static_cast<size_t>(t->ne[1] * t->ne[2] * t->ne[3]);
    if (bs == 0 || offset % bs != 0 || size % bs != 0 || offset > nbytes || size > nbytes - offset) {
      return error(LOOM_STATUS_INVALID_ARGUMENT, *type_, op,
                   std::string("tensor '") + t->name + "': range [" + std::to_string(offset) + ", " +
                       std::to_string(offset + size) + ") is not whole blocks of " + std::to_string(bs) +
                       " bytes within its " + std::to_string(nbytes) + " bytes");
    }
    return nullptr;
  }

  HostBufferType* type_;  // not owned; outlives its buffers
  loom_buffer_t handle_;
  void* base_;
  bool owned_;
  size_t mapped_;
};

// ------------------------------------------------------- buffer ABI table
// Exceptions become statuses naming the plugin's category ("cpu.clear").

void buffer_free(loom_buffer_t* b) {
  if (b != nullptr) HostBuffer::from(b)->destroy();
}
void* buffer_base(loom_buffer_t* b) { return HostBuffer::from(b)->base(); }
loom_status_t* buffer_set_tensor(loom_buffer_t* b, loom_tensor_t* t, const void* data, size_t offset,
                                 size_t size) {
  HostBuffer* hb = HostBuffer::from(b);
  return guarded(hb->category().c_str(), "set_tensor", [&] { return hb->set_tensor(t, data, offset, size); });
}
loom_status_t* buffer_get_tensor(loom_buffer_t* b, const loom_tensor_t* t, void* data, size_t offset,
                                 size_t size) {
  HostBuffer* hb = HostBuffer::from(b);
  return guarded(hb->category().c_str(), "get_tensor", [&] { return hb->get_tensor(t, data, offset, size); });
}
loom_status_t* buffer_clear(loom_buffer_t* b, uint8_t value) {
  HostBuffer* hb = HostBuffer::from(b);
  return guarded(hb->category().c_str(), "clear", [&] { return hb->clear(value); });
}
loom_status_t* buffer_copy_tensor(loom_buffer_t* b, const loom_tensor_t* src, loom_tensor_t* dst) {
  HostBuffer* hb = HostBuffer::from(b);
  return guarded(hb->category().c_str(), "copy_tensor", [&] { return hb->copy_tensor(src, dst); });
}

loom_status_t* buffer_init_tensor(loom_buffer_t* b, loom_tensor_t* t) {
  HostBuffer* hb = HostBuffer::from(b);
  return guarded(hb->category().c_str(), "init_tensor", [&] { return hb->init_tensor(t); });
}

const loom_buffer_iface_t kBufferIface = {
    sizeof(loom_buffer_iface_t), buffer_free,  buffer_base,        buffer_set_tensor,
    buffer_get_tensor,           buffer_clear, /*init_tensor=*/nullptr, buffer_copy_tensor,
};

// For direct_copy == false: the host stages copies through host memory.
const loom_buffer_iface_t kBufferIfaceNoCopy = {
    sizeof(loom_buffer_iface_t), buffer_free,  buffer_base,        buffer_set_tensor,
    buffer_get_tensor,           buffer_clear, /*init_tensor=*/nullptr, /*copy_tensor=*/nullptr,
};

// For a layout of the plugin's own: init_tensor checks each tensor fits it.
const loom_buffer_iface_t kBufferIfaceLayout = {
    sizeof(loom_buffer_iface_t), buffer_free,  buffer_base,        buffer_set_tensor,
    buffer_get_tensor,           buffer_clear, buffer_init_tensor, /*copy_tensor=*/nullptr,
};

const loom_buffer_iface_t* buffer_iface(const HostBufferType& type) {
  if (type.config().layout != nullptr) return &kBufferIfaceLayout;
  return type.config().direct_copy ? &kBufferIface : &kBufferIfaceNoCopy;
}

// -------------------------------------------------- buffer type ABI table

const char* buft_name(loom_buffer_type_t* bt) { return HostBufferType::from(bt)->config().name.c_str(); }
loom_status_t* buft_alloc(loom_buffer_type_t* bt, size_t size, loom_buffer_t** out) {
  HostBufferType* type = HostBufferType::from(bt);
  return guarded(type->config().category.c_str(), "buffer_alloc", [&] { return type->alloc(size, out); });
}
size_t buft_alignment(loom_buffer_type_t* bt) { return HostBufferType::from(bt)->config().alignment; }
// Memory in a layout of the plugin's own must not be read as canonical bytes.
bool buft_is_host(loom_buffer_type_t* bt) { return HostBufferType::from(bt)->config().layout == nullptr; }

const loom_buffer_type_iface_t kBufferTypeIface = {
    sizeof(loom_buffer_type_iface_t), buft_name, buft_alloc, buft_alignment,
    /*max_size=*/nullptr, /*alloc_size=*/nullptr, buft_is_host,
};

}  // namespace

HostBufferType::HostBufferType(loom_device_t* device, HostBufferConfig config) : config_(std::move(config)) {
  handle_ = loom_buffer_type_t{sizeof(loom_buffer_type_t), &kBufferTypeIface, device, this};
}

loom_status_t* HostBufferType::alloc(size_t size, loom_buffer_t** out_buffer) {
  if (out_buffer == nullptr) {
    return error(LOOM_STATUS_INVALID_ARGUMENT, *this, "buffer_alloc", "out_buffer is null");
  }
  *out_buffer = nullptr;
  const loom_host_services_t* hs = host_services();
  size_t align = config_.alignment;
  size_t bytes = size == 0 ? align : size;  // size 0 still gets a block so base() is a valid address
  const bool huge = bytes >= kHugePageMin;
  if (huge) {
    align = std::max(align, kHugePage);
    bytes = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  }
  void* mem = huge && align == kHugePage ? map_pages(bytes) : nullptr;
  const size_t mapped = mem != nullptr ? bytes : 0;
  if (mem == nullptr) mem = hs->aligned_alloc(bytes, align);
  if (mem != nullptr && huge) advise_huge_pages(mem, bytes);
  if (mem == nullptr) {
    return error(LOOM_STATUS_RESOURCE_EXHAUSTED, *this, "buffer_alloc",
                 "cannot allocate " + std::to_string(size) + " bytes of host memory");
  }
  HostBuffer* b = new (std::nothrow) HostBuffer(this, buffer_iface(*this), mem, size, true, mapped);
  if (b == nullptr) {
    if (mapped > 0) {
      unmap_pages(mem, mapped);
    } else {
      hs->aligned_free(mem);
    }
    return error(LOOM_STATUS_RESOURCE_EXHAUSTED, *this, "buffer_alloc", "out of host memory");
  }
  *out_buffer = b->handle();
  return nullptr;
}

loom_status_t* HostBufferType::wrap(void* ptr, size_t size, loom_buffer_t** out_buffer) {
  if (out_buffer == nullptr) {
    return error(LOOM_STATUS_INVALID_ARGUMENT, *this, "buffer_from_host_ptr", "out_buffer is null");
  }
  *out_buffer = nullptr;
  if (ptr == nullptr && size > 0) {
    return error(LOOM_STATUS_INVALID_ARGUMENT, *this, "buffer_from_host_ptr",
                 "ptr is null with size " + std::to_string(size));
  }
  *out_buffer = (new HostBuffer(this, buffer_iface(*this), ptr, size, false))->handle();
  return nullptr;
}

bool is_host_buffer_type(const loom_buffer_type_t* bt) {
  if (bt == nullptr || bt->iface == nullptr || bt->iface->is_host == nullptr) return false;
  return bt->iface->is_host(const_cast<loom_buffer_type_t*>(bt));
}

}  // namespace loom::common
