// LOOM_CPU_PROFILE=1: time every node the device runs, summed per op (and
// per MUL_MAT path: weight type, decode or batch), reported through the
// host log (category "cpu", level info) when the device goes away and
// every 1000 computes. A measuring aid; off by default, costs a clock read
// per node when on. Not thread-safe: the device serialises computes.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "loom/plugin.h"

namespace loom::cpu {

class Profile {
 public:
  Profile();
  ~Profile();
  bool on() const { return on_; }
  // Add one node's time.
  void add(const loom_tensor_t* node, std::chrono::nanoseconds t);
  // Count a compute; reports every 1000.
  void computed();

 private:
  void report() const;
  struct Entry {
    int64_t calls = 0;
    int64_t ns = 0;
  };
  bool on_ = false;
  int64_t computes_ = 0;
  std::map<std::string, Entry> by_kind_;
};

}  // namespace loom::cpu
