// libFuzzer entry for the GGUF parser: any input must give a status or a
// GgufFile whose every exposed range lies inside the input.
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -DLOOM_BUILD_FUZZ=ON && cmake --build build-fuzz
//   ./build-fuzz/gguf_fuzz -max_total_time=60 corpus/
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "loom/runtime/gguf.hpp"

namespace {

volatile uint8_t g_sink;  // keeps the touches below from being optimised out

void touch(const void* p, size_t n) {
  if (n == 0) return;
  const uint8_t* b = static_cast<const uint8_t*>(p);
  g_sink = b[0];
  g_sink = b[n - 1];
}

void walk(const loom::GgufValue& v, int depth) {
  if (depth > loom::kGgufMaxArrayDepth) std::abort();  // the parser promised a bound
  if (v.type() == loom::GgufType::kString) touch(v.as_str().data(), v.as_str().size());
  if (v.type() != loom::GgufType::kArray) return;
  for (const auto& s : v.strings()) touch(s.data(), s.size());
  for (const auto& e : v.arrays()) walk(e, depth + 1);
  if (v.size() > 0 && v.raw_data() != nullptr) {
    g_sink = static_cast<uint8_t>(v.elem_int(0) + v.elem_int(v.size() - 1));
    g_sink = v.elem_float(v.size() - 1) > 0.0 ? 1 : 0;  // a cast of NaN/huge values would be UB
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = loom::GgufFile::parse(data, size, "fuzz");
  if (!f.ok()) return 0;
  for (const loom::GgufKv& kv : f->kvs()) {
    touch(kv.key.data(), kv.key.size());
    walk(kv.value, 1);
    (void)f->get_int(kv.key);
    (void)f->get_arr_str(kv.key);
    (void)f->get_arr_f32(kv.key);
    (void)f->get_arr_int(kv.key);
  }
  for (const loom::GgufTensorInfo& t : f->tensors()) {
    touch(t.data, t.nbytes);
    if (f->find_tensor(t.name) != &t) std::abort();
  }
  return 0;
}
