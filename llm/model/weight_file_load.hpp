// Weights a device reads from the model file itself (the `loom.file_load`
// extension; the mpi plugin's remote devices: the worker rank opens the same
// GGUF), so their bytes never pass through this process's set_tensor. Used by
// the llama loader for weights whose bytes are a plain slice of the file (a
// buffer of the device's default type: no conversion, no repacked layout).
// After the first failure on a device (missing file, another file, a checksum
// that differs, no extension) the rest of that device's weights are streamed
// through set_tensor, and the failure is logged once: a warning, or info when
// the device only lacks the capability. One per device per load; not
// thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "loom/registry/registry.hpp"
#include "loom/runtime/gguf.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::llm {

class WeightFileLoad {
 public:
  // file: the mapped model (borrowed; outlives this); device: where the
  // weights go. Off (every load() false) when the device has no file_load,
  // the file is not mapped from a path, or LOOM_FILE_LOAD=0.
  WeightFileLoad(const GgufFile& file, const registry::Device& device);
  // Whether t (allocated in a buffer of `device`) now holds info's bytes,
  // read by the device; false: the caller sets them itself.
  bool load(Tensor* t, const GgufTensorInfo& info);
  // One info line: how many weights and bytes were read from the file, how
  // many were streamed (nothing when the device never was asked).
  void log_summary() const;

 private:
  const GgufFile& file_;
  const registry::Device& device_;
  std::string path_;  // absolute; "" when off
  bool on_ = false;
  uint64_t loaded_ = 0, loaded_bytes_ = 0, streamed_ = 0, streamed_bytes_ = 0;
};

}  // namespace loom::llm
