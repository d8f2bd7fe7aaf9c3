// The blas device itself: properties, buffer types, the support table, the
// UNIMPLEMENTED answer for other ops, the thread-count extension, and
// scratch reuse across nodes and computes.
#include <cmath>
#include <cstring>

#include "blas_test_util.hpp"
#include "loom/registry/buffer.hpp"
#include "loom/runtime/ops.hpp"

namespace loom::blastest {
namespace {

using optest::expect_close;
using optest::for_each_index;
using optest::unwrap;

const loom_ext_threads_t* threads_ext(registry::Device* dev) {
  return static_cast<const loom_ext_threads_t*>(
      dev->extension(LOOM_EXT_THREADS, LOOM_EXT_THREADS_VERSION));
}

// Reference of A (M rows of K) times B (N rows of K), dense 2-d.
void expect_matmul(const std::vector<double>& got, const Operand& a, const Operand& b,
                   const char* what) {
  const int64_t k_len = a.h.ne[0], m_len = a.h.ne[1], n_len = b.h.ne[1];
  std::vector<double> ref, tol;
  for_each_index(Shape{m_len, n_len, 1, 1}, [&](int64_t m, int64_t n, int64_t, int64_t) {
    double sum = 0.0, mag = 0.0;
    for (int64_t k = 0; k < k_len; ++k) {
      const double p = a.h.at(k, m) * b.h.at(k, n);
      sum += p;
      mag += std::fabs(p);
    }
    ref.push_back(sum);
    tol.push_back(1e-5 * mag + optest::tol_for(LOOM_TYPE_F32, sum, mag, k_len));
  });
  expect_close(got, ref, tol, Shape{m_len, n_len, 1, 1}, what);
}

using BlasDeviceTest = BlasTest;

TEST_F(BlasDeviceTest, PropertiesAndBufferTypes) {
  const registry::DeviceInfo& info = blas_->info();
  EXPECT_EQ(info.name, "blas");
  EXPECT_EQ(info.type, LOOM_DEVICE_TYPE_ACCEL);
  EXPECT_NE(info.description.find("OpenBLAS"), std::string::npos) << info.description;
  EXPECT_GT(info.memory_total, 0u);
  EXPECT_EQ(info.plugin, "blas");
  loom_buffer_type_t* own = blas_->buffer_type();
  ASSERT_NE(own, nullptr);
  EXPECT_STREQ(own->iface->name(own), "blas");
  EXPECT_TRUE(own->iface->is_host(own));
  EXPECT_TRUE(blas_->supports_buffer_type(own));
  EXPECT_TRUE(blas_->supports_buffer_type(cpu_->buffer_type())) << "host memory of the cpu plugin";
  EXPECT_TRUE(cpu_->supports_buffer_type(own)) << "the cpu plugin reads blas (host) buffers";
  Buffer buf = unwrap(blas_->alloc_buffer(1000), "alloc_buffer");
  EXPECT_TRUE(static_cast<bool>(buf));
}

TEST_F(BlasDeviceTest, SupportsOnlyMulMat) {
  Tensor* a = unwrap(ctx_.new_tensor(LOOM_TYPE_Q4_0, {64, 8}, "a"), "a");
  Tensor* b = unwrap(ctx_.new_tensor(LOOM_TYPE_F32, {64, 3}, "b"), "b");
  Tensor* c = unwrap(ctx_.new_tensor(LOOM_TYPE_F32, {64, 3}, "c"), "c");
  Tensor* mm = unwrap(op::mul_mat(ctx_, a, b), "mul_mat");
  EXPECT_TRUE(blas_->supports_op(mm));
  EXPECT_TRUE(blas_->supports_op(a)) << "leafs are no-ops";
  EXPECT_TRUE(blas_->supports_op(unwrap(ctx_.transpose(b), "transpose"))) << "views are no-ops";
  EXPECT_FALSE(blas_->supports_op(unwrap(op::add(ctx_, b, c), "add")));
  EXPECT_FALSE(blas_->supports_op(unwrap(op::scale(ctx_, b, 2.0f), "scale")));
  EXPECT_FALSE(blas_->supports_op(unwrap(op::rms_norm(ctx_, b, 1e-5f), "rms_norm")));
  // Same node with other types: B must be F32, A a float or Q8_0/Q4_0 type.
  mm->src[1]->type = LOOM_TYPE_F16;
  EXPECT_FALSE(blas_->supports_op(mm)) << "F16 B";
  mm->src[1]->type = LOOM_TYPE_F32;
  mm->src[0]->type = LOOM_TYPE_I32;
  EXPECT_FALSE(blas_->supports_op(mm)) << "I32 A";
  mm->src[0]->type = LOOM_TYPE_Q4_0;
  mm->type = LOOM_TYPE_F16;
  EXPECT_FALSE(blas_->supports_op(mm)) << "F16 result";
  mm->type = LOOM_TYPE_F32;
  mm->ne[1] = 4;  // result shape disagrees with B
  EXPECT_FALSE(blas_->supports_op(mm)) << "bad shape";
  mm->ne[1] = 3;
  EXPECT_TRUE(blas_->supports_op(mm));
}

TEST_F(BlasDeviceTest, OtherOpsAreUnimplementedInCompute) {
  Tensor* a = unwrap(ctx_.new_tensor(LOOM_TYPE_F32, {4, 2}, "a"), "a");
  Tensor* sum = unwrap(op::add(ctx_, a, a), "add");
  std::strcpy(sum->name, "the_add");
  Stream stream = unwrap(blas_->create_stream(), "create_stream");
  loom_tensor_t* nodes[] = {sum};
  loom_graph_t g{sizeof(loom_graph_t), 1, nodes, 0};
  Status st = stream.compute(g);
  EXPECT_EQ(st.code(), StatusCode::kUnimplemented) << st.to_string();
  EXPECT_NE(st.message().find("ADD"), std::string::npos) << st.to_string();
  EXPECT_NE(st.message().find("the_add"), std::string::npos) << st.to_string();
  EXPECT_NE(st.message().find("[blas."), std::string::npos) << st.to_string();
}

TEST_F(BlasDeviceTest, ThreadsExtension) {
  const loom_ext_threads_t* ext = threads_ext(blas_);
  ASSERT_NE(ext, nullptr);
  const int32_t before = ext->get_threads(blas_->raw());
  EXPECT_GE(before, 1);
  LOOM_EXPECT_OK(blas_->set_threads(2));
  EXPECT_EQ(ext->get_threads(blas_->raw()), 2);
  EXPECT_FALSE(blas_->set_threads(0).ok());
  EXPECT_FALSE(blas_->set_threads(-3).ok());
  EXPECT_EQ(ext->get_threads(blas_->raw()), 2);

  // Results stay right with 1 and 3 threads (OpenBLAS and the conversion pool).
  seed(601);
  Operand a = input(LOOM_TYPE_Q8_0, {256, 160, 1, 1});
  Operand b = input(LOOM_TYPE_F32, {256, 9, 1, 1});
  Tensor* out = unwrap(op::mul_mat(ctx_, a.t, b.t), "mul_mat");
  LOOM_ASSERT_OK(blas_->set_threads(1));
  LOOM_ASSERT_OK(run({out}));
  expect_matmul(read(out), a, b, "1 thread");
  LOOM_ASSERT_OK(blas_->set_threads(3));
  LOOM_ASSERT_OK(rerun());
  expect_matmul(read(out), a, b, "3 threads");
  LOOM_EXPECT_OK(blas_->set_threads(before));
}

TEST_F(BlasDeviceTest, ScratchReusedAcrossNodesAndComputes) {
  // One graph, three matmuls whose operands all need the scratch (small,
  // large, middle), run three times on the same stream: a stale or
  // too-small scratch would show as wrong results.
  seed(602);
  Operand a1 = input(LOOM_TYPE_Q4_0, {32, 3, 1, 1});
  Operand b1 = transpose(input(LOOM_TYPE_F32, {2, 32, 1, 1}));
  Operand a2 = input(LOOM_TYPE_Q8_0, {320, 130, 1, 1});
  Operand b2 = transpose(input(LOOM_TYPE_F32, {5, 320, 1, 1}));
  Operand a3 = input(LOOM_TYPE_F16, {65, 17, 1, 1});
  Operand b3 = transpose(input(LOOM_TYPE_F32, {4, 65, 1, 1}));
  Tensor* o1 = unwrap(op::mul_mat(ctx_, a1.t, b1.t), "mm1");
  Tensor* o2 = unwrap(op::mul_mat(ctx_, a2.t, b2.t), "mm2");
  Tensor* o3 = unwrap(op::mul_mat(ctx_, a3.t, b3.t), "mm3");
  LOOM_ASSERT_OK(run({o1, o2, o3}));
  for (int pass = 0; pass < 3; ++pass) {
    SCOPED_TRACE("pass " + std::to_string(pass));
    if (pass > 0) LOOM_ASSERT_OK(rerun());
    expect_matmul(read(o1), a1, b1, "small q4_0");
    expect_matmul(read(o2), a2, b2, "large q8_0");
    expect_matmul(read(o3), a3, b3, "middle f16");
  }
}

}  // namespace
}  // namespace loom::blastest
