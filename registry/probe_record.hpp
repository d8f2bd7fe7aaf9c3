// What probing one plugin file in a child process found, and its text form:
// the child writes it to the parent through a pipe and the probe cache
// stores it on disk. One "<field> <value>" per line; values never hold a
// newline (escaped). Internal to libloom.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/registry/registry.hpp"

namespace loom::registry {

struct ProbeRecord {
  // The child ran the whole load pipeline (negotiate, init, device list,
  // shutdown) and exited normally: the file is safe to load in process.
  bool finished = false;
  // When not finished: what went wrong, e.g. "crashed with SIGSEGV in init".
  std::string failure;
  // Furthest step the child started: open, query, score, init, devices,
  // shutdown (the step a crash or hang happened in).
  std::string step;
  // The child's record of the candidate (valid when finished).
  Stage stage = Stage::kFound;
  Fate fate = Fate::kFailed;
  std::string reason;
  uint32_t abi_version = 0;
  int32_t score = -1;
  std::string plugin_version;
  std::vector<std::string> devices;  // names of the devices it listed
  // What the answer depended on, one line each (registry/probe_inputs.hpp);
  // the cache uses the record only while every one still holds.
  std::vector<std::string> inputs;
  // The helper itself did not start or run (says nothing about the file;
  // never cached).
  bool helper_failed = false;
};

// The candidate's outcome fields (stage, fate, reason, ABI, score,
// version) into a record, and back.
void record_outcome(const Candidate& from, ProbeRecord* to);
void apply_outcome(const ProbeRecord& from, Candidate* to);

// The record as text (ends with "end\n").
std::string format_probe_record(const ProbeRecord& r);
// Parse text written by format_probe_record or by a child that stopped
// part-way ("step" lines only). *complete is set when the "end" line was
// read. Unknown lines are ignored (a newer writer).
ProbeRecord parse_probe_record(const std::string& text, bool* complete);
// One "step <name>\n" line, written by the child before each step.
std::string format_probe_step(const char* step);
// One "input <line>\n" line (an input of registry/probe_inputs.hpp).
std::string format_probe_input(const std::string& input);

}  // namespace loom::registry
