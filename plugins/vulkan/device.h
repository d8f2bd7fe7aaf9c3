// One Vulkan physical device with a compute queue as a loom device: the
// VkDevice and its queue, properties for the registry (type, memory,
// UUID / PCI identity), the buffer type, pipelines, and a one-shot
// submission path for buffer copies. Owned by the plugin context; lives
// until plugin shutdown. Thread-safe: the queue and the one-shot command
// buffer are guarded by a mutex, pipelines by theirs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "buffer.h"
#include "coopmat.h"
#include "loader.h"
#include "loom/plugin.h"
#include "ops/ops.h"
#include "pipeline.h"
#include "pipeline_cache.h"

namespace loom::vulkan {

// How long a fence or semaphore wait may take: a stuck device fails, never hangs.
inline constexpr uint64_t kWaitNs = uint64_t{120} * 1000 * 1000 * 1000;

// "[vulkan.<where>] <call>: VK_ERROR_..." as a status (INTERNAL, or
// RESOURCE_EXHAUSTED for out-of-memory results).
loom_status_t* vk_status(const std::string& where, const char* call, VkResult r);

// A buffer in host-visible coherent memory, mapped for its lifetime
// (staging, the streams' copy rings, error words). Made and freed by the
// device; all members null until made.
struct MappedBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint8_t* map = nullptr;
};

class Device {
 public:
  // Opens physical device `phys` as "vulkan<index>"; nullptr and *why when
  // it has no compute queue or device creation fails.
  static std::unique_ptr<Device> create(const Loader& loader, VkPhysicalDevice phys, size_t index,
                                        std::string* why);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  loom_device_t* handle() { return &raw_; }
  static Device* from(loom_device_t* d) { return static_cast<Device*>(d->context); }
  static Device* from(const loom_device_t* d) { return static_cast<Device*>(d->context); }

  const std::string& name() const { return name_; }
  const DeviceFuncs& vk() const { return vk_; }
  VkDevice device() const { return device_; }
  uint32_t queue_family() const { return queue_family_; }
  const OpCaps& caps() const { return caps_; }
  // Ops refused through LOOM_VULKAN_DISABLE=op:<NAME> (testing splits).
  bool op_disabled(int32_t op) const { return op >= 0 && op < LOOM_OP_COUNT && disabled_ops_[op]; }
  // The device's own memory; on integrated GPUs and CPU implementations it
  // is host visible and is_host (then the same object as host_buffer_type).
  BufferType& buffer_type() { return *buffer_type_; }
  // Host-visible coherent memory the device reads directly (is_host).
  BufferType& host_buffer_type() { return host_type_ ? *host_type_ : *buffer_type_; }
  bool supports_buffer_type(const loom_buffer_type_t* t) {
    return t == buffer_type_->handle() || t == host_buffer_type().handle();
  }
  // minImportedHostPointerAlignment with VK_EXT_external_memory_host, else
  // 0 (no buffer_from_host_ptr).
  uint64_t import_alignment() const { return import_alignment_; }
  Pipelines& pipelines() { return *pipelines_; }
  // Writes the pipeline cache file when pipelines were made since the last
  // write (a failure is a warning: the cache is an optimisation). Called
  // after a graph's pipelines were built and at teardown.
  void save_pipeline_cache();
  // Lines for `loom devices -v` (the loom.details extension): the cache
  // file, what it gave at start, pipelines made so far and their time.
  std::string details();

  loom_status_t* get_props(loom_device_props_t* out);

  // Submit one command buffer to the queue (serialised with every other
  // submission), signalling `fence`. With a timeline, the submission also
  // signals the next timeline value, returned in *out_value (else 0).
  // Submissions are ordered: every command buffer begins with a barrier
  // after all earlier work of the queue.
  VkResult submit(VkCommandBuffer cb, VkFence fence, uint64_t* out_value);
  // The same for n command buffers in one submission (in order).
  VkResult submit(const VkCommandBuffer* cbs, uint32_t n, VkFence fence, uint64_t* out_value);
  // vkQueueSubmit calls that succeeded so far (loom.details).
  uint64_t submissions() const { return submissions_.load(); }

  // Async streams and events: true when the device has a timeline
  // semaphore (LOOM_VULKAN_DISABLE=async turns it off).
  bool async() const { return timeline_ != VK_NULL_HANDLE; }
  // Block until the timeline reaches `value` (0: at once).
  loom_status_t* wait_value(uint64_t value, const char* where);

  // Record `fill` into the device's one-shot command buffer, submit, wait.
  loom_status_t* run_once(const char* where, const std::function<void(VkCommandBuffer)>& fill);
  // The same with once_mutex_ already held.
  loom_status_t* run_once_locked(const char* where,
                                 const std::function<void(VkCommandBuffer)>& fill);

  // A mapped host-visible buffer of `size` bytes for `usage` (on failure a
  // status naming `where`, and *out left empty); free_mapped releases it.
  loom_status_t* make_mapped(VkDeviceSize size, VkBufferUsageFlags usage, const std::string& where,
                             MappedBuffer* out);
  // The same in device-local memory, not mapped (map stays null): scratch
  // data kernels make for each other. Freed with free_mapped.
  loom_status_t* make_local(VkDeviceSize size, VkBufferUsageFlags usage, const std::string& where,
                            MappedBuffer* out);
  void free_mapped(MappedBuffer* b);

  // Host <-> device copies through the staging buffer (devices whose
  // memory cannot be mapped), in chunks, waiting for each.
  loom_status_t* staged_write(VkBuffer dst, uint64_t offset, const void* src, size_t size);
  loom_status_t* staged_read(VkBuffer src, uint64_t offset, void* dst, size_t size);

  // Memory: the type index for staging; limits a single buffer must respect
  // (largest allocation and heap; the shaders bind windows of at most
  // maxStorageBufferRange bytes of it).
  uint32_t staging_memory_type() const { return staging_mem_type_; }
  uint64_t max_buffer_size() const { return max_buffer_size_; }
  uint64_t max_storage_range() const { return max_storage_range_; }
  uint64_t max_allocation() const { return max_allocation_; }
  uint64_t heap_size() const { return heap_size_; }

  // Live buffers by base address, for mapping a tensor's data pointer back
  // to a VkBuffer. register_buffer sets the base: the mapping of host
  // buffers, else a non-canonical address (bit 63 set) from an id unique
  // in the plugin, so it never equals a host pointer or another device's.
  void register_buffer(Buffer* b);
  void unregister_buffer(Buffer* b);
  // The buffer holding data pointer `addr` (one past its end included).
  Buffer* find_buffer(uint64_t addr);
  // Bumped whenever a buffer is freed: streams drop cached descriptor sets
  // and recorded command buffers when it changed.
  uint64_t buffer_generation() const { return generation_.load(); }

 private:
  Device() = default;
  // The cooperative-matrix GEMM's first product (coopmat_check.h); off
  // with the reason when it fails.
  void check_coopmat();
  // caps_'s kernel names from coopmat_.
  void coopmat_caps();
  std::string init(const Loader& loader, VkPhysicalDevice phys, size_t index);

  loom_device_t raw_{};
  std::string name_;
  std::string description_;
  int32_t type_ = LOOM_DEVICE_TYPE_GPU;
  bool emulated_ = false;  // a CPU implementation (LOOM_DEVICE_CAP_EMULATED)
  uint8_t uuid_[16] = {};
  std::string pci_bus_id_;
  const Loader* loader_ = nullptr;
  VkPhysicalDevice phys_ = VK_NULL_HANDLE;
  bool has_budget_ = false;

  DeviceFuncs vk_{};
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  std::mutex queue_mutex_;
  std::atomic<uint64_t> submissions_{0};
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  uint64_t timeline_value_ = 0;  // last value a submission signals (queue_mutex_)
  OpCaps caps_;
  Coopmat coopmat_;  // the prefill GEMM's cooperative matrices
  bool disabled_ops_[LOOM_OP_COUNT] = {};

  uint32_t device_mem_type_ = 0;
  bool uma_ = false;  // device memory is the host's: the own type is host
  uint32_t staging_mem_type_ = 0;
  uint64_t import_alignment_ = 0;
  uint32_t device_heap_ = 0;
  uint64_t heap_size_ = 0;
  uint64_t max_storage_range_ = 0;
  uint64_t max_allocation_ = 0;
  uint64_t max_buffer_size_ = 0;

  std::mutex once_mutex_;
  VkCommandPool once_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer once_cb_ = VK_NULL_HANDLE;
  VkFence once_fence_ = VK_NULL_HANDLE;

  loom_status_t* make_buffer(VkDeviceSize size, VkBufferUsageFlags usage, uint32_t mem_type, bool map,
                             const std::string& where, MappedBuffer* out);
  // Staging (host visible, mapped), guarded by once_mutex_.
  loom_status_t* ensure_staging(const char* where);
  MappedBuffer staging_;

  std::mutex buffers_mutex_;
  std::multimap<uint64_t, Buffer*> buffers_;  // by base address
  std::atomic<uint64_t> generation_{0};

  std::unique_ptr<BufferType> buffer_type_;
  std::unique_ptr<BufferType> host_type_;  // null on UMA devices (buffer_type_ is host)
  std::unique_ptr<Pipelines> pipelines_;
  PipelineCacheKey cache_key_;
  std::string cache_path_;   // "" without a cache folder
  std::string cache_state_;  // what reading the file gave: hit / miss / ignored / off
};

}  // namespace loom::vulkan
