// Test helper: run the built `loom` binary with a clean loom environment
// (plus `env` assignments) and collect its exit code and output.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace loom::test {

// The python that runs the repository's tools in tests (with python3-numpy).
inline constexpr char kPython[] = "/usr/bin/python3";

// stories260K.gguf in $LOOM_MODELS_DIR, else in ../shared/models.
inline std::string stories_model() {
  const char* env = std::getenv("LOOM_MODELS_DIR");
  return std::string(env && *env ? env : LOOM_TEST_SOURCE_DIR "/../shared/models") +
         "/stories260K.gguf";
}

struct LoomResult {
  int exit_code = -1;
  std::string out;  // stdout, and stderr too when merged
};

// timeout_s > 0: killed after that many seconds (exit code 124, like timeout(1)).
inline LoomResult run_loom(const std::string& args, const std::string& env = "", bool merge_stderr = true,
                           int timeout_s = 0) {
  const std::string limit = timeout_s > 0 ? "timeout -k 5 " + std::to_string(timeout_s) + " " : "";
  const std::string cmd = "env -u LOOM_PLUGIN_PATH -u LOOM_PLUGINS_SELECT -u LOOM_PLUGINS_DISABLE "
                          "-u LOOM_DEVICES -u LOOM_LOG -u LOOM_NULL_DEVICES -u LOOM_CPU_VARIANT -u LOOM_CPU_MASK "
                          "-u LOOM_CHECK_FINITE -u LOOM_LLM_FUSED_ATTN " +
                          env + " " + limit + std::string(LOOM_TEST_BIN_DIR) + "/loom " + args +
                          (merge_stderr ? " 2>&1" : " 2>/dev/null");
  LoomResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace loom::test
