#include "conformance/harness.hpp"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "common/op_info.h"
#include "common/type_traits.h"
#include "loom/runtime/types.hpp"

namespace loom::conformance {

// ------------------------------------------------------ the device

namespace {

const loom_ext_threads_t* threads_ext(registry::Device* dev) {
  return static_cast<const loom_ext_threads_t*>(dev->extension(LOOM_EXT_THREADS, LOOM_EXT_THREADS_VERSION));
}

}  // namespace

ScopedThreads::ScopedThreads(registry::Device* dev, int n) : dev_(dev) {
  const loom_ext_threads_t* ext = threads_ext(dev);
  if (ext == nullptr) {
    status_ = unimplemented("[test.threads] device has no loom.threads extension");
    return;
  }
  previous_ = ext->get_threads(dev->raw());
  status_ = dev->set_threads(n);
}

ScopedThreads::~ScopedThreads() {
  if (previous_ > 0) (void)dev_->set_threads(previous_);
}

// ------------------------------------------------------ fixture

bool OpTest::has_threads() const { return threads_ext(dev_) != nullptr; }

std::vector<float> OpTest::rand_floats(int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng_);
  return v;
}

int64_t OpTest::rand_int(int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
}

namespace {

std::vector<int64_t> dims_of(const Shape& ne) { return {ne[0], ne[1], ne[2], ne[3]}; }

// Every leaf gets a name ("in0", "in1", ...): readable messages.
std::string next_name() {
  static int counter = 0;
  return "in" + std::to_string(counter++);
}

void check_same_layout(const Tensor* t, const HostView& h, const char* what) {
  for (int d = 0; d < 4; ++d) {
    if (t->ne[d] != h.ne[d] || t->nb[d] != h.nb[d]) {
      throw std::runtime_error(std::string(what) + ": device view " + t->describe() +
                               " disagrees with the host mirror " + shape_str(h.ne));
    }
  }
}

}  // namespace

Operand OpTest::input_values(loom_type_t type, const Shape& ne, const std::vector<float>& vals) {
  // Weight types have no encoder: input() fills their bytes (vals empty).
  if (static_cast<int64_t>(vals.size()) != nelements(ne) && !(vals.empty() && is_weight_quant(type))) {
    throw std::invalid_argument("input_values: count");
  }
  Tensor* t = unwrap(ctx_.new_tensor(type, dims_of(ne), next_name()), "new_tensor");
  t->flags |= LOOM_TENSOR_FLAG_INPUT;
  auto base = std::make_shared<HostBase>();
  base->type = type;
  base->ne = ne;
  base->bytes.resize(row_bytes(type, ne[0]) * static_cast<size_t>(ne[1] * ne[2] * ne[3]));
  if (!vals.empty()) loom::from_float(type, vals.data(), base->bytes.data(), nelements(ne));
  base->values = decode(type, base->bytes.data(), nelements(ne));
  host_data_[t] = base;
  return Operand{t, HostView{base, type, ne, dense_strides(type, ne), 0}};
}

Operand OpTest::input(loom_type_t type, const Shape& ne, float lo, float hi) {
  if (!is_weight_quant(type)) return input_values(type, ne, rand_floats(nelements(ne), lo, hi));
  Operand r = input_values(type, ne, {});
  random_weight_blocks(type, nelements(ne) / block_elems(type), rng_, r.h.base->bytes.data());
  r.h.base->values = decode(type, r.h.base->bytes.data(), nelements(ne));
  return r;
}

Operand OpTest::input_ints(loom_type_t type, const Shape& ne, const std::vector<int64_t>& vals) {
  if (static_cast<int64_t>(vals.size()) != nelements(ne)) throw std::invalid_argument("input_ints: count");
  Tensor* t = unwrap(ctx_.new_tensor(type, dims_of(ne), next_name()), "new_tensor");
  t->flags |= LOOM_TENSOR_FLAG_INPUT;
  auto base = std::make_shared<HostBase>();
  base->type = type;
  base->ne = ne;
  const size_t es = block_bytes(type);
  base->bytes.resize(es * vals.size());
  for (size_t i = 0; i < vals.size(); ++i) {
    if (type == LOOM_TYPE_I64) {
      std::memcpy(base->bytes.data() + es * i, &vals[i], 8);
    } else {
      const auto v = static_cast<int32_t>(vals[i]);
      std::memcpy(base->bytes.data() + es * i, &v, 4);
    }
  }
  base->values = decode(type, base->bytes.data(), nelements(ne));
  host_data_[t] = base;
  return Operand{t, HostView{base, type, ne, dense_strides(type, ne), 0}};
}

Operand OpTest::permute(const Operand& a, int a0, int a1, int a2, int a3) {
  Operand r{unwrap(ctx_.permute(a.t, a0, a1, a2, a3), "permute"), host_permute(a.h, a0, a1, a2, a3)};
  check_same_layout(r.t, r.h, "permute");
  return r;
}

Operand OpTest::transpose(const Operand& a) {
  Operand r{unwrap(ctx_.transpose(a.t), "transpose"), host_transpose(a.h)};
  check_same_layout(r.t, r.h, "transpose");
  return r;
}

Operand OpTest::view(const Operand& a, const Shape& ne, const std::array<size_t, 3>& nb123, size_t offset) {
  Tensor* t = unwrap(ctx_.view(a.t, {ne[0], ne[1], ne[2], ne[3]}, {nb123[0], nb123[1], nb123[2]}, offset),
                     "view");
  Operand r{t, host_view(a.h, ne, nb123, offset)};
  check_same_layout(r.t, r.h, "view");
  return r;
}

Operand OpTest::padded(loom_type_t type, const Shape& ne, int64_t pad0, int64_t pad1, int64_t skip_rows,
                       float lo, float hi) {
  if (pad0 % block_elems(type) != 0) throw std::invalid_argument("padded: pad0 must be whole blocks");
  const Shape big{ne[0] + pad0, ne[1] + pad1 + skip_rows, ne[2], ne[3]};
  Operand base = input(type, big, lo, hi);
  const Strides nb = dense_strides(type, big);
  return view(base, ne, {nb[1], nb[2], nb[3]}, static_cast<size_t>(skip_rows) * nb[1]);
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::kDense: return "dense";
    case Layout::kPadded: return "padded";
    case Layout::kPermuted: return "permuted";
    default: return "transposed";
  }
}

std::vector<Layout> layouts_for(loom_type_t t) {
  if (is_quant(t)) return {Layout::kDense, Layout::kPadded, Layout::kPermuted};
  return {Layout::kDense, Layout::kPadded, Layout::kPermuted, Layout::kTransposed};
}

Operand OpTest::make(loom_type_t type, const Shape& ne, Layout layout, float lo, float hi) {
  switch (layout) {
    case Layout::kDense:
      return input(type, ne, lo, hi);
    case Layout::kPadded:
      return padded(type, ne, block_elems(type), 2, 1, lo, hi);
    case Layout::kPermuted:
      return permute(input(type, {ne[0], ne[2], ne[1], ne[3]}, lo, hi), 0, 2, 1, 3);
    default:
      return transpose(input(type, {ne[1], ne[0], ne[2], ne[3]}, lo, hi));
  }
}

Status OpTest::run_threads(const std::vector<Tensor*>& outputs) {
  std::vector<std::vector<uint8_t>> first;
  if (!has_threads()) {
    // No thread count to vary: run twice, the results must be identical.
    LOOM_RETURN_IF_ERROR(run(outputs));
    for (const Tensor* t : outputs) first.push_back(read_bytes(t));
    LOOM_RETURN_IF_ERROR(rerun());
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (read_bytes(outputs[i]) != first[i]) {
        LOOM_ADD_FAILURE() << "output '" << outputs[i]->name << "' differs between two runs on " << dev_->name();
      }
    }
    return Status();
  }
  if (!reference_device()) {
    // Another CPU-like device (blas: OpenBLAS splits sums by thread count)
    // need not give the same bits for 1 and 3 threads, only the same bits
    // twice at 3 threads, within tolerance of the reference.
    ScopedThreads three(dev_, 3);
    LOOM_RETURN_IF_ERROR(three.status());
    LOOM_RETURN_IF_ERROR(run(outputs));
    for (const Tensor* t : outputs) first.push_back(read_bytes(t));
    LOOM_RETURN_IF_ERROR(rerun());
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (read_bytes(outputs[i]) != first[i]) {
        LOOM_ADD_FAILURE() << "output '" << outputs[i]->name << "' differs between two runs with 3 threads";
      }
    }
    return Status();
  }
  {
    ScopedThreads one(dev_, 1);
    LOOM_RETURN_IF_ERROR(one.status());
    LOOM_RETURN_IF_ERROR(run(outputs));
    for (const Tensor* t : outputs) first.push_back(read_bytes(t));
  }
  ScopedThreads three(dev_, 3);
  LOOM_RETURN_IF_ERROR(three.status());
  LOOM_RETURN_IF_ERROR(rerun());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (read_bytes(outputs[i]) != first[i]) {
      LOOM_ADD_FAILURE() << "output '" << outputs[i]->name << "' differs between 1 and 3 threads";
    }
  }
  return Status();
}

Status OpTest::upload() {
  // Only the current graph's leafs: earlier graphs' memory is gone.
  for (Tensor* t : graph_->leafs()) {
    auto it = host_data_.find(t);
    if (it == host_data_.end()) continue;
    LOOM_RETURN_IF_ERROR(tensor_set(t, it->second->bytes.data(), it->second->bytes.size()));
  }
  return Status();
}

std::string node_types(const loom_tensor_t* n) {
  std::string s;
  for (const loom_tensor_t* src : n->src) {
    if (src == nullptr) continue;
    s += (s.empty() ? "" : " x ") + std::string(common::type_name(src->type));
  }
  return s + " -> " + common::type_name(n->type);
}

Status OpTest::claim(const Graph& g) {
  Sink* sink = current_sink();
  if (sink == nullptr) return Status();  // outside a case: run as asked
  std::vector<std::pair<std::string, std::string>> keys;
  std::string unclaimed;
  for (const Tensor* n : g.nodes()) {
    if (common::is_view_op(n->op)) continue;
    const std::string op = common::op_name(n->op);
    keys.emplace_back(op, node_types(n));
    std::string why;
    if (!only_ops_.empty() && std::find(only_ops_.begin(), only_ops_.end(), op) == only_ops_.end()) {
      why = "not in --ops";
    } else if (!dev_->supports_op(n)) {
      why = "supports_op false";
    }
    if (!why.empty()) unclaimed += (unclaimed.empty() ? "" : "; ") + op + " " + keys.back().second + " (" + why + ")";
  }
  sink->begin_run(std::move(keys), unclaimed);
  if (unclaimed.empty()) return Status();
  return unimplemented("[conformance.run] not claimed by " + dev_->name() + ": " + unclaimed);
}

Status OpTest::run(const std::vector<Tensor*>& outputs) {
  ex_.reset();
  graph_.reset();
  auto g = Graph::build(outputs);
  if (!g.ok()) return g.status();
  graph_.emplace(std::move(g).value());
  LOOM_RETURN_IF_ERROR(claim(*graph_));
  auto ex = Executor::create(dev_);
  if (!ex.ok()) return ex.status();
  ex_ = std::move(ex).value();
  LOOM_RETURN_IF_ERROR(ex_->allocate(*graph_));
  LOOM_RETURN_IF_ERROR(upload());
  return ex_->compute(*graph_);
}

Status OpTest::rerun() {
  if (!ex_ || !graph_) return invalid_argument("[test.rerun] run() first");
  LOOM_RETURN_IF_ERROR(upload());
  return ex_->compute(*graph_);
}

std::vector<uint8_t> OpTest::read_bytes(const Tensor* t) {
  const Tensor* base = t->view_src ? static_cast<const Tensor*>(t->view_src) : t;
  while (base->view_src) base = static_cast<const Tensor*>(base->view_src);
  std::vector<uint8_t> raw(base->nbytes());
  {
    Status st = tensor_get(base, raw.data(), raw.size());
    if (!st.ok()) throw std::runtime_error("read_bytes: " + st.to_string());
  }
  if (base == t) return raw;
  // Gather the view's elements (blocks) into dense order.
  const auto type = static_cast<loom_type_t>(t->type);
  const size_t bb = block_bytes(type);
  const int64_t nblk = t->ne[0] / block_elems(type);
  const size_t off = static_cast<size_t>(static_cast<const char*>(t->data) - static_cast<const char*>(base->data));
  std::vector<uint8_t> out;
  out.reserve(bb * static_cast<size_t>(nblk * t->ne[1] * t->ne[2] * t->ne[3]));
  for (int64_t i3 = 0; i3 < t->ne[3]; ++i3)
    for (int64_t i2 = 0; i2 < t->ne[2]; ++i2)
      for (int64_t i1 = 0; i1 < t->ne[1]; ++i1)
        for (int64_t b = 0; b < nblk; ++b) {
          const size_t p = off + static_cast<size_t>(b) * t->nb[0] + static_cast<size_t>(i1) * t->nb[1] +
                           static_cast<size_t>(i2) * t->nb[2] + static_cast<size_t>(i3) * t->nb[3];
          if (p + bb > raw.size()) throw std::runtime_error("read_bytes: view outside its base");
          out.insert(out.end(), raw.begin() + static_cast<std::ptrdiff_t>(p),
                     raw.begin() + static_cast<std::ptrdiff_t>(p + bb));
        }
  return out;
}

std::vector<double> OpTest::read(const Tensor* t) {
  const std::vector<uint8_t> bytes = read_bytes(t);
  return decode(static_cast<loom_type_t>(t->type), bytes.data(), t->nelements());
}

// ------------------------------------------------------ written views

namespace {

// One rounding of `want` to t: equal infinities match; f16 overflows to inf
// at 65520 (round to nearest even), as IEEE conversion does.
bool written_ok(loom_type_t t, double got, double want) {
  if (got == want) return true;
  if (t == LOOM_TYPE_F16 && std::fabs(want) >= 65520.0) return got == std::copysign(INFINITY, want);
  return std::fabs(got - want) <= conv_tol(t, want);
}

}  // namespace

void expect_written(const HostView& dst, const std::vector<double>& vals,
                    const std::vector<uint8_t>& got_base_bytes, const std::string& what) {
  const HostBase& base = *dst.base;
  if (got_base_bytes.size() != base.bytes.size()) {
    LOOM_ADD_FAILURE() << what << ": read " << got_base_bytes.size() << " bytes, base has " << base.bytes.size();
    return;
  }
  const int64_t n = nelements(base.ne);
  std::vector<double> expect = base.values;
  std::vector<char> written(static_cast<size_t>(n), 0);
  int64_t k = 0;
  for_each_index(dst.ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const int64_t bi = dst.base_index(i0, i1, i2, i3);
    expect[bi] = vals[static_cast<size_t>(k++)];
    written[bi] = 1;
  });
  const loom_type_t t = base.type;
  const size_t bb = block_bytes(t);
  const int64_t be = block_elems(t);
  const std::vector<double> got = decode(t, got_base_bytes.data(), n);
  int64_t bad = 0;
  std::ostringstream os;
  for (int64_t blk = 0; blk < n / be; ++blk) {
    bool any = false;
    for (int64_t j = 0; j < be; ++j) any = any || written[blk * be + j];
    std::string err;
    if (!any) {
      if (std::memcmp(got_base_bytes.data() + blk * bb, base.bytes.data() + blk * bb, bb) != 0) {
        err = "changed outside the written view";
      }
    } else if (is_quant(t)) {
      err = check_quant_block(t, expect.data() + blk * be, got_base_bytes.data() + blk * bb);
    } else if (!written_ok(t, got[blk], expect[blk])) {
      std::ostringstream e;
      e << "got " << got[blk] << " want " << expect[blk];
      err = e.str();
    }
    if (err.empty()) continue;
    if (bad < 8) os << "\n  block/element " << blk * be << " of base " << shape_str(base.ne) << ": " << err;
    ++bad;
  }
  if (bad > 0) LOOM_ADD_FAILURE() << what << ": " << bad << " blocks/elements wrong" << os.str();
}

}  // namespace loom::conformance
