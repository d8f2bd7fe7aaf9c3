// The op set's well-formedness rules: which op / type / shape / parameter
// combinations a node may have for the reference semantics of plugin.h
// (what the cpu plugin's kernels implement). Plugins answer supports_op
// with this plus their own limits. Pure functions, never allocate.
#pragma once

#include "loom/plugin.h"

namespace loom::common {

// nullptr when node (a compute op, not a view or leaf) is well-formed, else a
// static reason: "op", "result type or shape", "missing source",
// "source type or shape", "types", "shapes", "n_dims", "mode", ...
const char* check_node(const loom_tensor_t* node);

// Known type, no negative extent, whole blocks along ne[0], quantized blocks
// contiguous.
bool tensor_ok(const loom_tensor_t* t);

// Sources an op reads (SOFT_MAX's optional mask and ROPE's optional
// frequency factors not counted).
int op_source_count(int32_t op);

}  // namespace loom::common
