// Test helper: builds GGUF images byte by byte. Deliberately independent of
// the reader (it shares only the type ids) so round trips check the format,
// and it can write malformed images (wrong counts, offsets, types) on request.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom::testing {

// Little-endian byte appender.
struct Bytes {
  std::vector<uint8_t> b;

  template <typename T>
  Bytes& put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));
    b.insert(b.end(), tmp, tmp + sizeof(T));
    return *this;
  }
  Bytes& u8(uint8_t v) { return put(v); }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& str(std::string_view s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& raw(const std::vector<uint8_t>& r) {
    b.insert(b.end(), r.begin(), r.end());
    return *this;
  }
  Bytes& pad_to(uint64_t align) {
    while (b.size() % align != 0) b.push_back(0);
    return *this;
  }
};

// GGUF value type ids (the spec's numbers, spelled out here on purpose).
enum : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kStr = 8, kArr = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

class GgufBuilder {
 public:
  explicit GgufBuilder(uint32_t version = 3) : version_(version) {}

  // A key with an already-encoded value (type id + value bytes).
  GgufBuilder& kv_raw(std::string_view key, uint32_t type, const Bytes& value) {
    kvs_.str(key).u32(type).raw(value.b);
    ++n_kv_;
    return *this;
  }
  template <typename T>
  GgufBuilder& kv(std::string_view key, uint32_t type, T v) {
    Bytes b;
    b.put(v);
    return kv_raw(key, type, b);
  }
  GgufBuilder& kv_str(std::string_view key, std::string_view s) {
    Bytes b;
    b.str(s);
    return kv_raw(key, kStr, b);
  }
  template <typename T>
  GgufBuilder& kv_arr(std::string_view key, uint32_t elem_type, const std::vector<T>& v) {
    Bytes b;
    b.u32(elem_type).u64(v.size());
    for (const T& x : v) b.put(x);
    return kv_raw(key, kArr, b);
  }
  GgufBuilder& kv_arr_str(std::string_view key, const std::vector<std::string>& v) {
    Bytes b;
    b.u32(kStr).u64(v.size());
    for (const auto& s : v) b.str(s);
    return kv_raw(key, kArr, b);
  }
  // Sets general.alignment and lays the data section out with it.
  GgufBuilder& alignment(uint32_t a) {
    alignment_ = a;
    return kv("general.alignment", kU32, a);
  }

  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    std::vector<uint8_t> data;
    std::optional<uint64_t> offset;  // override the computed offset
  };
  GgufBuilder& tensor(std::string name, std::vector<uint64_t> dims, uint32_t type, std::vector<uint8_t> data,
                      std::optional<uint64_t> offset = std::nullopt) {
    tensors_.push_back({std::move(name), std::move(dims), type, std::move(data), offset});
    return *this;
  }

  // Header count overrides for malformed images.
  std::optional<uint64_t> tensor_count_override;
  std::optional<uint64_t> kv_count_override;

  std::vector<uint8_t> build() const {
    Bytes out;
    out.b = {'G', 'G', 'U', 'F'};
    out.u32(version_);
    out.u64(tensor_count_override.value_or(tensors_.size()));
    out.u64(kv_count_override.value_or(n_kv_));
    out.raw(kvs_.b);
    uint64_t next = 0;
    std::vector<uint64_t> offsets;
    for (const Tensor& t : tensors_) {
      uint64_t off = t.offset.value_or(next);
      offsets.push_back(off);
      next = off + t.data.size();
      next = (next + alignment_ - 1) / alignment_ * alignment_;
      out.str(t.name).u32(static_cast<uint32_t>(t.dims.size()));
      for (uint64_t d : t.dims) out.u64(d);
      out.u32(t.type).u64(off);
    }
    out.pad_to(alignment_);
    const size_t data_start = out.b.size();
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const Tensor& t = tensors_[i];
      if (t.offset) continue;  // overridden offsets point wherever the test wants; no data written
      out.b.resize(data_start + offsets[i], 0);
      out.raw(t.data);
    }
    return out.b;
  }

 private:
  uint32_t version_;
  uint32_t alignment_ = 32;
  Bytes kvs_;
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
};

}  // namespace loom::testing
