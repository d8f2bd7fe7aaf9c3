/* Test-only device extension of the sim plugin (never part of the loom ABI):
 * how many sim computes ran at the same time, so a test can check that
 * work on several sim devices overlapped without measuring a time. Every
 * sim device returns the same table; the counters are plugin-wide.
 * Version 2 appends the busy intervals of the sim streams (steady_clock
 * nanoseconds, the clock std::chrono::steady_clock reads in the host):
 * a test compares them with when other devices' work ran. A caller asking
 * for version 1 gets the same table and reads only its first members. */
#ifndef LOOM_SIM_TRACE_H
#define LOOM_SIM_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define LOOM_SIM_EXT_TRACE "loom.sim.trace"
#define LOOM_SIM_EXT_TRACE_VERSION 2u

/* One compute work item (one split's nodes) as it ran on a sim stream. */
typedef struct loom_sim_trace_interval {
  uint32_t device;     /* sim device index (sim<device>) */
  int64_t begin_ns;    /* steady_clock::now() when its first node started */
  int64_t end_ns;      /* ... when its last node finished */
  char last_node[64];  /* name of its last computed node (truncated) */
} loom_sim_trace_interval_t;

typedef struct loom_sim_ext_trace {
  size_t struct_size;
  /* Most compute work items (one split's nodes) running at once on sim streams. */
  uint64_t (*max_concurrent)(void);
  /* Compute work items that started while another one was running. */
  uint64_t (*overlapped)(void);
  /* Compute work items run. */
  uint64_t (*computes)(void);
  /* Zero every counter and drop the recorded intervals (call while no sim
   * work is queued). */
  void (*reset)(void);
  /* v2: record the interval of every compute work item from now on (on
   * != 0) or stop; off at init. At most 65536 are kept (later ones are
   * counted by computes() but not recorded). */
  void (*set_recording)(int on);
  /* v2: copy up to max recorded intervals, in the order they finished,
   * into out (may be NULL when max is 0); returns how many are recorded. */
  size_t (*intervals)(loom_sim_trace_interval_t* out, size_t max);
} loom_sim_ext_trace_t;

#endif
