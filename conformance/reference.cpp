#include "conformance/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "loom/runtime/types.hpp"

namespace loom::conformance {

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
    case LOOM_TYPE_IQ4_XS: return "iq4_xs";
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
    case LOOM_TYPE_Q6_K:
    case LOOM_TYPE_IQ4_XS: return 256;
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
    case LOOM_TYPE_IQ4_XS: return 136;
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

namespace {

bool element_ok(double got, double ref, double tol) {
  if (std::isnan(ref) || std::isnan(got)) return false;
  if (std::isinf(ref) || std::isinf(got)) return got == ref;
  return std::fabs(got - ref) <= tol;
}

}  // namespace

int64_t count_mismatches(const std::vector<double>& got, const std::vector<double>& ref,
                         const std::vector<double>& tol) {
  if (got.size() != ref.size()) return static_cast<int64_t>(std::max(got.size(), ref.size()));
  int64_t bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) bad += element_ok(got[i], ref[i], tol[i]) ? 0 : 1;
  return bad;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& ref,
                  const std::vector<double>& tol, const Shape& ne, const std::string& what) {
  if (got.size() != ref.size()) {
    LOOM_ADD_FAILURE() << what << ": got " << got.size() << " values, expected " << ref.size();
    return;
  }
  int64_t bad = 0;
  double worst = 0.0;  // largest |got - ref| / tol over finite elements (the table's "worst error")
  std::ostringstream os;
  for (size_t i = 0; i < ref.size(); ++i) {
    const bool ok = element_ok(got[i], ref[i], tol[i]);
    if (std::isfinite(got[i]) && std::isfinite(ref[i])) {
      const double err = std::fabs(got[i] - ref[i]);
      const double ratio = tol[i] > 0.0 ? err / tol[i] : (err > 0.0 ? INFINITY : 0.0);
      worst = std::max(worst, ratio);
    } else if (!ok) {
      worst = INFINITY;
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
  note_error_ratio(worst);
  if (bad > 0) {
    LOOM_ADD_FAILURE() << what << " " << shape_str(ne) << ": " << bad << " of " << ref.size()
                       << " elements differ" << os.str();
  }
}

}  // namespace loom::conformance
