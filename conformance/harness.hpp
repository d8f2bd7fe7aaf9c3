// The conformance suite's device side: the fixture every case derives
// from (OpTest): tensors in a Context with host mirrors, views, one graph run
// on the device under test through an Executor, results read back.
//
// The device is given by whoever runs the case (suite.hpp: test_ops picks it
// from LOOM_TEST_DEVICE, `loom conformance` from --device/--plugin). Inside
// a case, run() first asks the device about every compute node
// (supports_op): a graph it declines is not run, the run is recorded as
// "not claimed" and its checks are void (check.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "conformance/reference.hpp"
#include "loom/sched/executor.hpp"
#include "loom/runtime/graph.hpp"
#include "loom/runtime/ops.hpp"
#include "loom/registry/registry.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::conformance {

// How a MUL_MAT with a quantized A may treat B. kExact: B as given (the
// reference kernels); kRounded: B rounded to 8-bit blocks first (ggml's
// vec_dot rule; the cpu plugin's int8 path); kEither: a result that matches
// either reference passes (what `loom conformance` accepts from a device).
enum class ActQ8 { kExact, kRounded, kEither };

// Sets the device's thread count for a scope and restores the previous one.
class ScopedThreads {
 public:
  ScopedThreads(registry::Device* dev, int n);
  ~ScopedThreads();
  const Status& status() const { return status_; }

 private:
  registry::Device* dev_;
  int previous_ = 0;
  Status status_;
};

// ------------------------------------------------------ fixture
// How a source tensor is laid out in memory. kPermuted: rows strided (dims 1
// and 2 swapped in memory); kTransposed: elements strided within a row
// (plain types only); kPadded: see OpTest::padded.
enum class Layout { kDense, kPadded, kPermuted, kTransposed };
const char* layout_name(Layout l);
// Every layout a source of type t can have.
std::vector<Layout> layouts_for(loom_type_t t);

// The fixture of every case. A case is a subclass whose body() holds the
// checks (suite.hpp's LOOM_CASE writes it). Not thread-safe; one case at a
// time per object.
class OpTest {
 public:
  virtual ~OpTest() = default;
  // Runs before body() with dev_ set; may LOOM_SKIP().
  virtual void set_up() {}
  virtual void body() {}

  // Whether dev_ is the cpu plugin (the reference device: it must claim
  // every op and type of the suite).
  bool reference_device() const { return dev_ != nullptr && dev_->name() == "cpu"; }

  void seed(uint32_t s) { rng_.seed(s); }
  // n uniform floats in [lo, hi).
  std::vector<float> rand_floats(int64_t n, float lo, float hi);
  int64_t rand_int(int64_t lo, int64_t hi);  // inclusive

  // A leaf of `type` and shape `ne` holding `vals` (encoded with
  // loom::from_float; the mirror holds the decoded values).
  Operand input_values(loom_type_t type, const Shape& ne, const std::vector<float>& vals);
  // A leaf of random values in [lo, hi) (of a weight type: random blocks).
  Operand input(loom_type_t type, const Shape& ne, float lo = -1.0f, float hi = 1.0f);
  // An I32/I64 leaf.
  Operand input_ints(loom_type_t type, const Shape& ne, const std::vector<int64_t>& vals);

  // Views on device and host; the device view's extents and strides must
  // agree with the host's.
  Operand permute(const Operand& a, int a0, int a1, int a2, int a3);
  Operand transpose(const Operand& a);
  Operand view(const Operand& a, const Shape& ne, const std::array<size_t, 3>& nb123,
               size_t offset);
  // A view of `ne` inside a larger base of random values: every row padded by
  // `pad0` elements, `pad1` extra rows per matrix, starting `skip_rows` rows
  // in. Exercises offsets and row strides that are not the dense ones.
  Operand padded(loom_type_t type, const Shape& ne, int64_t pad0, int64_t pad1,
                 int64_t skip_rows = 1, float lo = -1.0f, float hi = 1.0f);

  // A source of `type` and logical shape `ne` in the given layout.
  Operand make(loom_type_t type, const Shape& ne, Layout layout, float lo = -1.0f, float hi = 1.0f);

  // Build the graph of `outputs`, create an executor, allocate, upload every
  // leaf made by input*(), run.
  Status run(const std::vector<Tensor*>& outputs);
  // Upload the inputs again and run the same graph (e.g. after a thread
  // count change).
  Status rerun();
  // run() with 1 thread, then rerun() with 3: every output's bytes must be
  // identical (a failure is added otherwise). Results are left from the
  // 3-thread run. On a device without loom.threads: run() then rerun(),
  // which must agree byte for byte; on a device other than the cpu plugin
  // with loom.threads: the same at 3 threads (its sums may be split by
  // thread count, as OpenBLAS does).
  Status run_threads(const std::vector<Tensor*>& outputs);
  // Whether the device under test has the loom.threads extension.
  bool has_threads() const;
  // Raw dense bytes / decoded values of a tensor after run(). A view is read
  // through its base (the base must be an output of the graph).
  std::vector<uint8_t> read_bytes(const Tensor* t);
  std::vector<double> read(const Tensor* t);

  Context ctx_;
  std::mt19937 rng_{0};
  registry::Device* dev_ = nullptr;
  ActQ8 act_q8_ = ActQ8::kExact;
  // The registry record of dev_'s plugin file (ABI checks), or nullptr.
  const registry::Candidate* candidate_ = nullptr;
  // Op names (op_name()) whose graphs run; empty: all (`--ops`).
  std::vector<std::string> only_ops_;

 private:
  Status upload();
  // Inside a case: report the graph's compute nodes to the case's sink and
  // refuse (UNIMPLEMENTED) a graph with a node the device does not claim.
  Status claim(const Graph& g);
  std::unordered_map<const Tensor*, std::shared_ptr<HostBase>> host_data_;
  std::optional<Graph> graph_;
  std::unique_ptr<Executor> ex_;  // declared last: released before the context
};

// Expected contents of dst's base after writing `vals` (logical order of the
// view dst) into the view; compares with the base bytes read back. Elements
// outside the view must be unchanged; written float elements within one
// rounding of the value, written quantized blocks per check_quant_block.
// "f16 x f32 -> f32": the source types and the result type of a node.
std::string node_types(const loom_tensor_t* n);

void expect_written(const HostView& dst, const std::vector<double>& vals,
                    const std::vector<uint8_t>& got_base_bytes, const std::string& what);

}  // namespace loom::conformance
