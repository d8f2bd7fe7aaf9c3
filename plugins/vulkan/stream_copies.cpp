// Queued host <-> tensor copies of a Stream (set_tensor_async,
// get_tensor_async) through its staging ring. Uploads are recorded into
// one open command buffer and submitted with the stream's next graph (one
// vkQueueSubmit for the step), or on their own at the next flush point
// (a read, an event, synchronize, a full ring).
#include <algorithm>
#include <cstring>
#include <string>

#include "buffer.h"
#include "common/glue.h"
#include "device.h"
#include "stream.h"

namespace loom::vulkan {

namespace {

using common::make_status;

constexpr uint64_t kRingBytes = uint64_t{16} << 20;

}  // namespace

loom_status_t* Stream::locate(const char* op, const loom_tensor_t* t, size_t offset, size_t size,
                              Buffer** out, uint64_t* vk_offset) {
  const std::string where = std::string("[vulkan.") + op + "] " + device_->name() + ": ";
  if (t == nullptr) return make_status(LOOM_STATUS_INVALID_ARGUMENT, where + "tensor is null");
  if (!Buffer::is_ours(t->buffer) || Buffer::from(t->buffer)->device() != device_) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       where + "tensor '" + t->name + "' is not in " + device_->name() + " memory");
  }
  *out = Buffer::from(t->buffer);
  return (*out)->span(op, t, offset, size, vk_offset);
}

loom_status_t* Stream::ensure_ring() {
  if (ring_.buffer != VK_NULL_HANDLE) return nullptr;
  return device_->make_mapped(kRingBytes, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              "set_tensor_async] " + device_->name() + " staging ring", &ring_);
}

loom_status_t* Stream::retire_one() {
  Transfer t = transfers_.front();
  if (loom_status_t* st = device_->wait_value(t.value, "synchronize")) return st;
  transfers_.pop_front();
  if (t.host_dst) std::memcpy(t.host_dst, ring_.map + t.begin, t.end - t.begin);
  if (t.cb != VK_NULL_HANDLE) free_copy_cbs_.push_back(t.cb);
  return nullptr;
}

loom_status_t* Stream::retire_all() {
  if (loom_status_t* st = flush_uploads()) return st;
  while (!transfers_.empty()) {
    if (loom_status_t* st = retire_one()) return st;
  }
  return nullptr;
}

loom_status_t* Stream::reserve(uint64_t n, uint64_t* at) {
  n = (n + 15) & ~uint64_t{15};
  for (;;) {
    const uint64_t cand = ring_head_ + n <= kRingBytes ? ring_head_ : 0;
    bool busy = false, open_busy = false;
    for (const Transfer& t : transfers_) busy = busy || (cand < t.end && t.begin < cand + n);
    for (const Transfer& t : open_) open_busy = open_busy || (cand < t.end && t.begin < cand + n);
    if (!busy && !open_busy) {
      ring_head_ = cand + n;
      *at = cand;
      return nullptr;
    }
    // Bytes of uploads not yet submitted: submit them, then wait as usual.
    if (open_busy) {
      if (loom_status_t* st = flush_uploads()) return st;
      continue;
    }
    if (loom_status_t* st = retire_one()) return st;
  }
}

// A command buffer for copies: a recycled one or a new one.
loom_status_t* Stream::take_copy_cb(const std::string& w, VkCommandBuffer* out) {
  if (!free_copy_cbs_.empty()) {
    *out = free_copy_cbs_.back();
    free_copy_cbs_.pop_back();
    return nullptr;
  }
  VkCommandBufferAllocateInfo cai{};
  cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cai.commandPool = pool_;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  VkResult r = device_->vk().vkAllocateCommandBuffers(device_->device(), &cai, out);
  if (r != VK_SUCCESS) return vk_status(w, "vkAllocateCommandBuffers", r);
  return nullptr;
}

loom_status_t* Stream::queue_upload(uint64_t begin, uint64_t end, const std::function<void(VkCommandBuffer)>& fill) {
  const DeviceFuncs& vk = device_->vk();
  const std::string w = "set_tensor_async] " + device_->name();
  if (upload_cb_ == VK_NULL_HANDLE) {
    VkCommandBuffer cb = VK_NULL_HANDLE;
    if (loom_status_t* st = take_copy_cb(w, &cb)) return st;
    VkResult r = vk.vkResetCommandBuffer(cb, 0);
    VkCommandBufferBeginInfo bi{};
    bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (r == VK_SUCCESS) r = vk.vkBeginCommandBuffer(cb, &bi);
    if (r != VK_SUCCESS) {
      free_copy_cbs_.push_back(cb);
      return vk_status(w, "vkBeginCommandBuffer", r);
    }
    // After every earlier kernel and copy of the queue (reads and writes).
    barrier(vk, cb,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
            VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    upload_cb_ = cb;
  }
  fill(upload_cb_);
  open_.push_back(Transfer{0, begin, end, open_.empty() ? upload_cb_ : VK_NULL_HANDLE, nullptr});
  return nullptr;
}

loom_status_t* Stream::close_uploads(VkCommandBuffer* out) {
  *out = VK_NULL_HANDLE;
  if (upload_cb_ == VK_NULL_HANDLE) return nullptr;
  const DeviceFuncs& vk = device_->vk();
  VkCommandBuffer cb = upload_cb_;
  upload_cb_ = VK_NULL_HANDLE;
  barrier(vk, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
          VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
              VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
  VkResult r = vk.vkEndCommandBuffer(cb);
  if (r != VK_SUCCESS) {
    // The batch is lost: its ring bytes are free again.
    open_.clear();
    free_copy_cbs_.push_back(cb);
    return vk_status("set_tensor_async] " + device_->name(), "vkEndCommandBuffer", r);
  }
  *out = cb;
  return nullptr;
}

void Stream::landed(uint64_t value) {
  for (Transfer& t : open_) {
    t.value = value;
    transfers_.push_back(t);
  }
  open_.clear();
  last_value_ = value;
}

loom_status_t* Stream::flush_uploads() {
  VkCommandBuffer cb = VK_NULL_HANDLE;
  if (loom_status_t* st = close_uploads(&cb)) return st;
  if (cb == VK_NULL_HANDLE) return nullptr;
  uint64_t value = 0;
  VkResult r = device_->submit(cb, VK_NULL_HANDLE, &value);
  if (r != VK_SUCCESS) {
    open_.clear();
    free_copy_cbs_.push_back(cb);
    return vk_status("set_tensor_async] " + device_->name(), "vkQueueSubmit", r);
  }
  landed(value);
  return nullptr;
}

loom_status_t* Stream::submit_copy(const char* op, uint64_t begin, uint64_t end,
                                   uint8_t* host_dst,
                                   const std::function<void(VkCommandBuffer)>& fill) {
  const DeviceFuncs& vk = device_->vk();
  const std::string w = std::string(op) + "] " + device_->name();
  // Earlier uploads first (queue order is the order of the calls).
  if (loom_status_t* st = flush_uploads()) return st;
  VkCommandBuffer cb = VK_NULL_HANDLE;
  if (loom_status_t* st = take_copy_cb(w, &cb)) return st;
  VkResult r = vk.vkResetCommandBuffer(cb, 0);
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (r == VK_SUCCESS) r = vk.vkBeginCommandBuffer(cb, &bi);
  if (r != VK_SUCCESS) {
    free_copy_cbs_.push_back(cb);
    return vk_status(w, "vkBeginCommandBuffer", r);
  }
  // After every earlier kernel and copy of the queue (reads and writes).
  barrier(vk, cb,
          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
              VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
          VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
  fill(cb);
  barrier(vk, cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
          VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  r = vk.vkEndCommandBuffer(cb);
  if (r != VK_SUCCESS) {
    free_copy_cbs_.push_back(cb);
    return vk_status(w, "vkEndCommandBuffer", r);
  }
  uint64_t value = 0;
  r = device_->submit(cb, VK_NULL_HANDLE, &value);
  if (r != VK_SUCCESS) {
    free_copy_cbs_.push_back(cb);
    return vk_status(w, "vkQueueSubmit", r);
  }
  last_value_ = value;
  transfers_.push_back(Transfer{value, begin, end, cb, host_dst});
  return nullptr;
}

loom_status_t* Stream::set_tensor_async(loom_tensor_t* t, const void* data, size_t offset,
                                        size_t size) {
  Buffer* b = nullptr;
  uint64_t at = 0;
  if (loom_status_t* st = locate("set_tensor_async", t, offset, size, &b, &at)) return st;
  if (size == 0) return nullptr;
  if (data == nullptr) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       "[vulkan.set_tensor_async] " + device_->name() + ": data is null");
  }
  if (!device_->async()) {
    // No timeline: every submission waits, so this one may too.
    defer(finish());
    return b->set(t, data, offset, size);
  }
  if (loom_status_t* st = ensure_ring()) return st;
  const auto* in = static_cast<const uint8_t*>(data);
  const VkBuffer dst = b->vk_buffer();
  const DeviceFuncs& vk = device_->vk();
  for (size_t done = 0; done < size;) {
    const uint64_t n = std::min<uint64_t>(size - done, kRingBytes);
    uint64_t slot = 0;
    if (loom_status_t* st = reserve(n, &slot)) return st;
    std::memcpy(ring_.map + slot, in + done, n);
    const VkBufferCopy region{slot, at + done, n};
    VkBuffer ring = ring_.buffer;
    if (loom_status_t* st = queue_upload(slot, slot + n, [&](VkCommandBuffer cb) {
          vk.vkCmdCopyBuffer(cb, ring, dst, 1, &region);
        })) {
      return st;
    }
    done += n;
  }
  return nullptr;
}

loom_status_t* Stream::get_tensor_async(const loom_tensor_t* t, void* data, size_t offset,
                                        size_t size) {
  Buffer* b = nullptr;
  uint64_t at = 0;
  if (loom_status_t* st = locate("get_tensor_async", t, offset, size, &b, &at)) return st;
  if (size == 0) return nullptr;
  if (data == nullptr) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       "[vulkan.get_tensor_async] " + device_->name() + ": data is null");
  }
  if (!device_->async()) {
    defer(finish());
    return b->get(t, data, offset, size);
  }
  if (loom_status_t* st = ensure_ring()) return st;
  auto* out = static_cast<uint8_t*>(data);
  const VkBuffer src = b->vk_buffer();
  const DeviceFuncs& vk = device_->vk();
  for (size_t done = 0; done < size;) {
    const uint64_t n = std::min<uint64_t>(size - done, kRingBytes);
    uint64_t slot = 0;
    if (loom_status_t* st = reserve(n, &slot)) return st;
    const VkBufferCopy region{at + done, slot, n};
    VkBuffer ring = ring_.buffer;
    if (loom_status_t* st = submit_copy("get_tensor_async", slot, slot + n, out + done,
                                        [&](VkCommandBuffer cb) {
                                          vk.vkCmdCopyBuffer(cb, src, ring, 1, &region);
                                        })) {
      return st;
    }
    done += n;
  }
  return nullptr;
}

}  // namespace loom::vulkan
