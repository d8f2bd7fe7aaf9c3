// Device side of fault.h: the first thread to find bad input claims the
// word with atomicCAS and fills in what it saw; later faults are dropped.
#pragma once

#include "fault.h"

namespace loom::cuda {

__device__ inline void report_fault(KernelFault* f, int32_t code, int32_t op, int64_t where, int64_t value,
                                    int64_t bound) {
  if (atomicCAS(&f->code, 0, code) != 0) return;
  f->op = op;
  f->where = where;
  f->value = value;
  f->bound = bound;
}

}  // namespace loom::cuda
