#include "stream.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>

#include "buffer.h"
#include "common/glue.h"
#include "common/op_info.h"
#include "device.h"
#include "event.h"

namespace loom::vulkan {

namespace {

using common::describe_node;
using common::guarded;
using common::make_status;

constexpr uint32_t kMaxSets = 1024;
constexpr size_t kMaxRecorded = 8;
// Scratch memory of one graph (int8 GEMV's B, split attention's rows) is
// reused past this many bytes (take_scratch); LOOM_VULKAN_SCRATCH_CAP
// (bytes, for tests) sets a smaller cap.
constexpr uint64_t kScratchCap = uint64_t{32} << 20;
// Error words (shaders/common.glsl report_bad_value): node, value (2),
// limit, kind, position; kinds BAD_ROW_INDEX = 0, BAD_VISIBLE = 1,
// BAD_RANGE = 2, BAD_EXPERT = 3 (shaders/mul_mat_id.glsl).
constexpr size_t kErrorWords = 6;
constexpr uint32_t kBadVisible = 1;
constexpr uint32_t kBadRange = 2;
constexpr uint32_t kBadExpert = 3;

void stream_destroy(loom_stream_t* s) {
  try {
    delete Stream::from(s);
  } catch (...) {
  }
}
loom_status_t* stream_compute(loom_stream_t* s, const loom_graph_t* g) {
  return guarded("vulkan.compute", [&] { return Stream::from(s)->compute(g); });
}
loom_status_t* stream_synchronize(loom_stream_t* s) {
  return guarded("vulkan.synchronize", [&] { return Stream::from(s)->synchronize(); });
}
loom_status_t* stream_record_event(loom_stream_t* s, loom_event_t* e) {
  return guarded("vulkan.record_event", [&] { return Stream::from(s)->record_event(e); });
}
loom_status_t* stream_wait_event(loom_stream_t* s, loom_event_t* e) {
  return guarded("vulkan.wait_event", [&] { return Stream::from(s)->wait_event(e); });
}
loom_status_t* stream_set_async(loom_stream_t* s, loom_tensor_t* t, const void* data,
                                size_t offset, size_t size) {
  return guarded("vulkan.set_tensor_async",
                 [&] { return Stream::from(s)->set_tensor_async(t, data, offset, size); });
}
loom_status_t* stream_get_async(loom_stream_t* s, const loom_tensor_t* t, void* data,
                                size_t offset, size_t size) {
  return guarded("vulkan.get_tensor_async",
                 [&] { return Stream::from(s)->get_tensor_async(t, data, offset, size); });
}

const loom_stream_iface_t kStreamIface = {
    sizeof(loom_stream_iface_t),
    stream_destroy,
    stream_compute,
    stream_synchronize,
    stream_set_async,  // through the stream's staging ring
    stream_get_async,
    stream_record_event,
    stream_wait_event,
};

bool is_no_op(int32_t op) { return op == LOOM_OP_NONE || common::is_view_op(op); }

int64_t element_count(const loom_tensor_t* t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

struct Range {
  VkBuffer buffer;
  uint64_t begin, end;
  bool overlaps(const Range& o) const {
    return buffer == o.buffer && begin < o.end && o.begin < end;
  }
};

}  // namespace

void barrier(const DeviceFuncs& vk, VkCommandBuffer cb, VkPipelineStageFlags src,
             VkAccessFlags src_access, VkPipelineStageFlags dst, VkAccessFlags dst_access) {
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = src_access;
  mb.dstAccessMask = dst_access;
  vk.vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

Stream::Stream(Device* device)
    : raw_{sizeof(loom_stream_t), &kStreamIface, device->handle(), this}, device_(device) {}

loom_status_t* Stream::create(Device* device, loom_stream_t** out) {
  auto* s = new Stream(device);
  if (loom_status_t* st = s->init()) {
    delete s;
    return st;
  }
  *out = s->handle();
  return nullptr;
}

loom_status_t* Stream::init() {
  const DeviceFuncs& vk = device_->vk();
  VkDevice dev = device_->device();
  const std::string w = "stream_create] " + device_->name();
  VkCommandPoolCreateInfo pci{};
  pci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = device_->queue_family();
  VkResult r = vk.vkCreateCommandPool(dev, &pci, nullptr, &pool_);
  if (r != VK_SUCCESS) return vk_status(w, "vkCreateCommandPool", r);
  VkCommandBufferAllocateInfo cai{};
  cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cai.commandPool = pool_;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  r = vk.vkAllocateCommandBuffers(dev, &cai, &scratch_cb_);
  if (r != VK_SUCCESS) return vk_status(w, "vkAllocateCommandBuffers", r);
  VkFenceCreateInfo fci{};
  fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  r = vk.vkCreateFence(dev, &fci, nullptr, &fence_);
  if (r != VK_SUCCESS) return vk_status(w, "vkCreateFence", r);
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kMaxSets * kBindings};
  VkDescriptorPoolCreateInfo dci{};
  dci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  dci.maxSets = kMaxSets;
  dci.poolSizeCount = 1;
  dci.pPoolSizes = &size;
  r = vk.vkCreateDescriptorPool(dev, &dci, nullptr, &desc_pool_);
  if (r != VK_SUCCESS) return vk_status(w, "vkCreateDescriptorPool", r);

  if (loom_status_t* st = device_->make_mapped(256, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT, w + " error words", &err_))
    return st;
  err_map_ = reinterpret_cast<uint32_t*>(err_.map);
  generation_ = device_->buffer_generation();
  scratch_cap_ = std::min<uint64_t>(device_->caps().max_range, kScratchCap);
  if (const char* env = std::getenv("LOOM_VULKAN_SCRATCH_CAP")) {
    const uint64_t v = std::strtoull(env, nullptr, 10);
    if (v >= 256) scratch_cap_ = std::min(scratch_cap_, v);
  }
  return nullptr;
}

Stream::~Stream() {
  const DeviceFuncs& vk = device_->vk();
  VkDevice dev = device_->device();
  // Pending work must finish before its command buffers and the ring go
  // (uploads not yet submitted are submitted: the caller queued them).
  if (loom_status_t* st = flush_uploads()) common::host_services()->status_free(st);
  if (pending_) vk.vkWaitForFences(dev, 1, &fence_, VK_TRUE, kWaitNs);
  if (!transfers_.empty()) {
    if (loom_status_t* st = device_->wait_value(transfers_.back().value, "stream_destroy"))
      common::host_services()->status_free(st);
  }
  device_->free_mapped(&ring_);
  device_->free_mapped(&scratch_);
  if (deferred_) common::host_services()->status_free(deferred_);
  device_->free_mapped(&err_);
  if (desc_pool_) vk.vkDestroyDescriptorPool(dev, desc_pool_, nullptr);
  if (fence_) vk.vkDestroyFence(dev, fence_, nullptr);
  if (pool_) vk.vkDestroyCommandPool(dev, pool_, nullptr);  // frees every command buffer
}

loom_status_t* Stream::drop_caches() {
  const DeviceFuncs& vk = device_->vk();
  for (Recorded& r : recorded_) vk.vkFreeCommandBuffers(device_->device(), pool_, 1, &r.cb);
  recorded_.clear();
  sets_.clear();
  desc_used_ = 0;
  VkResult r = vk.vkResetDescriptorPool(device_->device(), desc_pool_, 0);
  if (r != VK_SUCCESS) return vk_status("compute] " + device_->name(), "vkResetDescriptorPool", r);
  return nullptr;
}

std::string Stream::resolve(const loom_tensor_t* t, Location* out) {
  // The tensor's own buffer when it is ours, else whichever buffer of the
  // device holds the address.
  Buffer* b = nullptr;
  uint64_t off = 0;
  if (Buffer::is_ours(t->buffer) && Buffer::from(t->buffer)->device() == device_ &&
      Buffer::from(t->buffer)->offset_of(t->data, &off)) {
    b = Buffer::from(t->buffer);
  } else {
    b = device_->find_buffer(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(t->data)));
    if (b != nullptr && !b->offset_of(t->data, &off)) b = nullptr;
  }
  if (b == nullptr || b->vk_buffer() == VK_NULL_HANDLE) {
    return "tensor '" + std::string(t->name) + "' is not in " + device_->name() + " memory";
  }
  out->buffer = b->vk_buffer();
  out->offset = b->lead() + off;
  out->buffer_size = b->alloc_size();
  return "";
}

std::string Stream::take_scratch(uint64_t bytes, Location* out) {
  // Handed out in order, wrapping to 0 past the cap: a node that reuses an
  // earlier node's bytes is ordered after its readers by record()'s
  // hazard barriers, so a graph of any length fits a bounded buffer.
  const uint64_t cap = scratch_cap_;
  if (bytes > cap)
    return "scratch data of " + std::to_string(bytes) + " bytes past the scratch buffer's " + std::to_string(cap);
  uint64_t at = (scratch_used_ + 255) / 256 * 256;
  if (at + bytes > cap) at = 0;
  scratch_used_ = at + bytes;
  scratch_high_ = std::max(scratch_high_, scratch_used_);
  // Past the buffer's end the location is a placeholder: plan() grows the
  // buffer and plans again.
  const bool inside = scratch_used_ <= scratch_size_;
  out->buffer = scratch_.buffer != VK_NULL_HANDLE ? scratch_.buffer : err_.buffer;
  out->offset = inside ? at : 0;
  out->buffer_size = inside ? scratch_size_ : bytes;
  return "";
}

loom_status_t* Stream::grow_scratch(uint64_t need) {
  if (loom_status_t* st = drop_caches()) return st;
  device_->free_mapped(&scratch_);
  scratch_size_ = 0;
  const uint64_t cap = scratch_cap_;
  const uint64_t size = std::max(need, std::min(cap, std::max<uint64_t>(need * 2, uint64_t{1} << 20)));
  if (loom_status_t* st = device_->make_local(size, VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                              "compute] " + device_->name() + " scratch", &scratch_))
    return st;
  scratch_size_ = size;
  return nullptr;
}

Stream::SetKey Stream::set_key(const Dispatch& d) {
  SetKey k{};
  for (int i = 0; i < kSlots; ++i) {
    k[3 * i] = reinterpret_cast<uint64_t>(d.buffers[i]);
    k[3 * i + 1] = d.bind_offset[i];
    k[3 * i + 2] = d.bind_range[i];
  }
  return k;
}

loom_status_t* Stream::plan(const loom_graph_t* g, Plan* out) {
  const std::string dev = device_->name();
  Resolver resolver = [this](const loom_tensor_t* t, Location* loc) { return resolve(t, loc); };
  scratch_used_ = 0;
  scratch_high_ = 0;
  ScratchFn scratch = [this](uint64_t bytes, Location* loc) { return take_scratch(bytes, loc); };
  for (int32_t i = 0; i < g->n_nodes; ++i) {
    const loom_tensor_t* node = g->nodes[i];
    if (node == nullptr)
      return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[vulkan.compute] " + dev + ": null node");
    if (is_no_op(node->op)) continue;
    if (const char* why = unsupported_reason(device_->caps(), node)) {
      return make_status(
          LOOM_STATUS_UNIMPLEMENTED,
          "[vulkan.compute] " + dev + ": unsupported node " + describe_node(node) + ": " + why);
    }
    if (element_count(node) == 0) continue;
    if (loom_status_t* st = common::check_node_memory("vulkan.compute", node, LOOM_MAX_SRC))
      return st;
    std::vector<Dispatch> ds;
    const std::string err =
        plan_node(device_->caps(), node, static_cast<uint32_t>(i), resolver, scratch, &ds);
    if (!err.empty()) {
      return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                         "[vulkan.compute] " + dev + ": node " + describe_node(node) + ": " + err);
    }
    for (const Dispatch& d : ds) {
      VkPipeline p = VK_NULL_HANDLE;
      if (loom_status_t* st = device_->pipelines().get(d.shader, d.spec, d.n_spec, &p)) return st;
      out->dispatches.push_back(d);
      out->pipelines.push_back(p);
      out->node_index.push_back(i);
    }
  }
  if (scratch_high_ > scratch_size_) {
    // Grown: plan again with every node's bytes in the new buffer (the
    // previous graph has finished; cached sets named the old one).
    if (loom_status_t* st = grow_scratch(scratch_high_)) return st;
    *out = Plan{};
    return this->plan(g, out);
  }
  // A process may end without a plugin shutdown: pipelines built for this
  // graph reach the cache file now (a no-op when none was built).
  device_->save_pipeline_cache();
  return nullptr;
}

loom_status_t* Stream::descriptor_set(const Dispatch& d, VkDescriptorSet* out) {
  const SetKey key = set_key(d);
  auto it = sets_.find(key);
  if (it != sets_.end()) {
    *out = it->second;
    return nullptr;
  }
  const DeviceFuncs& vk = device_->vk();
  if (desc_used_ >= kMaxSets)
    return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED, "descriptor pool full");
  VkDescriptorSetLayout layout = device_->pipelines().set_layout();
  VkDescriptorSetAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  ai.descriptorPool = desc_pool_;
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkResult r = vk.vkAllocateDescriptorSets(device_->device(), &ai, &set);
  if (r != VK_SUCCESS)
    return vk_status("compute] " + device_->name(), "vkAllocateDescriptorSets", r);
  ++desc_used_;
  VkDescriptorBufferInfo infos[kBindings] = {};
  VkWriteDescriptorSet writes[kBindings] = {};
  for (int k = 0; k < kSlots; ++k)
    infos[slot_binding(k)] = {d.buffers[k], d.bind_offset[k], d.bind_range[k]};
  infos[kErrorBinding] = {err_.buffer, 0, VK_WHOLE_SIZE};
  for (uint32_t i = 0; i < kBindings; ++i) {
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  vk.vkUpdateDescriptorSets(device_->device(), kBindings, writes, 0, nullptr);
  sets_[key] = set;
  *out = set;
  return nullptr;
}

loom_status_t* Stream::record(const Plan& plan, VkCommandBuffer cb) {
  const DeviceFuncs& vk = device_->vk();
  const std::string w = "compute] " + device_->name();
  VkResult r = vk.vkResetCommandBuffer(cb, 0);
  if (r != VK_SUCCESS) return vk_status(w, "vkResetCommandBuffer", r);
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  r = vk.vkBeginCommandBuffer(cb, &bi);
  if (r != VK_SUCCESS) return vk_status(w, "vkBeginCommandBuffer", r);
  // Earlier copies and kernels (other submissions) before this graph's reads.
  barrier(vk, cb,
          VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
              VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  std::vector<Range> written;
  std::vector<Range> read;
  VkPipeline bound = VK_NULL_HANDLE;
  for (size_t i = 0; i < plan.dispatches.size(); ++i) {
    const Dispatch& d = plan.dispatches[i];
    const Range dst{d.buffers[0], d.begin[0], d.end[0]};
    bool hazard = false;
    for (const Range& x : written) hazard = hazard || x.overlaps(dst);
    for (const Range& x : read) hazard = hazard || x.overlaps(dst);
    for (int k = 1; k < kSlots && !hazard; ++k) {
      const Range src{d.buffers[k], d.begin[k], d.end[k]};
      for (const Range& x : written) hazard = hazard || x.overlaps(src);
    }
    if (hazard) {
      barrier(vk, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT,
              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
      written.clear();
      read.clear();
    }
    written.push_back(dst);
    for (int k = 1; k < kSlots; ++k) read.push_back({d.buffers[k], d.begin[k], d.end[k]});
    VkDescriptorSet set = VK_NULL_HANDLE;
    if (loom_status_t* st = descriptor_set(d, &set)) return st;
    if (plan.pipelines[i] != bound) {
      vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, plan.pipelines[i]);
      bound = plan.pipelines[i];
    }
    vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, device_->pipelines().layout(), 0,
                               1, &set, 0, nullptr);
    vk.vkCmdPushConstants(cb, device_->pipelines().layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                          sizeof(PushConstants), &d.pc);
    vk.vkCmdDispatch(cb, d.groups[0], d.groups[1], d.groups[2]);
  }
  // Results visible to host reads and copies after the fence.
  barrier(vk, cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
          VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
  r = vk.vkEndCommandBuffer(cb);
  if (r != VK_SUCCESS) return vk_status(w, "vkEndCommandBuffer", r);
  return nullptr;
}

loom_status_t* Stream::submit(VkCommandBuffer cb, const loom_graph_t* g, const Plan& plan) {
  const DeviceFuncs& vk = device_->vk();
  const std::string w = "compute] " + device_->name();
  std::memset(err_map_, 0, kErrorWords * 4);
  // Names of the nodes that can report a bad index or length, for the
  // message (the graph lives only for this call).
  pending_nodes_.clear();
  for (int32_t i : plan.node_index) {
    const int32_t op = g->nodes[i]->op;
    if (op == LOOM_OP_GET_ROWS || op == LOOM_OP_SET_ROWS || op == LOOM_OP_ATTENTION)
      pending_nodes_.emplace_back(i, describe_node(g->nodes[i]));
  }
  VkResult r = vk.vkResetFences(device_->device(), 1, &fence_);
  if (r != VK_SUCCESS) return vk_status(w, "vkResetFences", r);
  // Uploads queued since the last submission ride in front of the graph:
  // one vkQueueSubmit for the step.
  VkCommandBuffer cbs[2] = {VK_NULL_HANDLE, cb};
  if (loom_status_t* st = close_uploads(&cbs[0])) return st;
  const bool uploads = cbs[0] != VK_NULL_HANDLE;
  r = uploads ? device_->submit(cbs, 2, fence_, &last_value_) : device_->submit(cb, fence_, &last_value_);
  if (r != VK_SUCCESS) {
    if (uploads) {
      open_.clear();
      free_copy_cbs_.push_back(cbs[0]);
    }
    return vk_status(w, "vkQueueSubmit", r);
  }
  if (uploads) {
    uploads_batched_ += open_.size();
    landed(last_value_);
  }
  pending_ = true;
  return nullptr;
}

loom_status_t* Stream::finish() {
  if (!pending_) return nullptr;
  const std::string w = "compute] " + device_->name();
  VkResult r = device_->vk().vkWaitForFences(device_->device(), 1, &fence_, VK_TRUE, kWaitNs);
  if (r != VK_SUCCESS) return vk_status(w, "vkWaitForFences", r);
  pending_ = false;
  if (err_map_[0] == 0) return nullptr;
  const int32_t idx = static_cast<int32_t>(err_map_[0] - 1);
  const int64_t value =
      static_cast<int64_t>((static_cast<uint64_t>(err_map_[2]) << 32) | err_map_[1]);
  const std::string limit = std::to_string(err_map_[3]);
  std::string node = "#" + std::to_string(idx);
  for (const auto& kv : pending_nodes_) {
    if (kv.first == idx) node = kv.second;
  }
  // The kinds of shaders/common.glsl report_bad_value.
  std::string what;
  if (err_map_[4] == kBadVisible) {
    what = "visible[" + std::to_string(err_map_[5]) + "] = " + std::to_string(value) + " outside [0, " + limit +
           "] (n_kv " + limit + ")";
  } else if (err_map_[4] == kBadRange) {
    what = "rows [" + std::to_string(static_cast<int32_t>(err_map_[1])) + ", " +
           std::to_string(static_cast<int32_t>(err_map_[2])) + ") of query " + std::to_string(err_map_[5]) +
           " outside [0, " + limit + "] (n_kv " + limit + ")";
  } else if (err_map_[4] == kBadExpert) {
    // Value = the id, e[2] its slot, e[5] the token.
    what = "id " + std::to_string(static_cast<int32_t>(err_map_[1])) + " of token " + std::to_string(err_map_[5]) +
           ", slot " + std::to_string(err_map_[2]) + " outside [0, " + limit + ")";
  } else {
    what = "row index " + std::to_string(value) + " out of range [0, " + limit + ")";
  }
  return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                     "[vulkan.compute] " + device_->name() + ": node " + node + ": " + what);
}

void Stream::defer(loom_status_t* st) {
  if (st == nullptr) return;
  if (deferred_ == nullptr) {
    deferred_ = st;  // the first error wins
  } else {
    common::host_services()->status_free(st);
  }
}

loom_status_t* Stream::synchronize() {
  defer(finish());
  defer(retire_all());
  loom_status_t* st = deferred_;
  deferred_ = nullptr;
  return st;
}

loom_status_t* Stream::record_event(loom_event_t* e) {
  if (!Event::is_ours(e) || Event::from(e)->device() != device_) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       "[vulkan.record_event] " + device_->name() + ": event of another device");
  }
  // Uploads not yet submitted go now, so the event's value covers them.
  defer(flush_uploads());
  // Queued reads land in host memory only when retired: finish them first,
  // so whoever waits for the event finds the data.
  bool reads = false;
  for (const Transfer& t : transfers_) reads = reads || t.host_dst != nullptr;
  if (reads) defer(retire_all());
  // Done when the timeline reaches this stream's last submission (0: now).
  Event::from(e)->set_value(pending_ || !transfers_.empty() ? last_value_ : 0);
  return nullptr;
}

loom_status_t* Stream::wait_event(loom_event_t* e) {
  if (!Event::is_ours(e)) {
    return make_status(LOOM_STATUS_INVALID_ARGUMENT,
                       "[vulkan.wait_event] " + device_->name() + ": event of another plugin");
  }
  // Same device: one queue, and every command buffer starts with a barrier
  // after all earlier work of the queue, so later work already waits.
  if (Event::from(e)->device() == device_) return nullptr;
  return Event::from(e)->synchronize();
}

loom_status_t* Stream::submit_and_finish(VkCommandBuffer cb, const loom_graph_t* g,
                                         const Plan& plan) {
  if (loom_status_t* st = submit(cb, g, plan)) return st;
  // Without a timeline semaphore (no events) compute is synchronous.
  return device_->async() ? nullptr : finish();
}

loom_status_t* Stream::compute(const loom_graph_t* g) {
  const loom_host_services_t* hs = common::host_services();
  if (hs->log_enabled == nullptr || !hs->log_enabled(LOOM_LOG_LEVEL_DEBUG, "vulkan"))
    return compute_graph(g);
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t reused = reused_;
  loom_status_t* st = compute_graph(g);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  common::plugin_log(LOOM_LOG_LEVEL_DEBUG, "vulkan",
                     device_->name() + ": graph of " + std::to_string(g ? g->n_nodes : 0) +
                         " nodes in " + std::to_string(ms) + " ms (" +
                         (reused_ != reused ? "re-submitted" : "recorded") + ")");
  return st;
}

loom_status_t* Stream::compute_graph(const loom_graph_t* g) {
  if (g == nullptr)
    return make_status(LOOM_STATUS_INVALID_ARGUMENT, "[vulkan.compute] graph is null");
  // One submission in flight per stream: the previous one finishes first
  // (its command buffer may be re-used); its errors wait for synchronize.
  defer(finish());
  if (pending_)
    return make_status(LOOM_STATUS_INTERNAL,
                       "[vulkan.compute] " + device_->name() + ": earlier work did not finish");
  if (device_->buffer_generation() != generation_) {
    if (loom_status_t* st = drop_caches()) return st;
    generation_ = device_->buffer_generation();
  }
  Plan plan;
  if (loom_status_t* st = this->plan(g, &plan)) return st;
  if (plan.dispatches.empty()) return nullptr;

  // What the recorded command buffer depends on: every dispatch's pipeline,
  // buffers, grid and push constants.
  std::vector<uint32_t> sig;
  sig.reserve(plan.dispatches.size() * (2 + 6 * kSlots + 3 + sizeof(PushConstants) / 4));
  for (size_t i = 0; i < plan.dispatches.size(); ++i) {
    const Dispatch& d = plan.dispatches[i];
    const SetKey key = set_key(d);
    const auto pipeline = reinterpret_cast<uint64_t>(plan.pipelines[i]);
    sig.push_back(static_cast<uint32_t>(pipeline));
    sig.push_back(static_cast<uint32_t>(pipeline >> 32));
    for (uint64_t h : key) {
      sig.push_back(static_cast<uint32_t>(h));
      sig.push_back(static_cast<uint32_t>(h >> 32));
    }
    for (uint32_t gsize : d.groups) sig.push_back(gsize);
    const auto* words = reinterpret_cast<const uint32_t*>(&d.pc);
    sig.insert(sig.end(), words, words + sizeof(PushConstants) / 4);
  }
  ++clock_;
  if (g->fingerprint != 0) {
    for (Recorded& r : recorded_) {
      if (r.fingerprint == g->fingerprint && r.signature == sig) {
        r.last_use = clock_;
        ++reused_;
        return submit_and_finish(r.cb, g, plan);
      }
    }
  }
  // Record afresh: into the fingerprint's slot (or a new / least recently
  // used one), or the scratch buffer when the graph has no fingerprint.
  for (int attempt = 0; attempt < 2; ++attempt) {
    // Sets are shared by dispatches over the same buffers: count new ones.
    size_t fresh = 0;
    std::map<SetKey, bool> seen;
    for (const Dispatch& d : plan.dispatches) {
      const SetKey key = set_key(d);
      if (sets_.count(key) == 0 && seen.emplace(key, true).second) ++fresh;
    }
    if (desc_used_ + fresh > kMaxSets) {
      if (loom_status_t* st = drop_caches()) return st;
    }
    VkCommandBuffer cb = scratch_cb_;
    Recorded* slot = nullptr;
    if (g->fingerprint != 0) {
      for (Recorded& r : recorded_) {
        if (r.fingerprint == g->fingerprint) slot = &r;
      }
      if (slot == nullptr && recorded_.size() < kMaxRecorded) {
        VkCommandBufferAllocateInfo cai{};
        cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
        cai.commandPool = pool_;
        cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        cai.commandBufferCount = 1;
        VkCommandBuffer nb = VK_NULL_HANDLE;
        VkResult r = device_->vk().vkAllocateCommandBuffers(device_->device(), &cai, &nb);
        if (r != VK_SUCCESS)
          return vk_status("compute] " + device_->name(), "vkAllocateCommandBuffers", r);
        recorded_.push_back(Recorded{g->fingerprint, {}, nb, 0});
        slot = &recorded_.back();
      } else if (slot == nullptr) {
        slot = &recorded_.front();
        for (Recorded& r : recorded_) {
          if (r.last_use < slot->last_use) slot = &r;
        }
      }
      cb = slot->cb;
    }
    loom_status_t* st = record(plan, cb);
    if (st != nullptr && desc_used_ >= kMaxSets && attempt == 0) {
      // The pool ran out mid-graph: start over with empty caches once.
      common::host_services()->status_free(st);
      if (loom_status_t* st2 = drop_caches()) return st2;
      continue;
    }
    if (st != nullptr) {
      if (slot) slot->signature.clear();
      return st;
    }
    if (slot) {
      slot->fingerprint = g->fingerprint;
      slot->signature = std::move(sig);
      slot->last_use = clock_;
    }
    return submit_and_finish(cb, g, plan);
  }
  return make_status(LOOM_STATUS_RESOURCE_EXHAUSTED,
                     "[vulkan.compute] " + device_->name() + ": graph needs more than " +
                         std::to_string(kMaxSets) + " descriptor sets");
}

}  // namespace loom::vulkan
