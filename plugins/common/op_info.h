// Op facts plugins need for dispatch and messages (a plugin cannot use the
// runtime's tables): names, which ops are views, a node's one-line summary.
// Thread-safe; nothing here allocates except describe_node.
#pragma once

#include <cstdint>
#include <string>

#include "loom/plugin.h"

namespace loom::common {

// "MUL_MAT" etc.; "INVALID" out of range. Static storage, never freed.
const char* op_name(int32_t op);

// The ABI minor (of this major) that added op id `op` (0 for the 1.0 ops,
// 1 for ATTENTION, 3 for MUL_MAT_SPARSE_ROWS / _COLS). The one table behind host rule 15 (docs/plugin-abi.md).
uint32_t op_abi_minor(int32_t op);
// Whether a plugin built for `plugin_abi_version` (packed) knows op id `op`:
// a valid id of this header, same major, minor >= op_abi_minor(op).
bool plugin_knows_op(uint32_t plugin_abi_version, int32_t op);
// The ABI minor that added the form `node` takes of its op, past the op id
// itself: an optional source an existing op gained later (ROPE with src2,
// the frequency factors: 2), a param selecting a later form (ATTENTION's
// ranges: 4); 0 for an op's first form. With op_abi_minor,
// the table behind host rule 15 for nodes.
uint32_t op_form_abi_minor(const loom_tensor_t* node);
// Whether a plugin built for `plugin_abi_version` (packed) knows `node`'s op
// and the form it takes (plugin_knows_op and op_form_abi_minor).
bool plugin_knows_node_op(uint32_t plugin_abi_version, const loom_tensor_t* node);

// Ops that only reinterpret their source's memory (no kernel runs).
bool is_view_op(int32_t op);

// "'name' (MUL_MAT q4_0, f16 -> f32)" for messages; `node` is borrowed.
std::string describe_node(const loom_tensor_t* node);

// NULL when the result and each non-null source among the first `n_src` of
// `node` has memory (or no elements); else an INVALID_ARGUMENT status
// "[<where>] node 'x' (...): src1 has no memory", owned by the caller.
loom_status_t* check_node_memory(const char* where, const loom_tensor_t* node, int n_src);

}  // namespace loom::common
