/* opchain vendor plugin ABI: the C contract between opchain and a vendor built outside the tree.
 *
 * Pure C (C99 and C++): plain structs, function pointers, integer status codes. No C++ type and no
 * exception crosses it. docs/writing-a-vendor.md walks through examples/vendor-plugin, which uses it.
 *
 * Note [Vendor ABI]
 * A plugin is a shared library exporting one symbol, OPCHAIN_VENDOR_ENTRY_SYMBOL:
 *
 *     const oc_vendor_plugin* opchain_vendor_plugin_init(const oc_host_api* host, char* err, size_t err_size);
 *
 * It returns a description that lives as long as the library (a static struct, usually): the ABI
 * version the plugin was built against (first, so a host of any version can read it), the vendor's
 * name, the vendor it falls back to for the ops it does not cover, its kernels, and an optional
 * update_step_context hook. On failure it returns NULL with a message in err.
 *
 * Versions. The host loads a plugin whose abi_major equals OPCHAIN_VENDOR_ABI_MAJOR and whose
 * abi_minor is at most the host's; a minor release only adds (argument kinds, host API members at the
 * end of oc_host_api, flags). Anything else is refused with both versions named.
 *
 * Kernels. Each oc_kernel_def names an op by its key in opchain's op table (`opchain ops` lists them)
 * and the dispatch dtype it serves. The host calls the kernel with the op's fields marshalled in field
 * order (the op's schema string, which `opchain ops --json` prints with each field's role and kind
 * under "abi_fields", and which host->op_field() answers at init): tensors as oc_tensor, scalar
 * attributes as typed values, enumerations as their index. Field order is the ABI: a field is only
 * ever appended to an op in a minor release, never reordered.
 *
 * Status. A kernel returns OC_STATUS_OK or an error code and may write a NUL-terminated message into
 * err (err_size bytes, at least 256). The host turns an error into an opchain error naming the plugin,
 * vendor, op key and dtype; it never continues a step after one.
 *
 * Graph capture. A kernel is replayed from a captured graph only if its flags hold
 * OC_KERNEL_CAPTURE_SAFE: it reads sizes from its tensors only (never from values frozen at capture)
 * and allocates nothing. Without the flag, graph mode is turned off for a model that uses the kernel.
 */
#ifndef OPCHAIN_VENDOR_ABI_H
#define OPCHAIN_VENDOR_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OPCHAIN_VENDOR_ABI_MAJOR 1
#define OPCHAIN_VENDOR_ABI_MINOR 0
#define OPCHAIN_VENDOR_ENTRY_SYMBOL "opchain_vendor_plugin_init"

#if defined(_WIN32)
#define OPCHAIN_VENDOR_EXPORT __declspec(dllexport)
#else
#define OPCHAIN_VENDOR_EXPORT __attribute__((visibility("default")))
#endif

#define OC_MAX_DIMS 4

/* Status codes of kernels, hooks and host queries. */
#define OC_STATUS_OK 0
#define OC_STATUS_ERROR 1          /* anything else; say what in err */
#define OC_STATUS_UNSUPPORTED 2    /* shapes or attributes this kernel does not handle */
#define OC_STATUS_INVALID_ARGUMENT 3

/* Element types; the numbers are opchain's DType. */
typedef enum oc_dtype {
  OC_DTYPE_F32 = 0,
  OC_DTYPE_F16 = 1,
  OC_DTYPE_BF16 = 2,
  OC_DTYPE_I32 = 3,
  OC_DTYPE_I64 = 4,
  OC_DTYPE_U8 = 5,
  OC_DTYPE_I8 = 6,
  OC_DTYPE_F8E4M3 = 7
} oc_dtype;

typedef enum oc_device { OC_DEVICE_HOST = 0 } oc_device;

/* A tensor view. data == NULL: an absent optional tensor (`?` in the schema). Strides are in
 * elements; ABI 1.0 tensors are row-major and contiguous, and the strides say so. */
typedef struct oc_tensor {
  void* data;
  int32_t dtype;   /* oc_dtype */
  int32_t device;  /* oc_device */
  int32_t ndim;
  int32_t reserved;
  int64_t shape[OC_MAX_DIMS];
  int64_t strides[OC_MAX_DIMS];
} oc_tensor;

/* A field's role: as in the schema string (`T` in, `T!` inout, after `->` out). */
typedef enum oc_role {
  OC_ROLE_IN = 0,
  OC_ROLE_INOUT = 1,
  OC_ROLE_OUT = 2,
  OC_ROLE_ATTR = 3,
  OC_ROLE_META = 4
} oc_role;

/* How a field is marshalled. OC_ARG_OPAQUE: a host object ABI 1.0 has no C form for (quantisation
 * parameters, expert weight sets, step metadata); value.present says whether it is set. A plugin
 * may provide a kernel only for an op whose required fields all have a C form; an optional opaque
 * field (linear's quant) is always unset for the dtypes such a kernel serves. */
typedef enum oc_arg_kind {
  OC_ARG_TENSOR = 0,
  OC_ARG_F32 = 1,
  OC_ARG_I64 = 2,
  OC_ARG_BOOL = 3,
  OC_ARG_ENUM = 4, /* value.i64: the index in oc_field_info.enum_values ("f32|bf16|quantized") */
  OC_ARG_OPAQUE = 5
} oc_arg_kind;

typedef struct oc_arg {
  const char* name; /* the schema's field name */
  int32_t kind;     /* oc_arg_kind */
  int32_t role;     /* oc_role */
  union {
    oc_tensor tensor;
    float f32;
    int64_t i64;
    int32_t boolean;
    int32_t present;
  } value;
} oc_arg;

/* One field of an op, as host->op_field() describes it. */
typedef struct oc_field_info {
  const char* name;
  int32_t role;        /* oc_role */
  int32_t kind;        /* oc_arg_kind */
  int32_t optional;    /* `?` in the schema: a tensor may be absent (data == NULL) */
  int32_t reserved;
  const char* enum_values; /* OC_ARG_ENUM: the values' names in index order, '|'-separated; else "" */
} oc_field_info;

/* What the host offers at init. Members are only ever appended (check struct_size). */
typedef struct oc_host_api {
  uint32_t abi_major;
  uint32_t abi_minor;
  size_t struct_size;
  size_t (*num_ops)(void);
  const char* (*op_key)(size_t op);     /* NULL when op >= num_ops() */
  const char* (*op_schema)(size_t op);
  /* The op index of a key; OC_STATUS_INVALID_ARGUMENT for a key not in the table. */
  int32_t (*find_op)(const char* key, size_t* op);
  size_t (*op_num_fields)(size_t op);
  int32_t (*op_field)(size_t op, size_t field, oc_field_info* out);
} oc_host_api;

/* A kernel: args[0..num_args) are the op's fields in order. user_data is the plugin's. */
typedef int32_t (*oc_kernel_fn)(const oc_arg* args, size_t num_args, void* user_data, char* err, size_t err_size);

#define OC_KERNEL_CAPTURE_SAFE 1u

typedef struct oc_kernel_def {
  const char* op_key;     /* "rms_norm" */
  int32_t dtype;          /* oc_dtype: the op's dispatch dtype (the weight's for weight ops) */
  uint32_t flags;         /* OC_KERNEL_* */
  const char* name;       /* shown in traces, e.g. "example::rms_norm_f32"; NULL: vendor::key_dtype */
  oc_kernel_fn fn;
} oc_kernel_def;

/* The step as the host's default update_step_context filled it, read only. */
typedef struct oc_step_info {
  int64_t batch_size;
  int64_t num_tokens;   /* including padding rows */
  int64_t num_padding_tokens;
  int64_t block_size;
  int64_t max_q_seqlen;
  int64_t max_kv_seqlen;
  int32_t is_decoding;
  int32_t has_past;
  oc_tensor q_start_loc, q_seqlens, kv_seqlens, block_tables, slot_mapping, state_slots; /* i32 */
} oc_step_info;

typedef struct oc_vendor_plugin {
  uint32_t abi_major;          /* OPCHAIN_VENDOR_ABI_MAJOR as the plugin saw it: keep first */
  uint32_t abi_minor;          /* OPCHAIN_VENDOR_ABI_MINOR: keep second */
  const char* vendor_name;     /* [a-z0-9_-]+, not a vendor already registered */
  const char* fallback_vendor; /* NULL or "": none; else every (key, dtype) missing here resolves there */
  const oc_kernel_def* kernels;
  size_t num_kernels;
  /* Optional (NULL: none): called once per step, also before each graph replay, after the host has
   * filled the step's metadata; a vendor that keeps its own copy of it (device buffers) refreshes it
   * here. Must not keep pointers into info past the call. */
  int32_t (*update_step_context)(const oc_step_info* info, void* user_data, char* err, size_t err_size);
  void* user_data;             /* passed to every kernel and hook */
} oc_vendor_plugin;

typedef const oc_vendor_plugin* (*oc_vendor_plugin_init_fn)(const oc_host_api* host, char* err, size_t err_size);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OPCHAIN_VENDOR_ABI_H */
