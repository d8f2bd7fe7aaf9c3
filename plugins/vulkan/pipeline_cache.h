// The on-disk VkPipelineCache of one device: where it lives (the loom cache
// folder, common::loom_cache_dir), what a file holds (a header naming the
// device and driver, then the driver's own cache data) and how it is read
// and written. A corrupt, truncated or foreign file is ignored (debug log),
// never a failure; writes go to a temporary file renamed over the old one,
// so a reader never sees half a file. Plain functions, no state;
// thread-safe for distinct paths.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::vulkan {

// What a cache file must match: the physical device (UUID, vendor and
// device ids), the driver version, and the driver's pipelineCacheUUID
// (which the driver also writes into the header of its data).
struct PipelineCacheKey {
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;
  uint32_t driver_version = 0;
  uint8_t device_uuid[16] = {};
  uint8_t cache_uuid[16] = {};
};

// "<cache folder>/vulkan/pipelines-<vendor>-<device>-<device uuid>.bin",
// or "" when there is no cache folder (secure execution, nothing set). The
// driver version is checked inside the file, so a driver update replaces
// the file rather than adding one.
std::string pipeline_cache_path(const PipelineCacheKey& key);

// The driver data of the file at `path` when it exists and matches `key`
// (else empty). *out_state says what happened, for `loom devices -v`:
// "hit (N bytes)", "miss (no file)" or "ignored (<why>)"; an ignored file
// is logged at debug level.
std::vector<uint8_t> read_pipeline_cache(const std::string& path, const PipelineCacheKey& key,
                                         std::string* out_state);

// Writes `data` (the driver's vkGetPipelineCacheData) under `key` to
// `path`, creating the folder; "" or why it failed (the caller logs it).
std::string write_pipeline_cache(const std::string& path, const PipelineCacheKey& key,
                                 const std::vector<uint8_t>& data);

}  // namespace loom::vulkan
