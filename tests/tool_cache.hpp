// Test helper: files a tool makes (a synthetic model from tools/*.py), made
// once per build tree instead of once per test process. ctest runs each case
// in its own process, so a suite that made its models in SetUpTestSuite paid
// for them once per case (SparseFfn: ~6 s of numpy per case).
//
// The folder is LOOM_TEST_BIN_DIR/../test-cache/<stem>-<key>, where the key
// hashes the command and the bytes of every input file named (the tool
// itself, the model it borrows a vocab from), so editing the tool or its
// flags makes a new folder. The command writes into a private temporary
// folder ({dir} in the command) that is renamed into place only after it
// succeeded: a process never sees half a folder, and two processes making
// the same folder at once both succeed (the second rename loses and its
// copy is removed).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

namespace loom::test {

// FNV-1a, 64 bits: a cache key, not a security boundary.
inline uint64_t tool_cache_hash(uint64_t h, const std::string& bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// Runs `command` (every "{dir}" replaced by a fresh folder) unless a folder
// made by the same command from the same inputs exists; returns that folder,
// or "" with *why set when the command or the filesystem failed.
inline std::string cached_tool_dir(const std::string& stem, const std::string& command,
                                   const std::vector<std::string>& inputs, std::string* why) {
  namespace fs = std::filesystem;
  uint64_t h = tool_cache_hash(14695981039346656037ULL, command);
  for (const std::string& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      *why = "cannot read " + path;
      return "";
    }
    h = tool_cache_hash(h, path + '\0' + std::string(std::istreambuf_iterator<char>(in), {}));
  }
  char key[17];
  std::snprintf(key, sizeof key, "%016llx", static_cast<unsigned long long>(h));
  const fs::path root = fs::path(LOOM_TEST_BIN_DIR).parent_path() / "test-cache";
  const fs::path dir = root / (stem + "-" + key);
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return dir.string();
  const fs::path tmp = root / (stem + "-" + key + ".tmp" + std::to_string(getpid()));
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp, ec) && ec) {
    *why = "cannot make " + tmp.string() + ": " + ec.message();
    return "";
  }
  std::string cmd = command;
  for (size_t at = cmd.find("{dir}"); at != std::string::npos; at = cmd.find("{dir}", at)) {
    cmd.replace(at, 5, tmp.string());
    at += tmp.string().size();
  }
  if (std::system(cmd.c_str()) != 0) {
    fs::remove_all(tmp, ec);
    *why = "failed: " + cmd;
    return "";
  }
  fs::rename(tmp, dir, ec);
  if (ec) {
    fs::remove_all(tmp, ec);  // another process renamed its copy first
    if (!fs::is_directory(dir)) {
      *why = "cannot rename " + tmp.string() + " to " + dir.string();
      return "";
    }
  }
  return dir.string();
}

}  // namespace loom::test
