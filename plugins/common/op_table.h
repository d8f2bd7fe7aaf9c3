// The op set's facts, one row per op in one table (op_table.cpp), read by
// the host (runtime builders, allocator, scheduler) and by plugins alike:
// name, the ABI minor that added the op, how many sources it reads, whether
// it only reinterprets memory (a view), whether its kernel may write its
// first source's memory (in place), and its shape/type rule (op_check.h's
// check_node). Pure data and functions, thread-safe.
#pragma once

#include <cstdint>

#include "loom/plugin.h"

namespace loom::common {

struct OpFacts {
  const char* name;     // "MUL_MAT"
  uint32_t abi_minor;   // the minor (of this major) that added it
  int n_src;            // sources read; optional ones (SOFT_MAX's mask, ROPE's factors) not counted
  bool view;            // RESHAPE, VIEW, PERMUTE, TRANSPOSE: no kernel runs
  // The kernel may run with dst->data == src[0]->data (same type, shape and
  // dense layout): every output element depends only on inputs already read
  // when it is written (elementwise maps, ROPE's pairs, row reductions that
  // finish before the row is written). Kernels of such ops must not assume
  // dst and src[0] are disjoint.
  bool inplace;
  // The rule for a compute node whose sources are present and well-formed
  // (nullptr for NONE and the views): nullptr when the node is well-formed,
  // else a static reason ("types", "shapes", "n_dims", ...).
  const char* (*rule)(const loom_tensor_t* node);
};

// The row of op id `op`; ids outside [0, LOOM_OP_COUNT) get a row named
// "INVALID" with no rule.
const OpFacts& op_facts(int32_t op);

}  // namespace loom::common
