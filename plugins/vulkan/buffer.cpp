#include "buffer.h"

#include <cstring>

#include "common/glue.h"
#include "common/type_traits.h"
#include "device.h"

namespace loom::vulkan {

namespace {

using common::guarded;
using common::make_status;

std::string str(uint64_t v) { return std::to_string(v); }

// ------------------------------------------------------------ buffer table

void buffer_free(loom_buffer_t* b) {
  try {
    delete Buffer::from(b);
  } catch (...) {
    // nothing may cross the ABI
  }
}
void* buffer_base(loom_buffer_t* b) {
  return reinterpret_cast<void*>(static_cast<uintptr_t>(Buffer::from(b)->base()));
}
loom_status_t* buffer_set(loom_buffer_t* b, loom_tensor_t* t, const void* data, size_t offset,
                          size_t size) {
  return guarded("vulkan.set_tensor", [&] { return Buffer::from(b)->set(t, data, offset, size); });
}
loom_status_t* buffer_get(loom_buffer_t* b, const loom_tensor_t* t, void* data, size_t offset,
                          size_t size) {
  return guarded("vulkan.get_tensor", [&] { return Buffer::from(b)->get(t, data, offset, size); });
}
loom_status_t* buffer_clear(loom_buffer_t* b, uint8_t value) {
  return guarded("vulkan.clear", [&] { return Buffer::from(b)->clear(value); });
}
loom_status_t* buffer_copy(loom_buffer_t* b, const loom_tensor_t* src, loom_tensor_t* dst) {
  return guarded("vulkan.copy_tensor", [&] { return Buffer::from(b)->copy_from(src, dst); });
}

const loom_buffer_iface_t kBufferIface = {
    sizeof(loom_buffer_iface_t),
    buffer_free,
    buffer_base,
    buffer_set,
    buffer_get,
    buffer_clear,
    nullptr,  // init_tensor: nothing per tensor
    buffer_copy,
};

// ------------------------------------------------------------ type table

const char* type_name(loom_buffer_type_t* t) { return BufferType::from(t)->name().c_str(); }
loom_status_t* type_alloc(loom_buffer_type_t* t, size_t size, loom_buffer_t** out) {
  return guarded("vulkan.alloc", [&] { return BufferType::from(t)->alloc(size, out); });
}
// Serves vector loads and the allocator's packing; 256 covers every
// minStorageBufferOffsetAlignment.
size_t type_alignment(loom_buffer_type_t*) { return 256; }
size_t type_max_size(loom_buffer_type_t* t) {
  return static_cast<size_t>(BufferType::from(t)->device()->max_buffer_size());
}
bool type_is_host(loom_buffer_type_t* t) { return BufferType::from(t)->host(); }

const loom_buffer_type_iface_t kTypeIface = {
    sizeof(loom_buffer_type_iface_t),
    type_name,
    type_alloc,
    type_alignment,
    type_max_size,
    nullptr,  // alloc_size: dense size (alloc rounds the whole buffer up itself)
    type_is_host,
};

}  // namespace

// ------------------------------------------------------------ BufferType

BufferType::BufferType(Device* device, std::string name, uint32_t memory_type, bool host)
    : raw_{sizeof(loom_buffer_type_t), &kTypeIface, device->handle(), this},
      device_(device),
      name_(std::move(name)),
      memory_type_(memory_type),
      host_(host) {}

bool BufferType::is_ours(const loom_buffer_type_t* t) {
  return t != nullptr && t->iface == &kTypeIface;
}

loom_status_t* BufferType::alloc(size_t size, loom_buffer_t** out) {
  const std::string where = "[vulkan.alloc] " + name_ + ": ";
  if (out == nullptr)
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, where + "out_buffer is null");
  Device& d = *device_;
  if (size > d.max_buffer_size()) {
    return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED,
                       where + str(size) + " bytes exceed the largest buffer of " +
                           str(d.max_buffer_size()) + " bytes (maxMemoryAllocationSize " +
                           str(d.max_allocation()) + ", device heap " + str(d.heap_size()) + ")");
  }
  auto* b = new Buffer();
  b->device_ = &d;
  b->raw_ = {sizeof(loom_buffer_t), &kBufferIface, &raw_, size, b};
  // Whole words: shaders read 16-bit and byte data through uint loads.
  b->alloc_size_ = (static_cast<uint64_t>(size) + 15) & ~uint64_t{15};
  if (size == 0) {
    d.register_buffer(b);
    *out = &b->raw_;
    return nullptr;
  }
  if (loom_status_t* st = b->create_vk_buffer(false)) {
    delete b;
    return st;
  }
  const DeviceFuncs& vk = d.vk();
  VkMemoryRequirements req{};
  vk.vkGetBufferMemoryRequirements(d.device(), b->buffer_, &req);
  VkMemoryAllocateInfo mai{};
  mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = memory_type_;
  if ((req.memoryTypeBits & (1u << mai.memoryTypeIndex)) == 0) {
    delete b;
    return make_status(LOOM_STATUS_INTERNAL, where + "buffer of " + str(size) +
                                                 " bytes cannot live in memory type " +
                                                 str(mai.memoryTypeIndex));
  }
  VkResult r = vk.vkAllocateMemory(d.device(), &mai, nullptr, &b->memory_);
  if (r != VK_SUCCESS) {
    b->memory_ = VK_NULL_HANDLE;
    delete b;
    return vk_status(
        "alloc] " + name_ + ": " + str(size) + " bytes (heap " + str(d.heap_size()) + ")",
        "vkAllocateMemory", r);
  }
  r = vk.vkBindBufferMemory(d.device(), b->buffer_, b->memory_, 0);
  if (r != VK_SUCCESS) {
    delete b;
    return vk_status("alloc] " + name_, "vkBindBufferMemory", r);
  }
  if (host_) {
    void* p = nullptr;
    r = vk.vkMapMemory(d.device(), b->memory_, 0, VK_WHOLE_SIZE, 0, &p);
    if (r != VK_SUCCESS) {
      delete b;
      return vk_status("alloc] " + name_, "vkMapMemory", r);
    }
    b->mapped_ = static_cast<uint8_t*>(p);
    b->owns_mapping_ = true;
  }
  d.register_buffer(b);
  *out = &b->raw_;
  return nullptr;
}

loom_status_t* BufferType::import(void* ptr, size_t size, loom_buffer_t** out) {
  const std::string where = "[vulkan.buffer_from_host_ptr] " + name_ + ": " + str(size) + " bytes: ";
  Device& d = *device_;
  if (out == nullptr || ptr == nullptr || size == 0)
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, where + "null pointer or empty range");
  const uint64_t align = d.import_alignment();
  if (!host_ || align == 0) {
    return make_status(LOOM_STATUS_UNIMPLEMENTED,
                       where + "the device cannot import host memory (no VK_EXT_external_memory_host)");
  }
  const auto p = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(ptr));
  const uint64_t first = p & ~(align - 1);
  const uint64_t last = (p + size + align - 1) & ~(align - 1);
  if (last - first > d.max_allocation()) {
    return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED,
                       where + "more than the largest allocation (maxMemoryAllocationSize " +
                           str(d.max_allocation()) + ")");
  }
  const DeviceFuncs& vk = d.vk();
  auto* host = reinterpret_cast<void*>(static_cast<uintptr_t>(first));
  VkMemoryHostPointerPropertiesEXT hp{};
  hp.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT;
  VkResult r = vk.vkGetMemoryHostPointerPropertiesEXT(
      d.device(), VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, host, &hp);
  if (r != VK_SUCCESS)
    return vk_status("buffer_from_host_ptr] " + name_, "vkGetMemoryHostPointerPropertiesEXT", r);
  auto* b = new Buffer();
  b->device_ = &d;
  b->raw_ = {sizeof(loom_buffer_t), &kBufferIface, &raw_, size, b};
  b->alloc_size_ = last - first;
  b->lead_ = p - first;
  if (loom_status_t* st = b->create_vk_buffer(true)) {
    delete b;
    return st;
  }
  VkMemoryRequirements req{};
  vk.vkGetBufferMemoryRequirements(d.device(), b->buffer_, &req);
  const uint32_t bits = req.memoryTypeBits & hp.memoryTypeBits;
  if (bits == 0 || req.size > b->alloc_size_) {
    delete b;
    return make_status(LOOM_STATUS_UNIMPLEMENTED,
                       where + "no memory type can hold this host memory as a storage buffer");
  }
  uint32_t type = 0;
  while ((bits & (1u << type)) == 0) ++type;
  VkImportMemoryHostPointerInfoEXT imp{};
  imp.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT;
  imp.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  imp.pHostPointer = host;
  VkMemoryAllocateInfo mai{};
  mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  mai.pNext = &imp;
  mai.allocationSize = b->alloc_size_;
  mai.memoryTypeIndex = type;
  r = vk.vkAllocateMemory(d.device(), &mai, nullptr, &b->memory_);
  if (r != VK_SUCCESS) {
    b->memory_ = VK_NULL_HANDLE;
    delete b;
    return vk_status("buffer_from_host_ptr] " + name_ + ": " + str(size) + " bytes",
                     "vkAllocateMemory (import)", r);
  }
  r = vk.vkBindBufferMemory(d.device(), b->buffer_, b->memory_, 0);
  if (r != VK_SUCCESS) {
    delete b;
    return vk_status("buffer_from_host_ptr] " + name_, "vkBindBufferMemory", r);
  }
  b->mapped_ = static_cast<uint8_t*>(ptr);
  d.register_buffer(b);
  *out = &b->raw_;
  return nullptr;
}

// ------------------------------------------------------------ Buffer

Buffer::~Buffer() {
  const DeviceFuncs& vk = device_->vk();
  if (owns_mapping_) vk.vkUnmapMemory(device_->device(), memory_);
  if (buffer_) vk.vkDestroyBuffer(device_->device(), buffer_, nullptr);
  if (memory_) vk.vkFreeMemory(device_->device(), memory_, nullptr);
  if (base_ != 0) device_->unregister_buffer(this);
}

loom_status_t* Buffer::create_vk_buffer(bool external) {
  const DeviceFuncs& vk = device_->vk();
  VkExternalMemoryBufferCreateInfo ext{};
  ext.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO;
  ext.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
  VkBufferCreateInfo bci{};
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.pNext = external ? &ext : nullptr;
  bci.size = alloc_size_;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
              VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  const VkResult r = vk.vkCreateBuffer(device_->device(), &bci, nullptr, &buffer_);
  if (r != VK_SUCCESS) {
    buffer_ = VK_NULL_HANDLE;
    return vk_status("alloc] " + device_->name() + ": " + str(raw_.size) + " bytes",
                     "vkCreateBuffer", r);
  }
  return nullptr;
}

bool Buffer::is_ours(const loom_buffer_t* b) { return b != nullptr && b->iface == &kBufferIface; }

bool Buffer::offset_of(const void* data, uint64_t* out) const {
  const auto p = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(data));
  if (p < base_ || p - base_ > raw_.size) return false;
  *out = p - base_;
  return true;
}

loom_status_t* Buffer::range(const char* op, const loom_tensor_t* t, size_t offset, size_t size,
                             uint64_t* out) {
  uint64_t off = 0;
  const std::string where = std::string("[vulkan.") + op + "] " + device_->name() + ": ";
  if (t == nullptr) return make_status(LOOM_STATUS_INVALID_ARGUMENT, where + "tensor is null");
  if (!offset_of(t->data, &off)) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       where + "tensor '" + t->name + "' does not live in this buffer");
  }
  if (off + offset + size > raw_.size || off + offset + size < off) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       where + "tensor '" + t->name + "': bytes [" + str(off + offset) + ", " +
                           str(off + offset + size) + ") outside the " + str(raw_.size) +
                           "-byte buffer");
  }
  *out = off + offset;
  return nullptr;
}

loom_status_t* Buffer::span(const char* op, const loom_tensor_t* t, size_t offset, size_t size,
                            uint64_t* out) {
  uint64_t at = 0;
  if (loom_status_t* st = range(op, t, offset, size, &at)) return st;
  *out = lead_ + at;
  return nullptr;
}

loom_status_t* Buffer::set(const loom_tensor_t* t, const void* data, size_t offset, size_t size) {
  uint64_t at = 0;
  if (loom_status_t* st = range("set_tensor", t, offset, size, &at)) return st;
  if (size == 0) return nullptr;
  if (mapped_) {
    std::memcpy(mapped_ + at, data, size);
    return nullptr;
  }
  return device_->staged_write(buffer_, lead_ + at, data, size);
}

loom_status_t* Buffer::get(const loom_tensor_t* t, void* data, size_t offset, size_t size) {
  uint64_t at = 0;
  if (loom_status_t* st = range("get_tensor", t, offset, size, &at)) return st;
  if (size == 0) return nullptr;
  if (mapped_) {
    std::memcpy(data, mapped_ + at, size);
    return nullptr;
  }
  return device_->staged_read(buffer_, lead_ + at, data, size);
}

loom_status_t* Buffer::clear(uint8_t value) {
  if (raw_.size == 0) return nullptr;
  if (mapped_) {
    std::memset(mapped_, value, raw_.size);
    return nullptr;
  }
  const uint32_t word = 0x01010101u * value;
  VkBuffer buf = buffer_;
  const DeviceFuncs& vk = device_->vk();
  return device_->run_once(
      "clear", [&](VkCommandBuffer cb) { vk.vkCmdFillBuffer(cb, buf, 0, VK_WHOLE_SIZE, word); });
}

loom_status_t* Buffer::copy_from(const loom_tensor_t* src, const loom_tensor_t* dst) {
  const std::string where = "[vulkan.copy_tensor] " + device_->name() + ": ";
  if (src == nullptr || dst == nullptr)
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, where + "null tensor");
  const loom_buffer_t* sb = src->buffer;
  if (!is_ours(sb) || Buffer::from(sb)->device_ != device_ || src->type != dst->type ||
      !common::type_is_valid(src->type)) {
    return make_status(LOOM_STATUS_UNIMPLEMENTED, where + "source is not in this device's memory");
  }
  // Dense tensors only: the copy is one byte range.
  const size_t row = common::row_size(src->type, src->ne[0]);
  const size_t bytes = row * static_cast<size_t>(src->ne[1] * src->ne[2] * src->ne[3]);
  const size_t dbytes = common::row_size(dst->type, dst->ne[0]) *
                        static_cast<size_t>(dst->ne[1] * dst->ne[2] * dst->ne[3]);
  auto dense = [](const loom_tensor_t* t, size_t r) {
    return t->nb[1] == r && t->nb[2] == r * static_cast<size_t>(t->ne[1]) &&
           t->nb[3] == t->nb[2] * static_cast<size_t>(t->ne[2]);
  };
  if (bytes != dbytes || !dense(src, row) || !dense(dst, common::row_size(dst->type, dst->ne[0]))) {
    return make_status(LOOM_STATUS_UNIMPLEMENTED,
                       where + "only dense tensors of equal size are copied directly");
  }
  uint64_t soff = 0;
  uint64_t doff = 0;
  if (loom_status_t* st = Buffer::from(sb)->range("copy_tensor", src, 0, bytes, &soff)) return st;
  if (loom_status_t* st = range("copy_tensor", dst, 0, bytes, &doff)) return st;
  if (bytes == 0) return nullptr;
  VkBuffer from = Buffer::from(sb)->buffer_;
  VkBuffer to = buffer_;
  const DeviceFuncs& vk = device_->vk();
  return device_->run_once("copy_tensor", [&](VkCommandBuffer cb) {
    VkBufferCopy region{Buffer::from(sb)->lead_ + soff, lead_ + doff, bytes};
    vk.vkCmdCopyBuffer(cb, from, to, 1, &region);
  });
}

}  // namespace loom::vulkan
