// A device of another rank, shown on rank 0 as "r<rank>.<name>". What the
// worker reported at hello (name, type, memory, alignment, identity) is kept
// here; supports_op answers are asked once per node shape and cached; the
// memory is asked again at every get_props after the first (the fit and the
// loads read it as it is now, not as it was at hello).
// Owned by the plugin context; thread-safe (the cache has a mutex, the
// transport its own).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "buffer.h"
#include "loom/plugin.h"
#include "transport.h"

namespace loom::mpi {

class RemoteStream;

struct RemoteInfo {
  int rank = 0;
  uint32_t index = 0;  // the device's index in the worker's registry
  std::string name;    // "r1.cpu"
  std::string description;
  int32_t type = LOOM_DEVICE_TYPE_CPU;
  uint64_t memory_total = 0;
  uint64_t memory_free = 0;
  uint32_t caps = 0;
  uint64_t alignment = 64;
  uint8_t uuid[16] = {};
  int32_t threads = -1;  // the remote device's loom.threads count at hello; -1: no such extension
};

class RemoteDevice {
 public:
  RemoteDevice(Transport* transport, RemoteInfo info);
  RemoteDevice(const RemoteDevice&) = delete;
  RemoteDevice& operator=(const RemoteDevice&) = delete;

  loom_device_t* raw() { return &raw_; }
  static RemoteDevice* from(loom_device_t* d) { return static_cast<RemoteDevice*>(d->context); }
  static const RemoteDevice* from(const loom_device_t* d) { return static_cast<const RemoteDevice*>(d->context); }
  const RemoteInfo& info() const { return info_; }
  Transport& transport() { return *transport_; }
  RemoteBufferType& buffer_type() { return buffer_type_; }

  // The remote device's answer for `node` (its sources' types and shapes
  // included), cached by the encoded query; false when the rank is lost.
  bool supports_op(const loom_tensor_t* node);
  // The remote device's loom.cost estimate for `node`, asked with the same
  // query (one round trip per shape for both); < 0: none.
  double op_time_us(const loom_tensor_t* node);

  // loom.threads, forwarded to the worker's device ("threads" request);
  // threads() answers from what the worker said last (no round trip).
  loom_status_t* set_threads(int32_t n);
  int32_t threads();

  // Its live streams (stream.cpp registers them), and a post of the writes
  // they hold queued, so that a rank to rank copy posted next comes after
  // them on the worker (CAP_ORDERED_COPY: copy.cpp).
  void add_stream(RemoteStream* s);
  void remove_stream(RemoteStream* s);
  loom_status_t* post_queued_writes();

  // The device's memory (total, free): hello's answer the first time, the
  // worker's answer now ("memory" request) every later time; the last
  // known values when the rank does not answer.
  void memory(uint64_t* total, uint64_t* free);

 private:
  Transport* transport_;
  RemoteInfo info_;
  loom_device_t raw_;
  RemoteBufferType buffer_type_;
  std::mutex mu_;
  struct Answer {
    bool yes = false;
    double us = -1.0;
  };
  Answer ask(const loom_tensor_t* node);
  std::unordered_map<uint64_t, Answer> supports_;
  std::vector<RemoteStream*> streams_;
  int32_t threads_;
  uint64_t memory_total_, memory_free_;
  bool memory_fresh_ = true;  // hello's memory not read yet
};

}  // namespace loom::mpi
