#include "op_test_util.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "loom/types.hpp"

namespace loom::optest {

std::string shape_str(const Shape& ne) {
  std::ostringstream os;
  os << "[" << ne[0] << ", " << ne[1] << ", " << ne[2] << ", " << ne[3] << "]";
  return os.str();
}

std::string type_str(loom_type_t t) {
  switch (t) {
    case LOOM_TYPE_F32: return "f32";
    case LOOM_TYPE_F16: return "f16";
    case LOOM_TYPE_BF16: return "bf16";
    case LOOM_TYPE_Q8_0: return "q8_0";
    case LOOM_TYPE_Q4_0: return "q4_0";
    case LOOM_TYPE_Q4_1: return "q4_1";
    case LOOM_TYPE_Q5_0: return "q5_0";
    case LOOM_TYPE_Q5_1: return "q5_1";
    case LOOM_TYPE_IQ4_NL: return "iq4_nl";
    case LOOM_TYPE_Q2_K: return "q2_k";
    case LOOM_TYPE_Q3_K: return "q3_k";
    case LOOM_TYPE_Q4_K: return "q4_k";
    case LOOM_TYPE_Q5_K: return "q5_k";
    case LOOM_TYPE_Q6_K: return "q6_k";
    case LOOM_TYPE_I32: return "i32";
    case LOOM_TYPE_I64: return "i64";
    default: return "type" + std::to_string(static_cast<int>(t));
  }
}

// ------------------------------------------------------------ type facts

int64_t block_elems(loom_type_t t) {
  switch (t) {
    case LOOM_TYPE_Q2_K:
    case LOOM_TYPE_Q3_K:
    case LOOM_TYPE_Q4_K:
    case LOOM_TYPE_Q5_K:
    case LOOM_TYPE_Q6_K: return 256;
    default: return is_quant(t) ? 32 : 1;
  }
}

size_t block_bytes(loom_type_t t) {
  switch (t) {
    case LOOM_TYPE_F32:
    case LOOM_TYPE_I32: return 4;
    case LOOM_TYPE_F16:
    case LOOM_TYPE_BF16: return 2;
    case LOOM_TYPE_I64: return 8;
    case LOOM_TYPE_Q8_0: return 34;
    case LOOM_TYPE_Q4_0: return 18;
    case LOOM_TYPE_Q4_1: return 20;
    case LOOM_TYPE_Q5_0: return 22;
    case LOOM_TYPE_Q5_1: return 24;
    case LOOM_TYPE_IQ4_NL: return 18;
    case LOOM_TYPE_Q2_K: return 84;
    case LOOM_TYPE_Q3_K: return 110;
    case LOOM_TYPE_Q4_K: return 144;
    case LOOM_TYPE_Q5_K: return 176;
    case LOOM_TYPE_Q6_K: return 210;
    default: throw std::invalid_argument("block_bytes: unknown type " + type_str(t));
  }
}

Strides dense_strides(loom_type_t t, const Shape& ne) {
  Strides nb{};
  nb[0] = block_bytes(t);
  nb[1] = nb[0] * static_cast<size_t>(ne[0] / block_elems(t));
  nb[2] = nb[1] * static_cast<size_t>(ne[1]);
  nb[3] = nb[2] * static_cast<size_t>(ne[2]);
  return nb;
}

// ------------------------------------------------------ independent decode

double f16_to_double(uint16_t bits) {
  const int sign = (bits >> 15) & 1;
  const int exp = (bits >> 10) & 0x1F;
  const int mant = bits & 0x3FF;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else if (exp == 31) {
    v = mant == 0 ? INFINITY : NAN;
  } else {
    v = std::ldexp(static_cast<double>(mant + 1024), exp - 25);
  }
  return sign ? -v : v;
}

double bf16_to_double(uint16_t bits) {
  const uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<double> decode(loom_type_t t, const uint8_t* p, int64_t n) {
  if (is_weight_quant(t)) return decode_weight_blocks(t, p, n);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    switch (t) {
      case LOOM_TYPE_F32: {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        out[i] = f;
        break;
      }
      case LOOM_TYPE_F16:
      case LOOM_TYPE_BF16: {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = t == LOOM_TYPE_F16 ? f16_to_double(h) : bf16_to_double(h);
        break;
      }
      case LOOM_TYPE_I32: {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i] = v;
        break;
      }
      case LOOM_TYPE_I64: {
        int64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        out[i] = static_cast<double>(v);
        break;
      }
      case LOOM_TYPE_Q8_0: {
        const uint8_t* b = p + (i / 32) * 34;
        uint16_t d;
        std::memcpy(&d, b, 2);
        out[i] = f16_to_double(d) * static_cast<int8_t>(b[2 + i % 32]);
        break;
      }
      case LOOM_TYPE_Q4_0: {
        const uint8_t* b = p + (i / 32) * 18;
        uint16_t d;
        std::memcpy(&d, b, 2);
        const int j = static_cast<int>(i % 32);
        const int q = j < 16 ? (b[2 + j] & 0xF) : (b[2 + j - 16] >> 4);
        out[i] = f16_to_double(d) * (q - 8);
        break;
      }
      default:
        throw std::invalid_argument("decode: unknown type " + type_str(t));
    }
  }
  return out;
}

// ---------------------------------------------------------- tolerances

double unit_roundoff(loom_type_t t) {
  switch (t) {
    case LOOM_TYPE_F16: return std::ldexp(1.0, -11);
    case LOOM_TYPE_BF16: return std::ldexp(1.0, -8);
    case LOOM_TYPE_I32:
    case LOOM_TYPE_I64: return 0.0;
    default: return std::ldexp(1.0, -24);
  }
}

double abs_floor(loom_type_t t) {
  switch (t) {
    case LOOM_TYPE_F16: return std::ldexp(1.0, -25);
    case LOOM_TYPE_BF16: return std::ldexp(1.0, -134);
    case LOOM_TYPE_I32:
    case LOOM_TYPE_I64: return 0.0;
    default: return std::ldexp(1.0, -150);
  }
}

double tol_for(loom_type_t out, double ref, double mag, int64_t n_terms) {
  const double u32 = unit_roundoff(LOOM_TYPE_F32);
  return 4.0 * (unit_roundoff(out) * std::fabs(ref) +
                u32 * std::sqrt(static_cast<double>(std::max<int64_t>(n_terms, 1))) * mag) +
         abs_floor(out);
}

double conv_tol(loom_type_t t, double x) { return unit_roundoff(t) * std::fabs(x) + abs_floor(t); }

// ------------------------------------------------------ host mirrors

int64_t HostView::base_index(int64_t i0, int64_t i1, int64_t i2, int64_t i3) const {
  const int64_t be = block_elems(type);
  const size_t off = offset + static_cast<size_t>(i0 / be) * nb[0] + static_cast<size_t>(i1) * nb[1] +
                     static_cast<size_t>(i2) * nb[2] + static_cast<size_t>(i3) * nb[3];
  return static_cast<int64_t>(off / block_bytes(type)) * be + i0 % be;
}

std::vector<double> HostView::values() const {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(nelements()));
  for_each_index(ne, [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) { out.push_back(at(i0, i1, i2, i3)); });
  return out;
}

HostView host_permute(const HostView& v, int a0, int a1, int a2, int a3) {
  HostView r = v;
  const int ax[4] = {a0, a1, a2, a3};
  for (int i = 0; i < 4; ++i) {
    r.ne[ax[i]] = v.ne[i];
    r.nb[ax[i]] = v.nb[i];
  }
  return r;
}

HostView host_transpose(const HostView& v) { return host_permute(v, 1, 0, 2, 3); }

HostView host_view(const HostView& v, const Shape& ne, const std::array<size_t, 3>& nb123, size_t offset) {
  HostView r = v;
  r.ne = ne;
  r.nb = {block_bytes(v.type), nb123[0], nb123[1], nb123[2]};
  r.offset = v.offset + offset;
  return r;
}

// ------------------------------------------------------ quantization

std::string check_quant_block(loom_type_t t, const double* x, const uint8_t* block) {
  const std::vector<double> got = decode(t, block, 32);
  uint16_t dbits;
  std::memcpy(&dbits, block, 2);
  const double d = f16_to_double(dbits);
  double amax = 0.0;
  double max = 0.0;  // signed value of largest magnitude
  for (int i = 0; i < 32; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  const bool q8 = t == LOOM_TYPE_Q8_0;
  const double d_ideal = q8 ? amax / 127.0 : max / -8.0;
  const double qmax = q8 ? 127.0 : 8.0;
  std::ostringstream os;
  if (std::fabs(d - d_ideal) > std::fabs(d_ideal) * std::ldexp(1.0, -10) + std::ldexp(1.0, -24)) {
    os << "scale d=" << d << " but the block's largest magnitude needs " << d_ideal;
    return os.str();
  }
  for (int i = 0; i < 32; ++i) {
    // Distance from x to the nearest representable grid point d * q.
    double dist = 0.0;
    if (d != 0.0) {
      double q = std::nearbyint(x[i] / d);
      q = q8 ? std::clamp(q, -127.0, 127.0) : std::clamp(q, -8.0, 7.0);
      dist = std::fabs(x[i] - d * q);
    } else {
      dist = std::fabs(x[i]);
    }
    const double slack = std::fabs(d) * qmax * std::ldexp(1.0, -10) + 1e-30;
    if (std::fabs(x[i] - got[i]) > dist + slack) {
      os << "element " << i << ": x=" << x[i] << " decoded " << got[i] << " (d=" << d
         << ", nearest grid distance " << dist << ")";
      return os.str();
    }
  }
  return "";
}

// ------------------------------------------------------ comparison

void expect_close(const std::vector<double>& got, const std::vector<double>& ref,
                  const std::vector<double>& tol, const Shape& ne, const std::string& what) {
  if (got.size() != ref.size() || tol.size() != ref.size()) {
    ADD_FAILURE() << what << ": got " << got.size() << " values, expected " << ref.size();
    return;
  }
  int64_t bad = 0;
  std::ostringstream os;
  for (size_t i = 0; i < ref.size(); ++i) {
    bool ok;
    if (std::isnan(ref[i]) || std::isnan(got[i])) {
      ok = false;
    } else if (std::isinf(ref[i]) || std::isinf(got[i])) {
      ok = got[i] == ref[i];
    } else {
      ok = std::fabs(got[i] - ref[i]) <= tol[i];
    }
    if (ok) continue;
    if (bad < 8) {
      const auto n = static_cast<int64_t>(i);
      const int64_t i0 = n % ne[0];
      const int64_t i1 = (n / ne[0]) % ne[1];
      const int64_t i2 = (n / (ne[0] * ne[1])) % ne[2];
      const int64_t i3 = n / (ne[0] * ne[1] * ne[2]);
      os << "\n  [" << i0 << ", " << i1 << ", " << i2 << ", " << i3 << "] got " << got[i] << " want "
         << ref[i] << " (diff " << std::fabs(got[i] - ref[i]) << ", tol " << tol[i] << ")";
    }
    ++bad;
  }
  if (bad > 0) {
    ADD_FAILURE() << what << " " << shape_str(ne) << ": " << bad << " of " << ref.size()
                  << " elements differ" << os.str();
  }
}

// ------------------------------------------------------ the device

namespace {

registry::Registry* test_registry() {
  // Held through a plain pointer: never torn down from static destructors.
  static registry::Registry* reg = [] {
    // Small test shapes must still take the threaded kernel paths.
    setenv("LOOM_CPU_PARALLEL_MIN_WORK", "0", 1);
    registry::Options opts;
    // Testing the CPU plugin: load just it (no GPU driver start-up per test).
    opts.paths = {testing_reference_device() ? std::string(LOOM_TEST_PLUGIN_DIR) + "/" + cpu_plugin_file()
                                             : std::string(LOOM_TEST_PLUGIN_DIR)};
    opts.use_env = false;
    opts.search_library_dir = false;
    opts.search_install_dir = false;
    return registry::Registry::load(opts).release();
  }();
  return reg;
}

const loom_ext_threads_t* threads_ext(registry::Device* dev) {
  return static_cast<const loom_ext_threads_t*>(dev->extension(LOOM_EXT_THREADS, LOOM_EXT_THREADS_VERSION));
}

}  // namespace

std::string test_device_name() {
  const char* env = std::getenv("LOOM_TEST_DEVICE");
  return env != nullptr && *env != '\0' ? env : "cpu";
}

bool testing_reference_device() { return test_device_name() == "cpu"; }

std::string cpu_plugin_file() {
  const char* env = std::getenv("LOOM_TEST_CPU_PLUGIN");
  return env != nullptr && *env != '\0' ? env : "libloom-cpu.so";
}

registry::Device* test_device() { return test_registry() ? test_registry()->device(test_device_name()) : nullptr; }

registry::Device* cpu_device() { return test_registry() ? test_registry()->device("cpu") : nullptr; }

std::string registry_report() {
  std::ostringstream os;
  for (const registry::Candidate& c : test_registry()->candidates()) {
    os << "\n  " << c.path << ": " << registry::fate_name(c.fate) << " at "
       << registry::stage_name(c.stage) << " " << c.reason;
  }
  return os.str();
}

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

void OpTest::SetUp() {
  dev_ = test_device();
  if (dev_ == nullptr && testing_reference_device() && cpu_plugin_file() != "libloom-cpu.so") {
    // A CPU variant (LOOM_TEST_CPU_PLUGIN) this machine cannot run.
    GTEST_SKIP() << cpu_plugin_file() << " did not load here" << registry_report();
  }
  if (dev_ == nullptr && !testing_reference_device()) {
    GTEST_SKIP() << "device '" << test_device_name() << "' (LOOM_TEST_DEVICE) not found in "
                 << LOOM_TEST_PLUGIN_DIR << registry_report();
  }
  ASSERT_NE(dev_, nullptr) << "CPU plugin not loaded from " << LOOM_TEST_PLUGIN_DIR << registry_report();
}

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
        ADD_FAILURE() << "output '" << outputs[i]->name << "' differs between two runs on " << dev_->name();
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
      ADD_FAILURE() << "output '" << outputs[i]->name << "' differs between 1 and 3 threads";
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

Status OpTest::run(const std::vector<Tensor*>& outputs) {
  ex_.reset();
  graph_.reset();
  auto g = Graph::build(outputs);
  if (!g.ok()) return g.status();
  graph_.emplace(std::move(g).value());
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
    ADD_FAILURE() << what << ": read " << got_base_bytes.size() << " bytes, base has " << base.bytes.size();
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
  if (bad > 0) ADD_FAILURE() << what << ": " << bad << " blocks/elements wrong" << os.str();
}

}  // namespace loom::optest
