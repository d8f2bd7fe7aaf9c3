// The `loom` help, written from the option and command tables
// (option_table.hpp): `loom --help` (every command and option) and
// `loom <command> --help` (that command's). Names that live in llm/ (the
// architectures, the chat formats) come from there.
#pragma once

#include <string>

#include "options/option_table.hpp"

namespace loom::cli {

std::string main_help();
std::string command_help(const CommandSpec& command);

}  // namespace loom::cli
