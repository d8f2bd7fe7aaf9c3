/*
 * loom plugin ABI — the one C header a backend plugin needs.
 *
 * Standalone C99: includes only <stdint.h>, <stddef.h>, <stdbool.h>.
 * Versioned major.minor; the rules for host and plugin are numbered in
 * docs/plugin-abi.md. In short:
 *   - every struct that crosses the boundary starts with `struct_size`;
 *   - minor versions only append fields/entries at the end of structs;
 *   - entries marked "(optional)" may be NULL; the comment says what the host
 *     does then; the host checks struct_size before reading an entry added in
 *     a later minor;
 *   - failures cross as a loom_status_t* made with the host's status_new
 *     (NULL means OK); never as an exception, abort or exit.
 */
#ifndef LOOM_PLUGIN_H
#define LOOM_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- versions */

#define LOOM_ABI_VERSION_MAJOR 1u
#define LOOM_ABI_VERSION_MINOR 6u
/* Packed version: major in the high 16 bits, minor in the low 16 bits. */
#define LOOM_ABI_MAKE_VERSION(major, minor) ((uint32_t)(((major) << 16) | ((minor) & 0xFFFFu)))
#define LOOM_ABI_VERSION LOOM_ABI_MAKE_VERSION(LOOM_ABI_VERSION_MAJOR, LOOM_ABI_VERSION_MINOR)
#define LOOM_ABI_MAJOR(v) ((uint32_t)(v) >> 16)
#define LOOM_ABI_MINOR(v) ((uint32_t)(v)&0xFFFFu)

/* The end of a struct field, for struct_size checks of appended fields. */
#define LOOM_STRUCT_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

#if defined(_WIN32)
#define LOOM_PLUGIN_EXPORT __declspec(dllexport)
#else
#define LOOM_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------ status */

/* Shared with include/loom/loom.h (the application C API), which defines the
 * same two names under the same guard, so the headers include in any order. */
#ifndef LOOM_STATUS_TYPES_DEFINED
#define LOOM_STATUS_TYPES_DEFINED
typedef enum loom_status_code {
  LOOM_STATUS_OK = 0,
  LOOM_STATUS_INVALID_ARGUMENT = 1,
  LOOM_STATUS_NOT_FOUND = 2,
  LOOM_STATUS_UNAVAILABLE = 3, /* hardware or driver absent: normal, not an error */
  LOOM_STATUS_UNIMPLEMENTED = 4,
  LOOM_STATUS_RESOURCE_EXHAUSTED = 5,
  LOOM_STATUS_INCOMPATIBLE = 6,
  LOOM_STATUS_INTERNAL = 7,
  LOOM_STATUS_ABORTED = 8
} loom_status_code_t;

/* Opaque status object made by the host (services->status_new). A plugin entry
 * that returns loom_status_t* returns NULL for OK; a non-NULL status is owned
 * by the host from then on. */
typedef struct loom_status loom_status_t;
#endif /* LOOM_STATUS_TYPES_DEFINED */

typedef enum loom_log_level {
  LOOM_LOG_LEVEL_DEBUG = 0,
  LOOM_LOG_LEVEL_INFO = 1,
  LOOM_LOG_LEVEL_WARN = 2,
  LOOM_LOG_LEVEL_ERROR = 3
} loom_log_level_t;

/* Services the host lends to a plugin for the plugin's whole life. All entries
 * are thread-safe and non-NULL. */
typedef struct loom_host_services {
  size_t struct_size;
  uint32_t host_abi_version;
  /* Log one message; category is the plugin name or "plugin.sub". */
  void (*log)(loom_log_level_t level, const char *category, const char *message);
  /* Whether a message at this level and category would be printed. */
  bool (*log_enabled)(loom_log_level_t level, const char *category);
  /* Make a status (message is copied). code must not be LOOM_STATUS_OK. */
  loom_status_t *(*status_new)(loom_status_code_t code, const char *message);
  /* Release a status the plugin made but decided not to return. */
  void (*status_free)(loom_status_t *status);
  /* Host memory hooks for plugin bookkeeping and host buffers; alignment is a
   * power of two. aligned_alloc returns NULL when out of memory. */
  void *(*aligned_alloc)(size_t size, size_t alignment);
  void (*aligned_free)(void *ptr);
} loom_host_services_t;

/* ------------------------------------------------------------------- types */

/* Element types. Values equal GGUF's type ids so model files map straight in. */
typedef enum loom_type {
  LOOM_TYPE_F32 = 0,
  LOOM_TYPE_F16 = 1,
  LOOM_TYPE_Q4_0 = 2,
  LOOM_TYPE_Q4_1 = 3,   /* ABI 1.2 */
  LOOM_TYPE_Q5_0 = 6,   /* ABI 1.2 */
  LOOM_TYPE_Q5_1 = 7,   /* ABI 1.2 */
  LOOM_TYPE_Q8_0 = 8,
  LOOM_TYPE_Q2_K = 10,  /* ABI 1.2 */
  LOOM_TYPE_Q3_K = 11,  /* ABI 1.2 */
  LOOM_TYPE_Q4_K = 12,  /* ABI 1.2 */
  LOOM_TYPE_Q5_K = 13,  /* ABI 1.2 */
  LOOM_TYPE_Q6_K = 14,  /* ABI 1.2 */
  LOOM_TYPE_IQ4_NL = 20, /* ABI 1.2 */
  LOOM_TYPE_IQ4_XS = 23, /* ABI 1.4 */
  LOOM_TYPE_I32 = 26,
  LOOM_TYPE_I64 = 27,
  LOOM_TYPE_BF16 = 30,
  LOOM_TYPE_COUNT = 31 /* upper bound of the id range, not a type */
} loom_type_t;

/* Quantized blocks, byte-identical to GGUF/ggml. `d` is an IEEE half stored
 * as raw bits. Q4_0: x[i] = d * ((qs[i % 16] >> (4 * (i / 16))) & 0xF) - 8 d,
 * i.e. low nibbles hold elements 0..15, high nibbles 16..31.
 * Q8_0: x[i] = d * qs[i]. */
#define LOOM_QK4_0 32
typedef struct loom_block_q4_0 {
  uint16_t d;
  uint8_t qs[LOOM_QK4_0 / 2];
} loom_block_q4_0_t; /* 18 bytes */

#define LOOM_QK8_0 32
typedef struct loom_block_q8_0 {
  uint16_t d;
  int8_t qs[LOOM_QK8_0];
} loom_block_q8_0_t; /* 34 bytes */

typedef char loom_check_q4_0_size[sizeof(loom_block_q4_0_t) == 18 ? 1 : -1];
typedef char loom_check_q8_0_size[sizeof(loom_block_q8_0_t) == 34 ? 1 : -1];

/* ABI 1.2: the other common GGUF weight types, 32-element blocks. With
 * q(i) the 4-bit value of element i (low nibbles hold 0..15, high 16..31)
 * and h(i) bit i of qh (little-endian 32-bit word):
 * Q4_1:   x[i] = d * q(i) + m
 * Q5_0:   x[i] = d * (q(i) + 16 h(i) - 16)
 * Q5_1:   x[i] = d * (q(i) + 16 h(i)) + m
 * IQ4_NL: x[i] = d * kvalues[q(i)], kvalues = {-127, -104, -83, -65, -49,
 *         -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113} */
#define LOOM_QK4_1 32
typedef struct loom_block_q4_1 {
  uint16_t d, m;
  uint8_t qs[LOOM_QK4_1 / 2];
} loom_block_q4_1_t; /* 20 bytes */

#define LOOM_QK5_0 32
typedef struct loom_block_q5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[LOOM_QK5_0 / 2];
} loom_block_q5_0_t; /* 22 bytes */

#define LOOM_QK5_1 32
typedef struct loom_block_q5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[LOOM_QK5_1 / 2];
} loom_block_q5_1_t; /* 24 bytes */

#define LOOM_QK4_NL 32
typedef struct loom_block_iq4_nl {
  uint16_t d;
  uint8_t qs[LOOM_QK4_NL / 2];
} loom_block_iq4_nl_t; /* 18 bytes */

/* ABI 1.2: K-quants, 256-element super-blocks of 16 or 8 sub-blocks with
 * their own quantized scales (and mins), exactly ggml's layouts; the
 * decoding of each is written out in plugins/common/quant_k.cpp and
 * docs/plugin-abi.md. */
#define LOOM_QK_K 256
typedef struct loom_block_q2_k {
  uint8_t scales[LOOM_QK_K / 16]; /* low 4 bits scale, high 4 bits min */
  uint8_t qs[LOOM_QK_K / 4];      /* 2-bit values */
  uint16_t d, dmin;
} loom_block_q2_k_t; /* 84 bytes */

typedef struct loom_block_q3_k {
  uint8_t hmask[LOOM_QK_K / 8]; /* high bit of each value */
  uint8_t qs[LOOM_QK_K / 4];    /* low 2 bits */
  uint8_t scales[12];           /* 16 6-bit scales */
  uint16_t d;
} loom_block_q3_k_t; /* 110 bytes */

typedef struct loom_block_q4_k {
  uint16_t d, dmin;
  uint8_t scales[12]; /* 8 6-bit scales and 8 6-bit mins */
  uint8_t qs[LOOM_QK_K / 2];
} loom_block_q4_k_t; /* 144 bytes */

typedef struct loom_block_q5_k {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[LOOM_QK_K / 8];
  uint8_t qs[LOOM_QK_K / 2];
} loom_block_q5_k_t; /* 176 bytes */

typedef struct loom_block_q6_k {
  uint8_t ql[LOOM_QK_K / 2]; /* low 4 bits */
  uint8_t qh[LOOM_QK_K / 4]; /* high 2 bits */
  int8_t scales[LOOM_QK_K / 16];
  uint16_t d;
} loom_block_q6_k_t; /* 210 bytes */

/* ABI 1.4: IQ4_XS, ggml's layout. A 256-element super-block of 8 sub-blocks
 * of 32; sub-block s (0..7) has the 6-bit scale
 *   ls(s) = ((scales_l[s / 2] >> (4 * (s % 2))) & 0xF) | (((scales_h >> (2 * s)) & 3) << 4)
 * and its 16 bytes qs[16 s .. 16 s + 15] hold its elements as IQ4_NL's do
 * (low nibbles elements 0..15, high nibbles 16..31), so with q(s, i) that
 * nibble: x[32 s + i] = (d * (ls(s) - 32)) * kvalues[q(s, i)], kvalues
 * IQ4_NL's 16 levels. */
typedef struct loom_block_iq4_xs {
  uint16_t d;
  uint16_t scales_h;                /* 2 high bits of each sub-block scale */
  uint8_t scales_l[LOOM_QK_K / 64]; /* 4 low bits, two sub-blocks a byte */
  uint8_t qs[LOOM_QK_K / 2];        /* 4-bit indices into kvalues */
} loom_block_iq4_xs_t; /* 136 bytes */

typedef char loom_check_q4_1_size[sizeof(loom_block_q4_1_t) == 20 ? 1 : -1];
typedef char loom_check_q5_0_size[sizeof(loom_block_q5_0_t) == 22 ? 1 : -1];
typedef char loom_check_q5_1_size[sizeof(loom_block_q5_1_t) == 24 ? 1 : -1];
typedef char loom_check_iq4_nl_size[sizeof(loom_block_iq4_nl_t) == 18 ? 1 : -1];
typedef char loom_check_q2_k_size[sizeof(loom_block_q2_k_t) == 84 ? 1 : -1];
typedef char loom_check_q3_k_size[sizeof(loom_block_q3_k_t) == 110 ? 1 : -1];
typedef char loom_check_q4_k_size[sizeof(loom_block_q4_k_t) == 144 ? 1 : -1];
typedef char loom_check_q5_k_size[sizeof(loom_block_q5_k_t) == 176 ? 1 : -1];
typedef char loom_check_q6_k_size[sizeof(loom_block_q6_k_t) == 210 ? 1 : -1];
typedef char loom_check_iq4_xs_size[sizeof(loom_block_iq4_xs_t) == 136 ? 1 : -1];

/* --------------------------------------------------------------------- ops */

/* Op ids are part of the ABI: values never change, new ops are appended.
 * Shapes use ggml's convention: ne[0] is the innermost (contiguous) extent.
 * "float type" below means F32, F16 or BF16. Results are F32 unless stated.
 * Float op params are stored bit-for-bit in op_params (memcpy). */
typedef enum loom_op {
  LOOM_OP_NONE = 0, /* a leaf: input, weight or constant */
  /* Views: no computation; the tensor aliases view_src at view_offset with
   * its own ne/nb. Plugins treat them as no-ops. */
  LOOM_OP_RESHAPE = 1,
  LOOM_OP_VIEW = 2,
  LOOM_OP_PERMUTE = 3,   /* op_params[0..3]: axis each source dim goes to */
  LOOM_OP_TRANSPOSE = 4, /* swaps dims 0 and 1 */
  /* src0 [n0, rows, n2, n3] any type; src1 I32 [k, n2, n3] row indices.
   * Result F32 [n0, k, n2, n3]: dst[:, i, j, l] = src0[:, src1[i, j, l], j, l]. */
  LOOM_OP_GET_ROWS = 5,
  /* Binary elementwise, src1 broadcast to src0 (src0.ne[d] % src1.ne[d] == 0).
   * Float types; result has src0's type and shape. */
  LOOM_OP_ADD = 6,
  LOOM_OP_SUB = 7,
  LOOM_OP_MUL = 8,
  LOOM_OP_DIV = 9,
  /* dst = src0 * scale + bias. f32 params: [0] scale, [1] bias. Type of src0. */
  LOOM_OP_SCALE = 10,
  /* Per row (ne[0]): x / sqrt(mean(x^2) + eps). f32 param [0] eps. */
  LOOM_OP_RMS_NORM = 11,
  /* Per row: (x - mean) / sqrt(var + eps). f32 param [0] eps. */
  LOOM_OP_NORM = 12,
  /* src0 A [K, M, a2, a3] any type; src1 B [K, N, b2, b3] F32 with
   * b2 % a2 == 0, b3 % a3 == 0. Result F32 [M, N, b2, b3]:
   * dst[m, n, i2, i3] = sum_k A[k, m, i2 / (b2/a2), i3 / (b3/a3)] * B[k, n, i2, i3].
   * Allowed roundings (docs/plugin-abi.md, "What loom conformance checks"):
   * B to 8-bit blocks for a quantized A; A and B to F16 when N >= 9. */
  LOOM_OP_MUL_MAT = 13,
  /* Rotary embedding. src0 float [head_dim, n_head, n_tok, n3]; src1 I32
   * positions [n_tok]. i32 params: [0] n_dims (even, <= head_dim),
   * [1] mode (0 = normal: rotate pairs (2i, 2i+1); 2 = neox: pairs
   * (i, i + n_dims/2)); f32 params: [2] freq_base, [3] freq_scale.
   * theta_i = pos * freq_scale * freq_base^(-2i/n_dims), i in [0, n_dims/2).
   * (ABI 1.2) src2 (optional): F32 [n_dims/2] frequency factors (any
   * stride), theta_i /= src2[i] (llama-3's rope_freqs, ggml's freq_factors).
   * The host never offers a ROPE node with src2 to a plugin built for 1.0 or
   * 1.1 (docs/plugin-abi.md, host rule 15).
   * Dims >= n_dims pass through. Result type of src0. */
  LOOM_OP_ROPE = 14,
  /* Per row: softmax(src0 * scale + mask). src1 (optional) mask, float,
   * [ne0, >= ne1, m2, m3] broadcast over dims 2, 3 (ne2 % m2 == 0).
   * f32 param [0] scale. */
  LOOM_OP_SOFT_MAX = 15,
  /* Copy src0 into src1 with type conversion; the node is a view of src1
   * (view_src = src1's base). Same element count; elements are matched in
   * row-major logical order. Float <-> float, float -> Q8_0/Q4_0 (src1 rows
   * contiguous), Q8_0/Q4_0 -> float, I32 -> I32. */
  LOOM_OP_CPY = 16,
  /* Contiguous copy of src0 with the same type and shape. */
  LOOM_OP_CONT = 17,
  /* Write rows: src0 is the destination [n0, rows, n2, n3] (any type the
   * CPY rules allow from F32), src1 F32 [n0, k, n2, n3] rows, src2 I32 or
   * I64 [k, n2, n3] indices. dst[:, src2[i, j, l], j, l] = src1[:, i, j, l].
   * The node is a view of src0. */
  LOOM_OP_SET_ROWS = 18,
  /* Unary elementwise on float types, type of src0. GELU uses the tanh form
   * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
  LOOM_OP_SILU = 19,
  LOOM_OP_GELU = 20,
  LOOM_OP_RELU = 21,
  /* Fused gate: silu(src0) * src1, same shapes, float types; type of src0. */
  LOOM_OP_SWIGLU = 22,
  /* Index of the largest element of each row (first on ties).
   * src0 F32 [ne0, ne1, ne2, ne3] -> I32 [ne1, ne2, ne3]. */
  LOOM_OP_ARGMAX = 23,
  /* Sum of each row: float [ne0, ne1, ne2, ne3] -> F32 [1, ne1, ne2, ne3]. */
  LOOM_OP_SUM_ROWS = 24,
  /* (ABI 1.1) Fused attention over a KV cache, one pass. src0 Q float
   * [D, H, T] (any strides); src1 K float [D, n_kv, Hkv] and src2 V float
   * [Dv, n_kv, Hkv] (F32, F16 or BF16, any strides: views of the cache; V is
   * NOT transposed, row j of KV head g is V[:, j, g]); src3 I32 [T] visible:
   * query t attends to KV rows [0, visible[t]). H % Hkv == 0; query head h
   * uses KV head h / (H / Hkv). f32 param [0] scale. Result F32 [Dv, H, T]:
   * dst[:, h, t] = sum_{j < visible[t]} softmax_j(scale * Q[:, h, t] . K[:, j, g]) V[:, j, g].
   * visible[t] == 0 gives a zero row; a value outside [0, n_kv] fails the
   * node with INVALID_ARGUMENT. The host never asks a plugin built for
   * ABI 1.0 about this op (docs/plugin-abi.md, host rule 15).
   * (ABI 1.4) The ranges form, i32 param [1] = LOOM_ATTENTION_RANGES: src3
   * is I32 [2, T], query t attends to KV rows [src3[0, t], src3[1, t]) (a
   * batch of several sequences, each in its own rows of one cache); the
   * sum and softmax above run over those rows. first > end or either outside
   * [0, n_kv] fails the node; first == end gives a zero row. Param [1] = 0
   * is the form above. The host never offers the ranges form to a plugin
   * built for 1.0-1.3.
   * (ABI 1.6) K and V may also be Q8_0 (an 8-bit KV cache), rows of whole
   * blocks (ne[0] % 32 == 0, nb[0] the block size): row j read as its
   * dequantized values (d * q). The host never offers such a node to a
   * plugin built for 1.0-1.5. */
  LOOM_OP_ATTENTION = 25,
#define LOOM_ATTENTION_RANGES 1
  /* (ABI 1.3) Activation-sparse FFN products. Both are 2-D (ne[2] = ne[3]
   * = 1 for every tensor), take a score tensor src2 (float, any strides)
   * and an f32 param [0] threshold t (finite): element (j, n) of src2 is
   * "active" iff src2[j, n] > t (a NaN score is inactive). The host never
   * offers them to a plugin built for 1.0-1.2 (docs/plugin-abi.md, host
   * rule 15).
   * Row-sparse product (gate/up projections): src0 A [K, M] any type
   * MUL_MAT's A takes; src1 B F32 [K, N]; src2 S [M, N]. Result F32 [M, N]:
   * dst[m, n] = S[m, n] > t ? sum_k A[k, m] * B[k, n] : 0 (exactly 0 for an
   * inactive row; only the active rows of A are read). */
  LOOM_OP_MUL_MAT_SPARSE_ROWS = 26,
  /* Column-sparse product, AXPY form (down projection): src0 W [M, K] any
   * type MUL_MAT's A takes, stored neuron-major: row k of W (W[:, k]) is
   * neuron k's M outputs, i.e. the transpose of MUL_MAT's A; src1 H F32
   * [K, N]; src2 S [K, N]. Result F32 [M, N]:
   * dst[:, n] = sum_{k : S[k, n] > t} H[k, n] * W[:, k]
   * (0 when no k is active; only the active rows of W are read). Equal to
   * MUL_MAT(transpose(W), H with the inactive elements zeroed). */
  LOOM_OP_MUL_MAT_SPARSE_COLS = 27,
  /* (ABI 1.5) Mixture-of-experts product: each token's chosen experts.
   * src0 A [K, M, E] (E experts, ne[3] = 1) any type MUL_MAT's A takes;
   * src1 B F32 [K, Nb, T] (ne[3] = 1) with Nb = 1 (every chosen expert of
   * token t reads B[:, 0, t]) or Nb = U (expert slot u reads B[:, u, t]);
   * src2 ids I32 [U, T] (any strides): token t's chosen experts. Result F32
   * [M, U, T]:
   * dst[m, u, t] = sum_k A[k, m, ids[u, t]] * B[k, Nb == 1 ? 0 : u, t].
   * Ids may repeat; an id outside [0, E) fails the node with
   * INVALID_ARGUMENT. Only the chosen experts' weights need be read. The
   * host never offers it to a plugin built for 1.0-1.4 (host rule 15). */
  LOOM_OP_MUL_MAT_ID = 28,
  /* (ABI 1.5) Indices of the k largest elements of each row, largest first
   * (equal values: the lower index first; NaN counts as smaller than every
   * number). src0 F32 [n, r1, r2, r3]; i32 param [0] k in [1, n].
   * Result I32 [k, r1, r2, r3]. */
  LOOM_OP_TOP_K = 29,
  /* (ABI 1.5) Unary tanh on float types, type of src0 (Gemma 2's logit
   * soft-capping: c * tanh(x / c)). */
  LOOM_OP_TANH = 30,
  LOOM_OP_COUNT = 31 /* number of op ids in this ABI version */
} loom_op_t;

#define LOOM_ROPE_MODE_NORMAL 0
#define LOOM_ROPE_MODE_NEOX 2

/* ----------------------------------------------------------------- tensors */

#define LOOM_MAX_DIMS 4
#define LOOM_MAX_SRC 4
#define LOOM_MAX_OP_PARAMS 16 /* int32 slots */
#define LOOM_MAX_NAME 64

#define LOOM_TENSOR_FLAG_INPUT 1u  /* set by the application before compute */
#define LOOM_TENSOR_FLAG_OUTPUT 2u /* read after compute; never reused */
#define LOOM_TENSOR_FLAG_PARAM 4u  /* a weight */

typedef struct loom_buffer loom_buffer_t;

/* A tensor as plugins see it. The host owns tensors; plugins read them and
 * write only the memory at `data` (and `extra`, see below). */
typedef struct loom_tensor {
  size_t struct_size;
  int32_t type; /* loom_type_t */
  int32_t op;   /* loom_op_t */
  int64_t ne[LOOM_MAX_DIMS]; /* extents, ne[0] innermost; unused dims are 1 */
  size_t nb[LOOM_MAX_DIMS];  /* byte strides; nb[0] = size of one element or block */
  int32_t op_params[LOOM_MAX_OP_PARAMS];
  uint32_t flags; /* LOOM_TENSOR_FLAG_* */
  struct loom_tensor *src[LOOM_MAX_SRC];
  struct loom_tensor *view_src; /* base tensor of a view, NULL otherwise */
  size_t view_offset;           /* byte offset into view_src */
  void *data;                   /* address inside `buffer` (device address space) */
  loom_buffer_t *buffer;        /* buffer holding data, NULL before allocation */
  void *extra;                  /* owned by the plugin of `buffer` (init_tensor) */
  char name[LOOM_MAX_NAME];     /* NUL-terminated */
} loom_tensor_t;

/* A graph handed to a stream: nodes in execution order (sources first). */
typedef struct loom_graph {
  size_t struct_size;
  int32_t n_nodes;
  loom_tensor_t *const *nodes;
  /* Structural fingerprint (ops, shapes, strides, params, placement): equal
   * fingerprints mean a plugin may reuse what it built for this graph. */
  uint64_t fingerprint;
} loom_graph_t;

/* ------------------------------------------------------------ object levels */

typedef struct loom_device loom_device_t;
typedef struct loom_buffer_type loom_buffer_type_t;
typedef struct loom_stream loom_stream_t;
typedef struct loom_event loom_event_t;

/* Buffer: a block of device memory. Made by buffer_type alloc, freed by free.
 * Not thread-safe: the host serialises calls per buffer. */
typedef struct loom_buffer_iface {
  size_t struct_size;
  void (*free)(loom_buffer_t *buffer); /* frees the loom_buffer_t too */
  /* Base address of the buffer in the device's address space; tensors get
   * data = base + offset. Non-NULL for any buffer of size > 0. */
  void *(*base)(loom_buffer_t *buffer);
  /* Copy host bytes into/out of a tensor in this buffer, at byte offset. */
  loom_status_t *(*set_tensor)(loom_buffer_t *buffer, loom_tensor_t *tensor, const void *data,
                               size_t offset, size_t size);
  loom_status_t *(*get_tensor)(loom_buffer_t *buffer, const loom_tensor_t *tensor, void *data,
                               size_t offset, size_t size);
  /* Fill the whole buffer with a byte value. */
  loom_status_t *(*clear)(loom_buffer_t *buffer, uint8_t value);
  /* (optional) Called once a tensor is placed in this buffer. NULL: nothing. */
  loom_status_t *(*init_tensor)(loom_buffer_t *buffer, loom_tensor_t *tensor);
  /* (optional) dst lives in this buffer; copy src (any buffer) into it when
   * the plugin can do so directly. Returns UNIMPLEMENTED when it cannot; the
   * host then stages the copy through host memory. NULL: always staged. */
  loom_status_t *(*copy_tensor)(loom_buffer_t *buffer, const loom_tensor_t *src,
                                loom_tensor_t *dst);
} loom_buffer_iface_t;

struct loom_buffer {
  size_t struct_size;
  const loom_buffer_iface_t *iface;
  loom_buffer_type_t *buffer_type;
  size_t size;
  void *context; /* plugin private */
};

/* Buffer type: a kind of memory a device can allocate (device memory, pinned
 * host memory, ...). Owned by the plugin; lives until plugin shutdown.
 * Thread-safe. */
typedef struct loom_buffer_type_iface {
  size_t struct_size;
  const char *(*name)(loom_buffer_type_t *buffer_type);
  /* Allocate `size` bytes (size 0 is allowed). RESOURCE_EXHAUSTED when out of
   * memory, with the size in the message. */
  loom_status_t *(*alloc)(loom_buffer_type_t *buffer_type, size_t size,
                          loom_buffer_t **out_buffer);
  size_t (*alignment)(loom_buffer_type_t *buffer_type); /* power of two */
  /* (optional) Largest single allocation. NULL: SIZE_MAX. */
  size_t (*max_size)(loom_buffer_type_t *buffer_type);
  /* (optional) Bytes a tensor needs in this type. NULL: its dense size. */
  size_t (*alloc_size)(loom_buffer_type_t *buffer_type, const loom_tensor_t *tensor);
  /* Whether the host CPU can read and write this memory directly at `data`. */
  bool (*is_host)(loom_buffer_type_t *buffer_type);
} loom_buffer_type_iface_t;

struct loom_buffer_type {
  size_t struct_size;
  const loom_buffer_type_iface_t *iface;
  loom_device_t *device;
  void *context;
};

typedef enum loom_device_type {
  LOOM_DEVICE_TYPE_CPU = 0,
  LOOM_DEVICE_TYPE_GPU = 1,
  LOOM_DEVICE_TYPE_IGPU = 2, /* integrated GPU sharing host memory */
  LOOM_DEVICE_TYPE_ACCEL = 3 /* accelerator used next to the CPU (e.g. BLAS) */
} loom_device_type_t;

#define LOOM_DEVICE_CAP_ASYNC 1u          /* stream compute/copies may return before done */
#define LOOM_DEVICE_CAP_EVENTS 2u         /* event_create and record/wait are provided */
#define LOOM_DEVICE_CAP_HOST_BUFFER 4u    /* host_buffer_type is provided */
#define LOOM_DEVICE_CAP_BUFFER_FROM_HOST_PTR 8u /* buffer_from_host_ptr is provided */
#define LOOM_DEVICE_CAP_EMULATED 16u      /* a software stand-in for its type (e.g. lavapipe,
                                              * Vulkan on the CPU): used only when named,
                                              * never picked by an automatic policy */
#define LOOM_DEVICE_CAP_NO_CUT 32u        /* with ASYNC: the host does not cut another device's
                                            * split to overlap this device's work: waiting for
                                            * it part-way costs more than the overlap gains (a
                                            * remote device: a round trip per wait). Added
                                            * 2026-11-29 as COMPUTE_WAITS, renamed 2026-11-30 */
#define LOOM_DEVICE_CAP_COMPUTE_WAITS LOOM_DEVICE_CAP_NO_CUT /* the bit's first name */
#define LOOM_DEVICE_CAP_ORDERED_COPY 64u  /* with ASYNC: the buffers' copy_tensor between two
                                            * devices of this plugin that both set the bit is
                                            * ordered by the plugin after the work queued on
                                            * both devices' streams and before the work queued
                                            * on them after it: the host does not wait for
                                            * either (added 2026-11-30) */

/* Device properties. The host sets struct_size to the size it knows; the
 * plugin writes only fields that end within it. Strings live as long as the
 * device. */
typedef struct loom_device_props {
  size_t struct_size;
  const char *name;        /* short unique name, e.g. "cpu", "cuda0" */
  const char *description; /* human readable, e.g. the processor model */
  int32_t type;            /* loom_device_type_t */
  uint64_t memory_total;   /* bytes, 0 if unknown */
  uint64_t memory_free;    /* bytes, 0 if unknown */
  char pci_bus_id[32];     /* "0000:01:00.0", or "" when none */
  uint8_t uuid[16];
  bool has_uuid;
  uint32_t caps; /* LOOM_DEVICE_CAP_* */
} loom_device_props_t;

/* Device: owned by the plugin, lives until plugin shutdown. Entries are
 * thread-safe. */
typedef struct loom_device_iface {
  size_t struct_size;
  loom_status_t *(*get_props)(loom_device_t *device, loom_device_props_t *out_props);
  /* The device's own memory. Never NULL. */
  loom_buffer_type_t *(*buffer_type)(loom_device_t *device);
  /* (optional) Host memory that transfers fast to this device (pinned).
   * NULL: none; the host uses plain host memory. */
  loom_buffer_type_t *(*host_buffer_type)(loom_device_t *device);
  /* Whether a stream of this device can execute this node (op, types,
   * shapes, params as given). Must not fail or allocate. */
  bool (*supports_op)(loom_device_t *device, const loom_tensor_t *node);
  /* Whether this device's kernels read/write buffers of this type directly
   * (its own types always; host memory for CPU-like devices). */
  bool (*supports_buffer_type)(loom_device_t *device, const loom_buffer_type_t *buffer_type);
  /* Make a stream (an in-order queue). The caller destroys it. */
  loom_status_t *(*stream_create)(loom_device_t *device, loom_stream_t **out_stream);
  /* (optional) Make an event. NULL: no events; the host synchronises
   * streams instead. */
  loom_status_t *(*event_create)(loom_device_t *device, loom_event_t **out_event);
  /* (optional) A typed extension table by id and version, or NULL when not
   * provided. NULL entry: no extensions. */
  const void *(*get_extension)(loom_device_t *device, const char *id, uint32_t version);
  /* (optional) Wrap host memory as a buffer without copying. NULL: the host
   * copies into a buffer of buffer_type instead. */
  loom_status_t *(*buffer_from_host_ptr)(loom_device_t *device, void *ptr, size_t size,
                                         loom_buffer_t **out_buffer);
} loom_device_iface_t;

struct loom_device {
  size_t struct_size;
  const loom_device_iface_t *iface;
  void *context;
};

/* Stream: an in-order queue of work on one device. One thread at a time. */
typedef struct loom_stream_iface {
  size_t struct_size;
  void (*destroy)(loom_stream_t *stream); /* waits for pending work first */
  /* Run a graph. All tensors the graph touches are allocated in buffers this
   * device supports. May return before completion when the device has
   * LOOM_DEVICE_CAP_ASYNC; errors of async work come back from synchronize.
   * The graph struct and node array live only for the call; the tensors
   * stay unchanged until the work is done (docs/plugin-abi.md rule 14). */
  loom_status_t *(*compute)(loom_stream_t *stream, const loom_graph_t *graph);
  loom_status_t *(*synchronize)(loom_stream_t *stream);
  /* (optional) Queued host<->tensor copies. NULL: the host synchronizes and
   * uses the buffer's set_tensor/get_tensor. */
  loom_status_t *(*set_tensor_async)(loom_stream_t *stream, loom_tensor_t *tensor,
                                     const void *data, size_t offset, size_t size);
  loom_status_t *(*get_tensor_async)(loom_stream_t *stream, const loom_tensor_t *tensor,
                                     void *data, size_t offset, size_t size);
  /* (optional, required with LOOM_DEVICE_CAP_EVENTS) Record an event after
   * the work queued so far; make later work wait for an event. */
  loom_status_t *(*record_event)(loom_stream_t *stream, loom_event_t *event);
  loom_status_t *(*wait_event)(loom_stream_t *stream, loom_event_t *event);
} loom_stream_iface_t;

struct loom_stream {
  size_t struct_size;
  const loom_stream_iface_t *iface;
  loom_device_t *device;
  void *context;
};

typedef struct loom_event_iface {
  size_t struct_size;
  void (*destroy)(loom_event_t *event);
  loom_status_t *(*synchronize)(loom_event_t *event); /* block until recorded work is done */
} loom_event_iface_t;

struct loom_event {
  size_t struct_size;
  const loom_event_iface_t *iface;
  loom_device_t *device;
  void *context;
};

/* ------------------------------------------------------------------ plugin */

/* What loom_plugin_query returns: static data that lives until the library
 * is unloaded. */
typedef struct loom_plugin {
  size_t struct_size;
  uint32_t abi_version; /* LOOM_ABI_VERSION the plugin was built against */
  const char *name;     /* plugin name, equal to the <name> in its file name */
  const char *variant;  /* "" for a single build, else e.g. "avx512" */
  const char *version;  /* the plugin's own version string */
  /* (optional) How well this build fits the machine: 0 = cannot run here,
   * higher = better. Called before init; must only execute baseline
   * instructions. NULL: 1. */
  int32_t (*score)(void);
  /* Probe hardware and set up. Returns UNAVAILABLE (with the reason) when the
   * hardware or driver is absent; then shutdown is not called. */
  loom_status_t *(*init)(void **out_context);
  /* Release everything. Called once, after the host released every buffer,
   * stream and event it made through this plugin. */
  void (*shutdown)(void *context);
  size_t (*device_count)(void *context);
  loom_device_t *(*device_get)(void *context, size_t index); /* index < device_count */
  /* (optional) A typed plugin-level extension table, or NULL. */
  const void *(*get_extension)(void *context, const char *id, uint32_t version);
} loom_plugin_t;

/* The one exported entry. host_abi_version is LOOM_ABI_VERSION of the host;
 * `services` lives until the plugin is unloaded. Returns the plugin table,
 * or NULL when the plugin cannot serve this host at all. Must not call
 * anything but services->log before init. */
typedef const loom_plugin_t *(*loom_plugin_query_fn)(uint32_t host_abi_version,
                                                     const loom_host_services_t *services);
#define LOOM_PLUGIN_QUERY_SYMBOL "loom_plugin_query"

/* The 1.0 sizes of the tables and handles: the least struct_size each may
 * have (plugin rule 3 / host rule 3). A later minor appends fields past
 * them and the reader checks struct_size before touching one. Nothing has
 * been appended to these since 1.0, so today they equal sizeof. */
#define LOOM_HOST_SERVICES_SIZE_1_0 LOOM_STRUCT_END(loom_host_services_t, aligned_free)
#define LOOM_PLUGIN_SIZE_1_0 LOOM_STRUCT_END(loom_plugin_t, get_extension)
#define LOOM_DEVICE_SIZE_1_0 LOOM_STRUCT_END(loom_device_t, context)
#define LOOM_DEVICE_IFACE_SIZE_1_0 LOOM_STRUCT_END(loom_device_iface_t, buffer_from_host_ptr)
#define LOOM_BUFFER_TYPE_SIZE_1_0 LOOM_STRUCT_END(loom_buffer_type_t, context)
#define LOOM_BUFFER_TYPE_IFACE_SIZE_1_0 LOOM_STRUCT_END(loom_buffer_type_iface_t, is_host)
#define LOOM_BUFFER_SIZE_1_0 LOOM_STRUCT_END(loom_buffer_t, context)
#define LOOM_BUFFER_IFACE_SIZE_1_0 LOOM_STRUCT_END(loom_buffer_iface_t, copy_tensor)
#define LOOM_STREAM_SIZE_1_0 LOOM_STRUCT_END(loom_stream_t, context)
#define LOOM_STREAM_IFACE_SIZE_1_0 LOOM_STRUCT_END(loom_stream_iface_t, wait_event)

LOOM_PLUGIN_EXPORT const loom_plugin_t *loom_plugin_query(uint32_t host_abi_version,
                                                          const loom_host_services_t *services);

/* -------------------------------------------------------------- extensions */

/* Thread count of a CPU-like device (device-level extension). */
#define LOOM_EXT_THREADS "loom.threads"
#define LOOM_EXT_THREADS_VERSION 1u
typedef struct loom_ext_threads {
  size_t struct_size;
  /* n >= 1; takes effect for the next compute. */
  loom_status_t *(*set_threads)(loom_device_t *device, int32_t n_threads);
  int32_t (*get_threads)(loom_device_t *device);
} loom_ext_threads_t;

/* Estimated run time of a node on this device (device-level extension). The
 * scheduler ranks devices with it (which device takes a node that several
 * can run: offload, preferred device); without it the host uses a crude
 * model by device type. Only the ranking matters, not the absolute value. */
#define LOOM_EXT_COST "loom.cost"
#define LOOM_EXT_COST_VERSION 1u
typedef struct loom_ext_cost {
  size_t struct_size;
  /* Microseconds to run node with its sources already in memory this device
   * reads (copies are the host's to add); < 0: no estimate for this node.
   * Called from the host thread that plans; must not block. */
  double (*op_time_us)(loom_device_t *device, const loom_tensor_t *node);
} loom_ext_cost_t;

/* Weights in a layout the device's kernels read faster (device-level
 * extension), e.g. rows of a quantized matrix interleaved for a GEMV tile.
 * The host asks it once per weight that is read only as MUL_MAT's src0 and
 * that it will place on this device; it allocates such weights in the
 * returned buffer type. That type's set_tensor / get_tensor take and give
 * the canonical bytes (GGUF's), in whole quant blocks; its is_host() is
 * false, so no other device reads the memory through tensor->data (the host
 * copies through get_tensor instead). The device reads the type
 * (supports_buffer_type) and declines, in supports_op, nodes that read such
 * a tensor other than as a whole MUL_MAT src0. A device may instead return
 * a host buffer type (is_host() true) that keeps the canonical bytes as
 * they are, when only the memory is better for its kernels (e.g. huge
 * pages): every device that reads host memory reads such weights, and any
 * node may. */
#define LOOM_EXT_WEIGHT_LAYOUT "loom.weight_layout"
#define LOOM_EXT_WEIGHT_LAYOUT_VERSION 1u
typedef struct loom_ext_weight_layout {
  size_t struct_size;
  /* The buffer type to hold `tensor` (not yet allocated: type, ne, nb and
   * name are set) or NULL to keep the device's default buffer type.
   * Borrowed; lives as long as the device. Must not block. */
  loom_buffer_type_t *(*weight_buffer_type)(loom_device_t *device, const loom_tensor_t *tensor);
} loom_ext_weight_layout_t;

/* Facts about a device's state now, for people (device-level extension):
 * lines "key: value\n", e.g. a pipeline cache, whether it was found and
 * what building pipelines has cost so far. `loom devices -v` prints them
 * under the device; nothing parses them. */
#define LOOM_EXT_DETAILS "loom.details"
#define LOOM_EXT_DETAILS_VERSION 1u
typedef struct loom_ext_details {
  size_t struct_size;
  /* Writes the text into out, cut to cap - 1 bytes and NUL-terminated (cap
   * 0: out may be NULL); returns the whole text's length in bytes, so a
   * caller whose cap was too small asks again. Thread-safe; must not wait
   * for the device. */
  size_t (*get_details)(loom_device_t *device, char *out, size_t cap);
} loom_ext_details_t;

/* Tensor bytes read by the device from a file it opens itself
 * (device-level extension), so a loader does not move them through the host:
 * a device whose memory is in another process or host (the mpi plugin: the
 * worker rank opens the same GGUF) reads them where they are needed. The
 * host (the llama loader) calls it only for a weight whose bytes are a plain
 * slice of the file (no conversion, no weight_layout buffer type) and falls
 * back to buffer set_tensor when it fails. */
#define LOOM_EXT_FILE_LOAD "loom.file_load"
#define LOOM_EXT_FILE_LOAD_VERSION 1u
typedef struct loom_ext_file_load {
  size_t struct_size;
  /* Bytes [0, size) of `tensor` (in `buffer`, a buffer of this device) =
   * bytes [file_offset, file_offset + size) of the file at `path` (absolute,
   * as the host sees it; the device may map it). checksum64 is the host's
   * checksum of those bytes: FNV-1a 64 over little-endian 64-bit words, then
   * the tail bytes, then the length (docs/plugin-abi.md gives the exact
   * definition; plugins/common/checksum64.h implements it); the device
   * verifies it before it reports success. The host checked the
   * range as for set_tensor. Errors: NOT_FOUND (no such file),
   * INVALID_ARGUMENT (the slice is past the end of the file, or the
   * checksum differs), UNIMPLEMENTED (the device cannot read files now), each
   * naming the path; the tensor's bytes are then unspecified until the host
   * sets them. Called from the loading thread; may block while it reads. */
  loom_status_t *(*set_tensor_from_file)(loom_device_t *device, loom_buffer_t *buffer, loom_tensor_t *tensor,
                                         const char *path, uint64_t file_offset, uint64_t size,
                                         uint64_t checksum64);
} loom_ext_file_load_t;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_PLUGIN_H */
