// Op builders: validate inputs and infer the result shape; computation
// happens later on a device. Every builder returns a status naming the op
// and the offending values instead of asserting: a source from another
// context, a null source, mismatched types or shapes. Semantics of each op
// are in loom/plugin.h (enum loom_op).
#pragma once

#include "loom/runtime/tensor.hpp"

namespace loom::op {

StatusOr<Tensor*> get_rows(Context& ctx, Tensor* a, Tensor* idx);
StatusOr<Tensor*> add(Context& ctx, Tensor* a, Tensor* b);
StatusOr<Tensor*> sub(Context& ctx, Tensor* a, Tensor* b);
StatusOr<Tensor*> mul(Context& ctx, Tensor* a, Tensor* b);
StatusOr<Tensor*> div(Context& ctx, Tensor* a, Tensor* b);
StatusOr<Tensor*> scale(Context& ctx, Tensor* a, float s, float bias = 0.0f);
StatusOr<Tensor*> rms_norm(Context& ctx, Tensor* a, float eps);
StatusOr<Tensor*> norm(Context& ctx, Tensor* a, float eps);
StatusOr<Tensor*> mul_mat(Context& ctx, Tensor* a, Tensor* b);
// freq_factors (optional, ABI 1.2): F32 [n_dims / 2], theta_i /= factor_i.
StatusOr<Tensor*> rope(Context& ctx, Tensor* a, Tensor* pos, int n_dims, int mode,
                       float freq_base, float freq_scale, Tensor* freq_factors = nullptr);
// mask may be nullptr.
StatusOr<Tensor*> soft_max(Context& ctx, Tensor* a, Tensor* mask, float scale);
// Copy a into dst (converting types); the result is a view of dst.
StatusOr<Tensor*> cpy(Context& ctx, Tensor* a, Tensor* dst);
StatusOr<Tensor*> cont(Context& ctx, Tensor* a);
// Write rows of `rows` into dst at `idx`; the result is a view of dst.
StatusOr<Tensor*> set_rows(Context& ctx, Tensor* dst, Tensor* rows, Tensor* idx);
StatusOr<Tensor*> silu(Context& ctx, Tensor* a);
StatusOr<Tensor*> gelu(Context& ctx, Tensor* a);
StatusOr<Tensor*> relu(Context& ctx, Tensor* a);
StatusOr<Tensor*> tanh(Context& ctx, Tensor* a);  // ABI 1.5
StatusOr<Tensor*> swiglu(Context& ctx, Tensor* a, Tensor* b);
StatusOr<Tensor*> argmax(Context& ctx, Tensor* a);
StatusOr<Tensor*> sum_rows(Context& ctx, Tensor* a);
// Fused attention (LOOM_OP_ATTENTION, ABI 1.1): q [D, H, T], k [D, n_kv, Hkv]
// and v [Dv, n_kv, Hkv] (float; views of a KV cache, v not transposed),
// visible I32 [T] (query t attends to KV rows [0, visible[t])) or, the
// ranges form of ABI 1.4, I32 [2, T] (query t attends to rows [visible[0, t],
// visible[1, t]): several sequences in one cache), H % Hkv == 0,
// finite scale. Result F32 [Dv, H, T]. Values of `visible` are checked when
// the node runs (a device's status), not here.
StatusOr<Tensor*> attention(Context& ctx, Tensor* q, Tensor* k, Tensor* v, Tensor* visible, float scale);

// Activation-sparse products (ABI 1.3; semantics in loom/plugin.h). `scores`
// float; element (j, n) is active iff scores[j, n] > threshold (finite).
// Row-sparse (LOOM_OP_MUL_MAT_SPARSE_ROWS): a [K, M], b F32 [K, N], scores
// [M, N] -> F32 [M, N], inactive rows exactly 0.
StatusOr<Tensor*> mul_mat_sparse_rows(Context& ctx, Tensor* a, Tensor* b, Tensor* scores, float threshold);
// Column-sparse AXPY (LOOM_OP_MUL_MAT_SPARSE_COLS): w [M, K] neuron-major
// (row k = neuron k's outputs), h F32 [K, N], scores [K, N] -> F32 [M, N] =
// sum over active k of h[k, n] * w[:, k].
StatusOr<Tensor*> mul_mat_sparse_cols(Context& ctx, Tensor* w, Tensor* h, Tensor* scores, float threshold);

// Mixture of experts (ABI 1.5; semantics in loom/plugin.h).
// LOOM_OP_MUL_MAT_ID: a [K, M, E] (one matrix per expert), b F32 [K, 1 or U,
// T], ids I32 [U, T] (token t's U chosen experts) -> F32 [M, U, T]. Values of
// ids are checked when the node runs (a device's status), not here.
StatusOr<Tensor*> mul_mat_id(Context& ctx, Tensor* a, Tensor* b, Tensor* ids);
// LOOM_OP_TOP_K: a F32 [n, ...] -> I32 [k, ...], the indices of each row's k
// largest values, largest first; 1 <= k <= n.
StatusOr<Tensor*> top_k(Context& ctx, Tensor* a, int k);

// Whether `op` may write its result over its first source's memory when
// that source is dead afterwards (same type, shape and layout).
bool op_can_be_inplace(int32_t op);

}  // namespace loom::op
