#include "pipeline_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/env.h"
#include "common/glue.h"

namespace loom::vulkan {

namespace {

// File layout (host byte order; the file never leaves this machine):
// magic[8], vendor, device, driver (u32 each), device uuid[16], cache
// uuid[16], data size (u64), FNV-1a of the data (u64), then the data.
constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'V', 'K', 'P', '1'};
constexpr size_t kHeaderBytes = 8 + 3 * 4 + 16 + 16 + 8 + 8;
// VkPipelineCacheHeaderVersionOne: the driver's own header of its data.
constexpr size_t kVkHeaderBytes = 16 + 16;
constexpr uint32_t kVkHeaderVersionOne = 1;

uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

template <typename T>
void put(std::vector<uint8_t>* out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof v);
}

template <typename T>
T get(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::vector<uint8_t> header(const PipelineCacheKey& k, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> h(kMagic, kMagic + 8);
  put(&h, k.vendor_id);
  put(&h, k.device_id);
  put(&h, k.driver_version);
  h.insert(h.end(), k.device_uuid, k.device_uuid + 16);
  h.insert(h.end(), k.cache_uuid, k.cache_uuid + 16);
  put(&h, static_cast<uint64_t>(data.size()));
  put(&h, fnv1a(data.data(), data.size()));
  return h;
}

// Why `file` (header + data) does not fit `k`, or "".
std::string mismatch(const std::vector<uint8_t>& file, const PipelineCacheKey& k) {
  if (file.size() < kHeaderBytes) return "shorter than its header";
  const uint8_t* p = file.data();
  if (std::memcmp(p, kMagic, 8) != 0) return "not a loom pipeline cache";
  if (get<uint32_t>(p + 8) != k.vendor_id || get<uint32_t>(p + 12) != k.device_id)
    return "written for another device";
  if (get<uint32_t>(p + 16) != k.driver_version) return "written by another driver version";
  if (std::memcmp(p + 20, k.device_uuid, 16) != 0) return "written for another device UUID";
  if (std::memcmp(p + 36, k.cache_uuid, 16) != 0) return "another pipelineCacheUUID";
  const uint64_t size = get<uint64_t>(p + 52);
  if (size != file.size() - kHeaderBytes) return "truncated or padded data";
  if (get<uint64_t>(p + 60) != fnv1a(p + kHeaderBytes, size)) return "checksum mismatch";
  // The driver's header must name the same device and cache UUID too.
  const uint8_t* v = p + kHeaderBytes;
  if (size < kVkHeaderBytes) return "driver data shorter than its header";
  if (get<uint32_t>(v) < kVkHeaderBytes || get<uint32_t>(v + 4) != kVkHeaderVersionOne ||
      get<uint32_t>(v + 8) != k.vendor_id || get<uint32_t>(v + 12) != k.device_id ||
      std::memcmp(v + 16, k.cache_uuid, 16) != 0) {
    return "driver data header does not match the device";
  }
  return std::string();
}

std::string hex(const uint8_t* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(b, sizeof b, "%02x", p[i]);
    s += b;
  }
  return s;
}

}  // namespace

std::string pipeline_cache_path(const PipelineCacheKey& key) {
  const std::string dir = common::loom_cache_dir();
  if (dir.empty()) return std::string();
  char ids[32];
  std::snprintf(ids, sizeof ids, "%04x-%04x-", key.vendor_id, key.device_id);
  return dir + "/vulkan/pipelines-" + ids + hex(key.device_uuid, 16) + ".bin";
}

std::vector<uint8_t> read_pipeline_cache(const std::string& path, const PipelineCacheKey& key,
                                         std::string* out_state) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *out_state = "miss (no file)";
    return {};
  }
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string why = mismatch(file, key);
  if (!why.empty()) {
    *out_state = "ignored (" + why + ")";
    common::plugin_log(LOOM_LOG_LEVEL_DEBUG, "vulkan",
                       "pipeline cache " + path + " ignored: " + why);
    return {};
  }
  *out_state = "hit (" + std::to_string(file.size() - kHeaderBytes) + " bytes)";
  return std::vector<uint8_t>(file.begin() + kHeaderBytes, file.end());
}

std::string write_pipeline_cache(const std::string& path, const PipelineCacheKey& key,
                                 const std::vector<uint8_t>& data) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return "cannot create " + fs::path(path).parent_path().string() + ": " + ec.message();
  // Another process may write the same file: each writes its own
  // temporary file, and the last rename wins whole.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    const std::vector<uint8_t> h = header(key, data);
    out.write(reinterpret_cast<const char*>(h.data()), static_cast<std::streamsize>(h.size()));
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return "cannot write " + tmp;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    const std::string why = "cannot rename " + tmp + " to " + path + ": " + ec.message();
    fs::remove(tmp, ec);
    return why;
  }
  return std::string();
}

}  // namespace loom::vulkan
