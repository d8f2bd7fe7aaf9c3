// Non-finite values in a step's results: the logits check every eval runs,
// and the LOOM_CHECK_FINITE=1 debug aid that finds the first graph node
// producing a NaN or infinity (slow: every node's result is kept alive and
// read back after each step). Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "loom/runtime/graph.hpp"
#include "loom/sched/scheduler.hpp"

namespace loom::llm {

// Index of the first NaN or infinity among v[0, n); n when all are finite.
size_t first_non_finite(const float* v, size_t n);

// "NaN", "+inf" or "-inf" for a non-finite value.
const char* non_finite_name(float v);

// The same computation as `g` with every node that owns memory (views and
// writes into a cache excepted) an output, so no result is overwritten by a
// later node and all can be read after the compute.
StatusOr<Graph> keep_every_node(const Graph& g);

// After sched computed `g` (built by keep_every_node): reads every float
// node in execution order and fails on the first one holding a non-finite
// value, naming its index, op, name, sources, device and the element.
// `step` describes the step for the message ("positions [4, 8)").
Status check_nodes_finite(const Graph& g, const Scheduler& sched, const std::string& step);

}  // namespace loom::llm
