// The `loom.file_load` extension of a remote device: the worker rank opens
// the model file itself (the same path, or one through its
// LOOM_MPI_PATH_MAP) and reads a weight's bytes there, so they never cross
// the wire; rank 0 sends the path, the slice and its checksum ("load_file").
#pragma once

#include "loom/plugin.h"

namespace loom::mpi {

// The extension table (lives as long as the plugin).
const loom_ext_file_load_t* file_load_extension();

}  // namespace loom::mpi
