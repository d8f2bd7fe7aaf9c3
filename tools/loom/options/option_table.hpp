// The one table of the `loom` commands and their options: name, short
// flag, value, how the value is checked, the help line, and which commands
// take it. Every command parses its arguments through it (option_parse.hpp)
// and every --help is written from it (help.hpp), so a flag parses, is
// refused and is described the same way wherever it appears.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom::cli {

// The commands, as bits of OptionSpec::commands.
enum Command : uint32_t {
  kDevices = 1u << 0,
  kCheck = 1u << 1,
  kRun = 1u << 2,
  kPlan = 1u << 3,
  kBench = 1u << 4,
  kTokenize = 1u << 5,
  kChat = 1u << 6,
  kConformance = 1u << 7,
  kProfile = 1u << 8,
  kServe = 1u << 9,
  kWorker = 1u << 10,
  kEveryCommand = (1u << 11) - 1,
};

// How a value is checked (the error for a bad one is a bad-arguments exit).
enum class ValueKind {
  kSwitch,    // no value
  kText,      // any text, empty included
  kName,      // non-empty text (a file, a device list)
  kInt,       // a whole decimal integer in [lo, hi]
  kIntList,   // one or more such integers separated by commas
  kNumber,    // a finite number in [lo, hi] (above lo when lo_open)
  kChoice,    // one of the '|'-separated words of `value`
  kSplit,     // proportions >= 0 separated by commas, not all 0
  kOverride,  // REGEX=DEVICE
};

struct OptionSpec {
  const char* name;        // "--threads"
  const char* short_flag;  // "-t", or nullptr
  const char* value;       // the value's placeholder in help ("N"); nullptr for a switch
  ValueKind kind;
  uint32_t commands;       // Command bits
  const char* help;        // one paragraph; {archs} and {chat_formats} are filled from llm/
  double lo = 0, hi = 0;   // kInt, kIntList, kNumber
  const char* expect = nullptr;  // what a bad value is told it should be ("an integer >= 1")
  bool repeatable = false;       // every value kept (else the last wins)
  bool hidden = false;           // not in help (the conformance child's flags)
  bool lo_open = false;          // kNumber: lo itself is refused
};

struct CommandSpec {
  const char* name;
  Command bit;
  const char* summary;  // one paragraph for `loom --help` and `loom <command> --help`
  const char* notes;    // more, after the options (nullptr: none)
};

const std::vector<OptionSpec>& option_table();
const std::vector<CommandSpec>& command_table();

// The row of `flag` (a name or short flag) for `command`; nullptr if the
// command does not take it.
const OptionSpec* find_option(Command command, const std::string& flag);
// The command called `name`; nullptr if none.
const CommandSpec* find_command(const std::string& name);

}  // namespace loom::cli
