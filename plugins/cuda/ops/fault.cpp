#include "fault.h"

#include "common/op_info.h"

namespace loom::cuda {

std::string fault_message(const KernelFault& f) {
  const std::string op = common::op_name(f.op);
  switch (f.code) {
    case kErrNone:
      return "";
    case kErrRowIndex:
      return op + ": row index " + std::to_string(f.value) + " at row " + std::to_string(f.where) +
             " out of range [0, " + std::to_string(f.bound) + ")";
    case kErrVisible:
      return op + ": visible[" + std::to_string(f.where) + "] = " + std::to_string(f.value) + " outside [0, " +
             std::to_string(f.bound) + "] (n_kv " + std::to_string(f.bound) + ")";
    case kErrRange:
      return op + ": rows [" + std::to_string(static_cast<int32_t>(f.value >> 32)) + ", " +
             std::to_string(static_cast<int32_t>(f.value & 0xFFFFFFFF)) + ") of query " + std::to_string(f.where) +
             " outside [0, " + std::to_string(f.bound) + "] (n_kv " + std::to_string(f.bound) + ")";
    case kErrExpert:
      return op + ": id " + std::to_string(static_cast<int32_t>(f.value & 0xFFFFFFFF)) + " of token " +
             std::to_string(f.where) + ", slot " + std::to_string(f.value >> 32) + " outside [0, " +
             std::to_string(f.bound) + ")";
    default:
      return op + ": kernel error code " + std::to_string(f.code);
  }
}

}  // namespace loom::cuda
