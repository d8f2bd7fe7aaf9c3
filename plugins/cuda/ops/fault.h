// What a kernel found wrong with its inputs (a row index out of range, an
// ATTENTION visible count outside [0, n_kv], a MUL_MAT_ID expert id outside
// [0, E)): the stream's device word the
// first failing thread fills (fault.cuh), read back by synchronize and
// turned into the message the cpu plugin gives for the same input. Plain
// C++ so the host test checks the messages.
#pragma once

#include <cstdint>
#include <string>

namespace loom::cuda {

enum KernelError : int32_t {
  kErrNone = 0,
  kErrRowIndex = 1,  // GET_ROWS / SET_ROWS: index `value` at row `where`, rows [0, bound)
  kErrVisible = 2,   // ATTENTION: visible[where] = value outside [0, bound]
  kErrRange = 3,     // ATTENTION's ranges form: query `where`'s rows [value >> 32, (int32)value) outside [0, bound]
  kErrExpert = 4,    // MUL_MAT_ID: id (int32)value of token `where`, slot value >> 32, outside [0, bound)
};

// The device word (32 bytes, zeroed after each report). code is written
// first by atomicCAS, so the other fields belong to the first fault.
struct KernelFault {
  int32_t code;
  int32_t op;  // LOOM_OP_* of the node that found it
  int64_t where;
  int64_t value;
  int64_t bound;
};

// "row index 3 at row 1 out of range [0, 3)" / "visible[1] = 21 outside
// [0, 20] (n_kv 20)" / "rows [9, 5) of query 1 outside [0, 20] (n_kv 20)" /
// "id 4 of token 1, slot 1 outside [0, 4)"; empty for kErrNone.
std::string fault_message(const KernelFault& f);

}  // namespace loom::cuda
