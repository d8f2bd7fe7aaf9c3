// Plain F32 reference kernels of the simulated devices. Tensor pointers in
// non-host sim buffers are fake device addresses; kernels translate with
// data_ptr().
#pragma once

#include <cstddef>
#include <string>

#include "loom/plugin.h"

namespace loom::sim {

// Whether a kernel exists for this node (op and types), independent of the
// per-device op list.
bool kernel_exists(const loom_tensor_t* node);

// Run one node; returns "" or an error message.
std::string run_kernel(const loom_tensor_t* node);

// Bytes a computed node moves (every element read and written, all F32;
// the sparse products count only their active weight rows, GET_ROWS only
// the rows it gathers): what LOOM_SIM_GBPS_<i> times. active_share < 0:
// count the active rows (after the node ran: it reads the scores); else
// assume that share of the rows (loom.cost, before the data exists).
size_t node_bytes(const loom_tensor_t* node, double active_share = -1.0);

}  // namespace loom::sim
