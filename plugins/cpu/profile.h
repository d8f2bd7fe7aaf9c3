// LOOM_CPU_PROFILE=1: time every node the device runs, summed per op (and
// per MUL_MAT path: weight type, decode or batch) in two tables: computes
// whose every MUL_MAT has at most 4 columns (decode steps) and the others
// (prefill), each with its computes' mean time; reported through the host
// log (category "cpu", level info) when the device goes away and every 1000
// computes. A measuring aid; off by default, costs a clock read per node
// when on. Not thread-safe: the device serialises computes.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/plugin.h"

namespace loom::cpu {

class Profile {
 public:
  Profile();
  ~Profile();
  bool on() const { return on_; }
  // Add one node's time (to the compute in progress).
  void add(const loom_tensor_t* node, std::chrono::nanoseconds t);
  // The compute of `graph` took `t` in all: files its nodes' times under
  // decode or batch; reports every 1000 computes.
  void computed(const loom_graph_t* graph, std::chrono::nanoseconds t);

 private:
  void report() const;
  struct Entry {
    int64_t calls = 0;
    int64_t ns = 0;
  };
  struct Table {
    int64_t computes = 0;
    int64_t ns = 0;  // whole computes
    std::map<std::string, Entry> by_kind;
  };
  bool on_ = false;
  int64_t computes_ = 0;
  std::map<std::string, Entry> pending_;  // the compute in progress
  Table tables_[2];                       // decode, batch
};

}  // namespace loom::cpu
