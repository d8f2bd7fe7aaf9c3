// A Vulkan stream: runs a graph as one command buffer (a dispatch per
// node, barriers only where a dispatch touches memory an earlier one wrote
// or read), submitted with a fence. On a device with a timeline semaphore
// compute returns once submitted (one graph in flight per stream; the next
// compute or synchronize waits for it, errors come back from synchronize),
// host<->tensor copies are queued through the stream's staging ring
// (set_tensor_async copies the source into the ring at once, so the caller
// may reuse it, and the copy rides in front of the next graph in one
// vkQueueSubmit, stream_copies.cpp; get_tensor_async lands in the caller's
// memory by synchronize), and events mark timeline values; otherwise everything
// waits. Descriptor sets are cached per combination of bound windows;
// recorded command buffers are kept per graph fingerprint and re-submitted
// when every dispatch (pipeline, windows, push constants, grid) is the
// same, as in a decode loop. Both caches are dropped when any buffer of the
// device is freed. One thread at a time (ABI stream rule).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "device.h"  // MappedBuffer
#include "loader.h"
#include "loom/plugin.h"
#include "ops/ops.h"

namespace loom::vulkan {

class Buffer;
class Device;

// A full memory barrier between the given stages and accesses (stream.cpp).
void barrier(const DeviceFuncs& vk, VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access,
             VkPipelineStageFlags dst, VkAccessFlags dst_access);

class Stream {
 public:
  // A new stream; the host destroys it through its iface.
  static loom_status_t* create(Device* device, loom_stream_t** out);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  static Stream* from(loom_stream_t* s) { return static_cast<Stream*>(s->context); }
  loom_stream_t* handle() { return &raw_; }

  loom_status_t* compute(const loom_graph_t* graph);
  loom_status_t* synchronize();
  loom_status_t* record_event(loom_event_t* event);
  loom_status_t* wait_event(loom_event_t* event);
  loom_status_t* set_tensor_async(loom_tensor_t* t, const void* data, size_t offset, size_t size);
  loom_status_t* get_tensor_async(const loom_tensor_t* t, void* data, size_t offset, size_t size);

  // Submissions that re-used a recorded command buffer (for tests, logs).
  uint64_t reused() const { return reused_; }

 private:
  explicit Stream(Device* device);
  loom_status_t* init();

  struct Recorded {
    uint64_t fingerprint = 0;
    std::vector<uint32_t> signature;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    uint64_t last_use = 0;
  };

  // Planned dispatches of one graph, and the graph node of each.
  struct Plan {
    std::vector<Dispatch> dispatches;
    std::vector<VkPipeline> pipelines;
    std::vector<int32_t> node_index;
  };

  // A queued copy through the ring: bytes [begin, end) of the ring are busy
  // until the timeline reaches `value`; reads land in host_dst then. cb is
  // the command buffer to recycle then (null for all but the first copy of
  // a batch of uploads, which share one).
  struct Transfer {
    uint64_t value = 0;
    uint64_t begin = 0, end = 0;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    uint8_t* host_dst = nullptr;
  };

  loom_status_t* compute_graph(const loom_graph_t* graph);
  // The tensor's buffer (ours, this device) and the VkBuffer offset.
  loom_status_t* locate(const char* op, const loom_tensor_t* t, size_t offset, size_t size,
                        Buffer** out, uint64_t* vk_offset);
  loom_status_t* ensure_ring();
  // n bytes of the ring (n <= ring size), waiting for old copies as needed.
  loom_status_t* reserve(uint64_t n, uint64_t* at);
  // Record `fill` between full barriers, submit; pushes a Transfer.
  loom_status_t* submit_copy(const char* op, uint64_t begin, uint64_t end, uint8_t* host_dst,
                             const std::function<void(VkCommandBuffer)>& fill);
  // Record `fill` into the open upload batch (opened with a full barrier);
  // its Transfer waits in open_ until the batch is submitted.
  loom_status_t* queue_upload(uint64_t begin, uint64_t end, const std::function<void(VkCommandBuffer)>& fill);
  // Ends the open upload batch (closing barrier) and hands its command
  // buffer to *out (null when none is open); after the submission that
  // carries it, landed(value) moves its Transfers to transfers_.
  loom_status_t* close_uploads(VkCommandBuffer* out);
  void landed(uint64_t value);
  // Submits the open upload batch on its own (flush points).
  loom_status_t* flush_uploads();
  loom_status_t* take_copy_cb(const std::string& where, VkCommandBuffer* out);
  // Wait for the oldest / every queued copy and finish it.
  loom_status_t* retire_one();
  loom_status_t* retire_all();
  loom_status_t* plan(const loom_graph_t* graph, Plan* out);
  loom_status_t* descriptor_set(const Dispatch& d, VkDescriptorSet* out);
  loom_status_t* record(const Plan& plan, VkCommandBuffer cb);
  loom_status_t* submit(VkCommandBuffer cb, const loom_graph_t* graph, const Plan& plan);
  loom_status_t* submit_and_finish(VkCommandBuffer cb, const loom_graph_t* graph, const Plan& plan);
  // Wait for the pending submission; its error (bad row index, bad visible length) or NULL.
  loom_status_t* finish();
  // Keep the first error of asynchronous work for synchronize.
  void defer(loom_status_t* st);
  // Drops descriptor sets and recorded command buffers (buffers were freed).
  loom_status_t* drop_caches();
  std::string resolve(const loom_tensor_t* t, Location* out);
  // Scratch memory of one graph (ScratchFn): bytes handed out in order from
  // 0 at each plan, wrapping to 0 past scratch_cap_; grow_scratch replaces the buffer with one of at least
  // `need` bytes (dropping the caches that named the old one).
  std::string take_scratch(uint64_t bytes, Location* out);
  loom_status_t* grow_scratch(uint64_t need);

  loom_stream_t raw_;
  Device* device_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer scratch_cb_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkDescriptorPool desc_pool_ = VK_NULL_HANDLE;
  uint32_t desc_used_ = 0;
  // Key: per binding the VkBuffer handle, window offset and range.
  using SetKey = std::array<uint64_t, 3 * kSlots>;
  static SetKey set_key(const Dispatch& d);
  std::map<SetKey, VkDescriptorSet> sets_;
  // Error words the shaders write (bad row index or visible length), host visible.
  MappedBuffer err_;
  uint32_t* err_map_ = nullptr;  // err_.map as words
  uint64_t generation_ = 0;
  bool pending_ = false;               // submitted, fence not yet seen signalled
  uint64_t last_value_ = 0;            // timeline value of the last submission (graph or copy)
  loom_status_t* deferred_ = nullptr;  // first error of async work
  std::vector<std::pair<int32_t, std::string>> pending_nodes_;  // nodes of the pending graph that report errors
  std::vector<Recorded> recorded_;
  // Device-local scratch (B rounded to 8-bit blocks), made on first use.
  MappedBuffer scratch_;
  uint64_t scratch_size_ = 0;
  uint64_t scratch_used_ = 0;  // end of the last bytes taken by the graph being planned
  uint64_t scratch_high_ = 0;  // the highest end so far (the size it needs)
  uint64_t scratch_cap_ = 0;   // bytes past which take_scratch wraps to 0
  // Staging ring for queued copies (host visible, mapped), made on first use.
  MappedBuffer ring_;
  uint64_t ring_head_ = 0;
  std::deque<Transfer> transfers_;
  VkCommandBuffer upload_cb_ = VK_NULL_HANDLE;  // open upload batch, not yet submitted
  std::vector<Transfer> open_;                  // its copies (value unknown)
  uint64_t uploads_batched_ = 0;                // uploads that rode with a graph
  std::vector<VkCommandBuffer> free_copy_cbs_;
  uint64_t clock_ = 0;
  uint64_t reused_ = 0;
};

}  // namespace loom::vulkan
