/* Test-only device extension of the sim plugin (never part of the loom ABI):
 * how many sim computes ran at the same time, so a test can check that
 * work on several sim devices overlapped without measuring a time. Every
 * sim device returns the same table; the counters are plugin-wide. */
#ifndef LOOM_SIM_TRACE_H
#define LOOM_SIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define LOOM_SIM_EXT_TRACE "loom.sim.trace"
#define LOOM_SIM_EXT_TRACE_VERSION 1u

typedef struct loom_sim_ext_trace {
  size_t struct_size;
  /* Most compute work items (one split's nodes) running at once on sim streams. */
  uint64_t (*max_concurrent)(void);
  /* Compute work items that started while another one was running. */
  uint64_t (*overlapped)(void);
  /* Compute work items run. */
  uint64_t (*computes)(void);
  /* Zero every counter (call while no sim work is queued). */
  void (*reset)(void);
} loom_sim_ext_trace_t;

#endif
