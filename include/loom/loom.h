/*
 * loom C API — load a GGUF model on the devices a machine has and generate
 * text, from C or any language with a C FFI. docs/embedding.md walks through
 * it; include/loom/loom.hpp wraps it for C++.
 *
 * Standalone C99: includes only <stdint.h>, <stddef.h>, <stdbool.h>. Link
 * libloom (CMake: find_package(loom CONFIG) and loom::loom; pkg-config: loom).
 *
 * Versions are major.minor, packed like the plugin ABI's: a new minor only
 * appends functions, enum values and fields at the end of structs; a new
 * major breaks. loom_api_version() tells the version of the library loaded,
 * LOOM_API_VERSION the version the application was compiled against.
 *
 * Conventions, for every function below:
 *   - A function that can fail returns loom_status_t*: NULL is success, any
 *     other value is an error the caller owns and releases with
 *     loom_status_free(). loom_status_code() / loom_status_message() read it.
 *     Nothing here aborts, exits or lets a C++ exception escape: bad
 *     arguments (NULL handles, NULL out-pointers, unknown names, missing or
 *     malformed files) come back as statuses naming the function and what was
 *     wrong. On error, out-parameters are left as they were unless stated.
 *   - Handles are opaque and made by *_open / *_create / *_load / *_select;
 *     each is released by its own *_free / *_close, which accept NULL. A
 *     handle keeps what it was made from alive: a model keeps its registry's
 *     plugins loaded, a session keeps its model, so handles may be released
 *     in any order.
 *   - Strings returned as `const char *` are NUL-terminated UTF-8 owned by the
 *     handle that returned them, valid until that handle is released (records
 *     of a registry: until loom_registry_close). Strings passed in are read
 *     during the call only.
 *   - Parameter structs start with struct_size: fill them with their *_init
 *     function (which sets struct_size = sizeof), then change fields. The
 *     library reads only the fields that fit in struct_size, so an
 *     application built against an older minor keeps working. Records the
 *     library returns (loom_plugin_record_t, loom_device_info_t) are owned by
 *     the library; their struct_size says how many fields they hold.
 *   - Enumerations inside structs are int32_t fields (an enum's size is the
 *     compiler's choice); the comment names the enum.
 *   - Thread-safety: different handles may be used on different threads at
 *     once; one handle is used by one thread at a time (a session is never
 *     used concurrently, nor its model's tokenizer functions while it
 *     decodes). loom_api_version, loom_version_string and
 *     loom_status_code_name are thread-safe.
 */
#ifndef LOOM_LOOM_H
#define LOOM_LOOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- versions */

#define LOOM_API_VERSION_MAJOR 1u
#define LOOM_API_VERSION_MINOR 2u  /* 1.1: sequence slots (n_seq, loom_session_decode_batch, _copy_seq, _n_seq); 1.2: LOOM_KV_TYPE_Q8_0 */
/* Packed version: major in the high 16 bits, minor in the low 16 bits. */
#define LOOM_API_MAKE_VERSION(major, minor) ((uint32_t)(((major) << 16) | ((minor)&0xFFFFu)))
#define LOOM_API_VERSION LOOM_API_MAKE_VERSION(LOOM_API_VERSION_MAJOR, LOOM_API_VERSION_MINOR)
#define LOOM_API_MAJOR(v) ((uint32_t)(v) >> 16)
#define LOOM_API_MINOR(v) ((uint32_t)(v)&0xFFFFu)

#if defined(_WIN32) && defined(LOOM_BUILDING_LIBRARY)
#define LOOM_API __declspec(dllexport)
#elif defined(_WIN32)
#define LOOM_API __declspec(dllimport)
#elif defined(__GNUC__)
#define LOOM_API __attribute__((visibility("default")))
#else
#define LOOM_API
#endif

/* LOOM_API_VERSION of the loaded library. An application compiled against
 * major M should refuse a library whose LOOM_API_MAJOR differs from M, and
 * call functions added in a minor only when the library's minor has them. */
LOOM_API uint32_t loom_api_version(void);
/* The library's release, e.g. "0.1.0" (static storage). */
LOOM_API const char *loom_version_string(void);

/* ------------------------------------------------------------------ status */

/* The same codes and status object as the plugin ABI (include/loom/plugin.h
 * defines them under the same guard). */
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
typedef struct loom_status loom_status_t;
#endif /* LOOM_STATUS_TYPES_DEFINED */

/* LOOM_STATUS_OK for NULL. */
LOOM_API loom_status_code_t loom_status_code(const loom_status_t *status);
/* "[operation] what: values", owned by the status; "" for NULL. */
LOOM_API const char *loom_status_message(const loom_status_t *status);
/* "OK", "INVALID_ARGUMENT", ... (static storage); "UNKNOWN" for other values. */
LOOM_API const char *loom_status_code_name(loom_status_code_t code);
/* Release a status (NULL is fine). */
LOOM_API void loom_status_free(loom_status_t *status);

/* ---------------------------------------------------------------- registry */

/* The plugins found on this machine and their devices. Opening it searches
 * (in order) the options' plugin_paths, LOOM_PLUGIN_PATH, the folder of
 * libloom and libloom's install folder for libloom-<name>.so, and records
 * what became of every file. */
typedef struct loom_registry loom_registry_t;

typedef struct loom_registry_options {
  size_t struct_size;
  /* Folders (or plugin files) searched first; relative paths are made
   * absolute against the current directory. May be NULL when n is 0. */
  const char *const *plugin_paths;
  size_t n_plugin_paths;
  /* A comma list of the device names the application will select (e.g.
   * "cpu"): plugins that serve none of them are not loaded into the process
   * (they are listed as skipped). NULL, "" or a policy ("auto", "gpu-first",
   * "cpu-only"): every plugin is loaded. */
  const char *devices;
} loom_registry_options_t;

LOOM_API void loom_registry_options_init(loom_registry_options_t *options);

/* options may be NULL (the defaults). Opening never fails because a plugin
 * is broken: such files become records with the reason. *out_registry is
 * released with loom_registry_close. */
LOOM_API loom_status_t *loom_registry_open(const loom_registry_options_t *options, loom_registry_t **out_registry);
/* Release the application's handle. Plugins stay loaded while a model made
 * through the registry is alive. NULL is fine. */
LOOM_API void loom_registry_close(loom_registry_t *registry);

/* What became of a plugin file. */
typedef enum loom_plugin_state {
  LOOM_PLUGIN_STATE_READY = 0,       /* loaded; its devices are listed */
  LOOM_PLUGIN_STATE_UNAVAILABLE = 1, /* its hardware or driver is absent (normal) */
  LOOM_PLUGIN_STATE_FAILED = 2,      /* broken: cannot be opened, wrong ABI, errors, crashes */
  LOOM_PLUGIN_STATE_SKIPPED = 3      /* filtered, lost to a better variant, not needed */
} loom_plugin_state_t;

typedef struct loom_plugin_record {
  size_t struct_size;
  const char *name;    /* plugin name from the file name, e.g. "cpu" */
  const char *variant; /* e.g. "avx2"; "" when none */
  const char *path;    /* the file */
  const char *origin;  /* "application", "LOOM_PLUGIN_PATH", "library folder", "install folder" */
  int32_t state;       /* loom_plugin_state_t */
  const char *reason;  /* why it is not ready; "" when ready */
  const char *version; /* the plugin's own version; "" when unknown */
  uint32_t abi_version; /* the plugin ABI version it speaks (0 before negotiation) */
  size_t n_devices;
} loom_plugin_record_t;

/* Plugin files found, in search order. */
LOOM_API size_t loom_registry_plugin_count(const loom_registry_t *registry);
/* Record `index` (< count), owned by the registry; NULL for a NULL registry
 * or an index out of range. */
LOOM_API const loom_plugin_record_t *loom_registry_plugin(const loom_registry_t *registry, size_t index);

typedef enum loom_device_kind {
  LOOM_DEVICE_KIND_CPU = 0,
  LOOM_DEVICE_KIND_GPU = 1,
  LOOM_DEVICE_KIND_IGPU = 2, /* integrated GPU sharing host memory */
  LOOM_DEVICE_KIND_ACCEL = 3 /* accelerator used next to the CPU (e.g. BLAS) */
} loom_device_kind_t;

typedef struct loom_device_info {
  size_t struct_size;
  const char *name;        /* e.g. "cpu", "vulkan0": what selection takes */
  const char *description; /* e.g. the CPU or GPU model */
  const char *plugin;      /* the plugin serving it */
  int32_t kind;            /* loom_device_kind_t */
  bool emulated;           /* a software stand-in for its kind (e.g. lavapipe) */
  uint64_t memory_total;   /* bytes; 0 when unknown */
  uint64_t memory_free;    /* bytes at registry open; 0 when unknown */
  const char *pci_bus_id;  /* "" when unknown */
  const char *uuid;        /* 32 hex digits; "" when unknown */
} loom_device_info_t;

/* Devices of the ready plugins (one physical device shown by two plugins is
 * listed once). */
LOOM_API size_t loom_registry_device_count(const loom_registry_t *registry);
/* Device `index` (< count), owned by the registry; NULL when out of range. */
LOOM_API const loom_device_info_t *loom_registry_device(const loom_registry_t *registry, size_t index);
/* Things a user should see: refused search paths, a device name a plugin
 * could not take, ... (as `loom devices` prints them). */
LOOM_API size_t loom_registry_warning_count(const loom_registry_t *registry);
/* Warning `index` (< count), owned by the registry; NULL when out of range. */
LOOM_API const char *loom_registry_warning(const loom_registry_t *registry, size_t index);

/* --------------------------------------------------------------- selection */

/* An ordered list of devices to run a model on. */
typedef struct loom_devices loom_devices_t;

/* spec, as `loom run --device` takes it: a comma list of device names (every
 * one must exist, else NOT_FOUND naming it and the devices there are), or a
 * policy: "auto" / "gpu-first" (GPUs, then accelerators, then the CPU;
 * emulated devices only when named) or "cpu-only". NULL or "": the
 * LOOM_DEVICES environment variable when set, else "auto". Error messages
 * name where the list came from ("LOOM_DEVICES=cuda0: ..."). An empty
 * selection is an error. *out_devices is released with loom_devices_free and
 * keeps the registry's plugins loaded. */
LOOM_API loom_status_t *loom_devices_select(const loom_registry_t *registry, const char *spec,
                                            loom_devices_t **out_devices);
LOOM_API void loom_devices_free(loom_devices_t *devices);
LOOM_API size_t loom_devices_count(const loom_devices_t *devices);
/* Device `index` of the list, owned by the list; NULL when out of range. */
LOOM_API const loom_device_info_t *loom_devices_get(const loom_devices_t *devices, size_t index);

/* ------------------------------------------------------------------- model */

/* A llama-family GGUF model (architectures llama, qwen2, qwen3) with its
 * tokenizer, its weights placed on a device list. */
typedef struct loom_model loom_model_t;

/* Called while weights are copied into device memory (bytes done so far,
 * bytes to copy, the device's name), and always once at the end with
 * done == total (weights the device reads straight from the mapped file
 * count as done at once). */
typedef void (*loom_progress_fn)(uint64_t done, uint64_t total, const char *device, void *user_data);

typedef struct loom_model_params {
  size_t struct_size;
  /* The weights and KV cache of the first n_gpu_layers layers live on the
   * first non-CPU device of the list that has its own memory (default 0).
   * < 0: as many as fit, like `loom run` without -ngl: each non-CPU device
   * with its own memory, in list order, takes the layers that fit in its
   * free memory after its KV cache and compute buffers (sized for a session
   * of the model's training context), the CPU the rest; when not even that
   * fits, RESOURCE_EXHAUSTED with the bytes needed and free per device. */
  int32_t n_gpu_layers;
  /* Threads of every CPU-like device of the list (CPU, accelerators such as
   * blas); 0: each device's default (its physical cores). */
  int32_t n_threads;
  loom_progress_fn progress; /* may be NULL */
  void *progress_user_data;
} loom_model_params_t;

LOOM_API void loom_model_params_init(loom_model_params_t *params);

/* Load the model at path (a regular GGUF file) onto devices; params may be
 * NULL. Errors name the file and what is wrong (missing file, not GGUF, an
 * unsupported architecture or tokenizer, shapes, no tokenizer, memory).
 * The device list may be freed afterwards. */
LOOM_API loom_status_t *loom_model_load(const loom_devices_t *devices, const char *path,
                                        const loom_model_params_t *params, loom_model_t **out_model);
LOOM_API void loom_model_free(loom_model_t *model);

/* Vocabulary size; 0 for NULL. */
LOOM_API int32_t loom_model_n_vocab(const loom_model_t *model);
/* The context length the model was trained with; 0 for NULL. */
LOOM_API int32_t loom_model_n_ctx_train(const loom_model_t *model);
/* "llama", "qwen2", "qwen3"; "" for NULL. */
LOOM_API const char *loom_model_architecture(const loom_model_t *model);
/* The begin-of-sequence token, -1 when the model has none or for NULL. */
LOOM_API int32_t loom_model_token_bos(const loom_model_t *model);
/* Whether token ends generation (EOS, end-of-turn tokens); false for NULL. */
LOOM_API bool loom_model_token_is_eog(const loom_model_t *model, int32_t token);

#define LOOM_TOKENIZE_ADD_SPECIAL 1u   /* BOS/EOS as the model's tokenizer asks (what a prompt gets) */
#define LOOM_TOKENIZE_PARSE_SPECIAL 2u /* special-token text such as <|eot_id|> becomes its id */

/* Text (length bytes of UTF-8, need not be NUL-terminated) to token ids.
 * Writes the ids to tokens[0..capacity) and their count to *out_n_tokens.
 * tokens may be NULL with capacity 0 to ask for the count; otherwise a
 * capacity below the count is RESOURCE_EXHAUSTED (with *out_n_tokens set
 * to the count). */
LOOM_API loom_status_t *loom_model_tokenize(const loom_model_t *model, const char *text, size_t length,
                                            uint32_t flags, int32_t *tokens, size_t capacity,
                                            size_t *out_n_tokens);
/* One token's text as it appears in decoded output (SentencePiece's word
 * marker becomes a space, byte tokens their byte; control tokens give "").
 * Writes up to capacity bytes to buf (no NUL added) and the length to
 * *out_length; the same size rules as loom_model_tokenize. An id outside
 * [0, n_vocab) is INVALID_ARGUMENT. */
LOOM_API loom_status_t *loom_model_token_to_piece(const loom_model_t *model, int32_t token, char *buf,
                                                  size_t capacity, size_t *out_length);
/* A token sequence to text, with the tokenizer's rules for the whole
 * sequence (the leading space SentencePiece adds is removed at the start and
 * after BOS): what streaming by pieces adds up to. Size rules as above. */
LOOM_API loom_status_t *loom_model_detokenize(const loom_model_t *model, const int32_t *tokens, size_t n_tokens,
                                              char *buf, size_t capacity, size_t *out_length);

/* ----------------------------------------------------------------- session */

/* Evaluation state over a model: the KV cache, the position, the logits of
 * the last token decoded. One live session per model at a time; a session
 * holds n_seq sequences (slots) that loom_session_decode_batch steps
 * together (a server's many users, each with its own positions). */
typedef struct loom_session loom_session_t;

typedef enum loom_kv_type {
  LOOM_KV_TYPE_F16 = 0, /* default: half the bytes per cached position */
  LOOM_KV_TYPE_F32 = 1,
  /* (API 1.2) 8-bit: 34 bytes per 32 values, about half of F16's; the
   * model's head size must be a multiple of 32 (INVALID_ARGUMENT names it
   * otherwise). A library of API 1.1 refuses it as an unknown kv_type. */
  LOOM_KV_TYPE_Q8_0 = 2
} loom_kv_type_t;

typedef struct loom_session_params {
  size_t struct_size;
  int32_t n_ctx;   /* context length in tokens; 0: the model's training context, halved while its KV
                     cache would take more than half of the free memory (down to 4096;
                     loom_session_n_ctx says what it got) */
  int32_t n_batch; /* prompt tokens per forward pass (default 32) */
  int32_t kv_type; /* loom_kv_type_t (default F16) */
  int32_t n_seq;   /* sequence slots of n_ctx positions each (default 1; 1..4096) */
} loom_session_params_t;

LOOM_API void loom_session_params_init(loom_session_params_t *params);
/* params may be NULL. A KV cache larger than a device's memory is
 * RESOURCE_EXHAUSTED naming the bytes and the device; a second session on
 * a model whose first is alive is UNIMPLEMENTED. */
LOOM_API loom_status_t *loom_session_create(loom_model_t *model, const loom_session_params_t *params,
                                            loom_session_t **out_session);
LOOM_API void loom_session_free(loom_session_t *session);

/* Evaluate tokens at the current position (then advance it by n_tokens)
 * and keep the logits of the last one. Ids outside [0, n_vocab), no tokens,
 * or a position past the context are INVALID_ARGUMENT (nothing evaluated). */
LOOM_API loom_status_t *loom_session_decode(loom_session_t *session, const int32_t *tokens, size_t n_tokens);
/* The logits of the last token decoded: n_vocab floats owned by the session,
 * valid until its next decode, generate, reset or free.
 * INVALID_ARGUMENT when nothing was decoded since the last reset or generate. */
LOOM_API loom_status_t *loom_session_logits(const loom_session_t *session, const float **out_logits,
                                            size_t *out_n_vocab);
/* Forget every position (a new sequence starts at 0). */
LOOM_API void loom_session_reset(loom_session_t *session);
/* Tokens evaluated since the last reset; 0 for NULL. */
LOOM_API int32_t loom_session_n_past(const loom_session_t *session);
/* The session's context length; 0 for NULL. */
LOOM_API int32_t loom_session_n_ctx(const loom_session_t *session);

/* One token of a multi-sequence batch: token `token` of sequence (slot)
 * `seq` at position `pos` of that sequence; logits != 0: its row of logits
 * is kept. */
typedef struct loom_batch_token {
  int32_t token;
  int32_t seq;
  int32_t pos;
  int32_t logits;
} loom_batch_token_t;

/* Evaluate tokens of several sequences in one step (each sequence's rows
 * [0, pos) must hold its earlier tokens: evaluated before or earlier in this
 * batch). *out_logits: n_vocab floats per token flagged `logits`, in batch
 * order (*out_rows rows), owned by the session and valid until its next
 * decode, generate, reset or free. At most n_batch tokens; a slot outside
 * [0, n_seq), a position outside [0, n_ctx), an id outside the vocabulary,
 * one (seq, pos) twice or no token flagged is INVALID_ARGUMENT and nothing is
 * evaluated. Sliding-window layers (gemma2, gemma3) keep only a window of
 * each sequence's last positions: continuing a sequence below what they
 * still hold (a rewind after the sequence moved on) is INVALID_ARGUMENT too;
 * restarting it at position 0 always works. Does not move
 * loom_session_n_past (slot 0's single-sequence position). */
LOOM_API loom_status_t *loom_session_decode_batch(loom_session_t *session, const loom_batch_token_t *batch,
                                                  size_t n_tokens, const float **out_logits, size_t *out_rows);
/* Copy the cached positions [0, n) of sequence src into sequence dst (a
 * prompt prefix two sequences share is computed once); INVALID_ARGUMENT when
 * src's sliding-window layers no longer hold the window before n. */
LOOM_API loom_status_t *loom_session_copy_seq(loom_session_t *session, int32_t src, int32_t dst, int32_t n);
/* The session's sequence slots; 0 for NULL. */
LOOM_API int32_t loom_session_n_seq(const loom_session_t *session);

/* ----------------------------------------------------------------- sampler */

/* Chooses the next token from logits. temperature <= 0 is greedy (the
 * largest logit, first on ties). Otherwise: keep the top_k largest logits
 * (top_k <= 0: all), softmax at the temperature, keep the smallest set of
 * most likely tokens whose probability reaches top_p (1: all), draw with a
 * generator seeded with seed: one seed replays the same text. These are
 * `loom run`'s --temp, --top-k, --top-p and --seed. */
typedef struct loom_sampler loom_sampler_t;

typedef struct loom_sampler_params {
  size_t struct_size;
  float temperature; /* default 0: greedy */
  int32_t top_k;     /* default 40 */
  float top_p;       /* default 0.95; must be in (0, 1] */
  uint32_t seed;     /* default 42 */
} loom_sampler_params_t;

LOOM_API void loom_sampler_params_init(loom_sampler_params_t *params);
/* params may be NULL (greedy). A NaN or negative temperature, or top_p
 * outside (0, 1], is INVALID_ARGUMENT. */
LOOM_API loom_status_t *loom_sampler_create(const loom_sampler_params_t *params, loom_sampler_t **out_sampler);
LOOM_API void loom_sampler_free(loom_sampler_t *sampler);
/* Draw the next token from the session's last logits (see
 * loom_session_logits; INVALID_ARGUMENT when it has none). */
LOOM_API loom_status_t *loom_session_sample(const loom_session_t *session, loom_sampler_t *sampler,
                                            int32_t *out_token);

/* ---------------------------------------------------------------- generate */

/* Receives each new piece of generated text (length bytes of UTF-8, not
 * NUL-terminated, valid during the call). Return true to go on, false to stop
 * (the generation then ends with LOOM_STOP_CALLER). */
typedef bool (*loom_piece_fn)(const char *piece, size_t length, void *user_data);

typedef enum loom_stop_reason {
  LOOM_STOP_EOG = 0,     /* the model ended the text (EOS or an end-of-turn token) */
  LOOM_STOP_LENGTH = 1,  /* n_predict tokens were generated */
  LOOM_STOP_CONTEXT = 2, /* the context is full */
  LOOM_STOP_CALLER = 3   /* on_piece returned false */
} loom_stop_reason_t;

typedef struct loom_generate_params {
  size_t struct_size;
  int32_t n_predict; /* tokens to generate at most (default 200; >= 0) */
  /* Sampling, as loom_sampler_params_t (defaults: greedy). */
  float temperature;
  int32_t top_k;
  float top_p;
  uint32_t seed;
  loom_piece_fn on_piece; /* may be NULL */
  void *user_data;
} loom_generate_params_t;

typedef struct loom_generate_result {
  size_t struct_size; /* set by the caller (sizeof); fields past it are not written */
  int32_t n_prompt_tokens; /* BOS included */
  int32_t n_generated;     /* the end-of-generation token not included */
  int32_t stop;            /* loom_stop_reason_t */
  double prompt_tokens_per_s;
  double gen_tokens_per_s;
} loom_generate_result_t;

LOOM_API void loom_generate_params_init(loom_generate_params_t *params);
LOOM_API void loom_generate_result_init(loom_generate_result_t *result);

/* Reset the session, tokenize prompt (NUL-terminated; "" starts from BOS)
 * as the model's tokenizer asks, evaluate it, then sample and evaluate one
 * token at a time until an end-of-generation token, n_predict tokens, the
 * end of the context or on_piece returning false. Pieces are differences
 * of the decoded text, so they add up to loom_model_detokenize of the
 * generated tokens. The same code as `loom run`: greedy output is
 * byte-identical. params may be NULL (200 tokens, greedy, no callback);
 * out_result may be NULL. Afterwards the session holds no logits. */
LOOM_API loom_status_t *loom_session_generate(loom_session_t *session, const char *prompt,
                                              const loom_generate_params_t *params,
                                              loom_generate_result_t *out_result);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LOOM_LOOM_H */
