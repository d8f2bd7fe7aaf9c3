#include "blas_test_util.hpp"

#include <sstream>
#include <unordered_set>

namespace loom::blastest {

registry::Registry* test_registry() {
  static registry::Registry* reg = [] {
    registry::Options opts;
    opts.paths = {LOOM_TEST_PLUGIN_DIR};
    opts.use_env = false;
    opts.search_library_dir = false;
    opts.search_install_dir = false;
    return registry::Registry::load(opts).release();
  }();
  return reg;
}

registry::Device* device(const char* name) {
  return test_registry() ? test_registry()->device(name) : nullptr;
}

std::string registry_report() {
  std::ostringstream os;
  for (const registry::Candidate& c : test_registry()->candidates()) {
    os << "\n  " << c.path << ": " << registry::fate_name(c.fate) << " at "
       << registry::stage_name(c.stage) << " " << c.reason;
  }
  return os.str();
}

void BlasTest::SetUp() {
  cpu_ = device("cpu");
  blas_ = device("blas");
  if (blas_ == nullptr) {
    GTEST_SKIP() << "blas device did not load from " << LOOM_TEST_PLUGIN_DIR << registry_report();
  }
  ASSERT_NE(cpu_, nullptr) << "cpu plugin not loaded from " << LOOM_TEST_PLUGIN_DIR
                           << registry_report();
  dev_ = blas_;
}

namespace {

// Clear data/buffer of every tensor reachable from `outputs`: an Executor
// does not unplace its graph when destroyed, so without this the next
// executor would take the old (freed) placements for preallocated leafs.
void forget_placements(const std::vector<Tensor*>& outputs) {
  std::unordered_set<loom_tensor_t*> seen;
  std::vector<loom_tensor_t*> todo(outputs.begin(), outputs.end());
  while (!todo.empty()) {
    loom_tensor_t* t = todo.back();
    todo.pop_back();
    if (t == nullptr || !seen.insert(t).second) continue;
    t->data = nullptr;
    t->buffer = nullptr;
    for (loom_tensor_t* s : t->src) todo.push_back(s);
    todo.push_back(t->view_src);
  }
}

}  // namespace

Status BlasTest::run_on(registry::Device* dev, const std::vector<Tensor*>& outputs) {
  forget_placements(outputs);
  registry::Device* saved = dev_;
  dev_ = dev;
  Status st = run(outputs);
  dev_ = saved;
  return st;
}

}  // namespace loom::blastest
