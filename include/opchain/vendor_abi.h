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
 * end of oc_host_api, flags, members at the end of oc_vendor_plugin that the host reads only from a
 * plugin of that minor or later). Anything else is refused with both versions named.
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
 *
 * ABI 1.1 adds, all optional and all after the 1.0 members (a 1.0 plugin loads and runs unchanged):
 *  - every op marshals: step metadata (oc_attn_metadata, oc_moe_metadata), expert weight sets
 *    (oc_expert_weights), tensor lists (oc_tensor_list) and quantisation parameters (oc_quant_params,
 *    oc_quant_list) are plain C structs handed to the kernel by pointer in its field list (the
 *    OC_ARG_*_META/... kinds below). A 1.0 plugin is handed such a field as OC_ARG_OPAQUE, as before.
 *  - oc_step_info, the update_step_context hook's argument, also points at the full metadata.
 *  - impls (oc_impl_def): per op key, a create/run/destroy table that replaces opchain's default impl
 *    of that OpType for this vendor (layer 3: e.g. a fused attention that does its own KV-cache write).
 *  - memory hooks (oc_memory_hooks): where present, every tensor the host hands the plugin (fields,
 *    weights, metadata tensors) is a copy in memory the plugin allocated (OC_DEVICE_PLUGIN), copied
 *    in before the call and, for the tensors the op writes, copied back after it.
 *
 * ABI 1.2 appends input_order to oc_quant_params: int4 weights of act-order checkpoints have their
 * columns sorted by group at load. A 1.0 or 1.1 plugin loads and runs unchanged; arrays of
 * oc_quant_params reach it at its own struct's stride, and a weight with input_order is refused to it
 * with a message.
 *
 * Not marshalled (yet): the `precision` attribute of prefill_attention and paged_prefill_attention
 * (added after 1.2, held back so that the field lists above stay as published). A plugin kernel for
 * them computes the products as it sees fit within the op's f32 tolerance, as before.
 */
#ifndef OPCHAIN_VENDOR_ABI_H
#define OPCHAIN_VENDOR_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OPCHAIN_VENDOR_ABI_MAJOR 1
#define OPCHAIN_VENDOR_ABI_MINOR 2
#define OPCHAIN_VENDOR_ENTRY_SYMBOL "opchain_vendor_plugin_init"

#if defined(_WIN32)
#define OPCHAIN_VENDOR_EXPORT __declspec(dllexport)
#else
#define OPCHAIN_VENDOR_EXPORT __attribute__((visibility("default")))
#endif

#define OC_MAX_DIMS 4

/* Status codes of kernels, hooks and host queries. */
#define OC_STATUS_OK 0
#define OC_STATUS_ERROR 1       /* anything else; say what in err */
#define OC_STATUS_UNSUPPORTED 2 /* shapes or attributes this kernel does not handle */
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

typedef enum oc_device {
  OC_DEVICE_HOST = 0,  /* host memory opchain owns */
  OC_DEVICE_PLUGIN = 1 /* 1.1: memory from the plugin's oc_memory_hooks.alloc (a staged copy) */
} oc_device;

/* A tensor view. data == NULL: an absent optional tensor (`?` in the schema). Strides are in
 * elements; ABI 1.0 and 1.1 tensors are row-major and contiguous, and the strides say so. */
typedef struct oc_tensor {
  void* data;
  int32_t dtype;  /* oc_dtype */
  int32_t device; /* oc_device */
  int32_t ndim;
  int32_t reserved;
  int64_t shape[OC_MAX_DIMS];
  int64_t strides[OC_MAX_DIMS];
} oc_tensor;

/* A field's role: as in the schema string (`T` in, `T!` inout, after `->` out). */
typedef enum oc_role { OC_ROLE_IN = 0, OC_ROLE_INOUT = 1, OC_ROLE_OUT = 2, OC_ROLE_ATTR = 3, OC_ROLE_META = 4 } oc_role;

/* How a field is marshalled. OC_ARG_OPAQUE: a host object with no C form in the plugin's ABI
 * version; value.present says whether it is set. In 1.1 every field of every op has a C form; a 1.0
 * plugin is handed the 1.1 kinds as OC_ARG_OPAQUE (only linear's optional quant can reach one). A
 * plugin may provide a kernel only for an op whose required fields all have a C form. Kinds are only
 * ever appended: treat an unknown kind as opaque. The pointers of the 1.1 kinds are valid for the
 * call only; NULL where the host field is unset (an optional quant, a missing metadata). */
typedef enum oc_arg_kind {
  OC_ARG_TENSOR = 0,
  OC_ARG_F32 = 1,
  OC_ARG_I64 = 2,
  OC_ARG_BOOL = 3,
  OC_ARG_ENUM = 4, /* value.i64: the index in oc_field_info.enum_values ("f32|bf16|quantized|int8") */
  OC_ARG_OPAQUE = 5,
  OC_ARG_ATTN_META = 6,      /* 1.1: value.attn_meta (`AttnMetadata meta`) */
  OC_ARG_MOE_META = 7,       /* 1.1: value.moe_meta (`MoeMetadata meta`) */
  OC_ARG_EXPERT_WEIGHTS = 8, /* 1.1: value.experts (fused_moe's `W experts[e](gate, up, down)`) */
  OC_ARG_TENSOR_LIST = 9,    /* 1.1: value.tensors (grouped_matmul's `W weights[e]`) */
  OC_ARG_QUANT = 10,         /* 1.1: value.quant (linear's `Q? quant`) */
  OC_ARG_QUANT_LIST = 11     /* 1.1: value.quants (grouped_matmul's `Q? quant[e]`) */
} oc_arg_kind;

/* 1.1: how expert-parallel ranks exchange tokens this step; opchain's MoeCommType. */
typedef enum oc_moe_comm_type {
  OC_MOE_COMM_LOCAL = 0,
  OC_MOE_COMM_ALLGATHER = 1,
  OC_MOE_COMM_ALLTOALL = 2
} oc_moe_comm_type;

/* 1.1: the attention metadata of a step (opchain's AttnMetadata). Index tensors are i32. */
typedef struct oc_attn_metadata {
  int32_t is_decoding;    /* every sequence contributes exactly one query token */
  int32_t has_past;       /* some sequence has cached tokens before this step's */
  int64_t batch_size;     /* sequences, including a graph bucket's padding sequences */
  int64_t num_tokens;     /* query rows, including padding rows */
  int64_t block_size;     /* tokens per KV block */
  int64_t max_q_seqlen;   /* the largest q_seqlens[b] */
  int64_t max_kv_seqlen;  /* the largest kv_seqlens[b] */
  oc_tensor q_start_loc;  /* [batch] first query row of each sequence */
  oc_tensor q_seqlens;    /* [batch] new tokens of each sequence in this step */
  oc_tensor kv_seqlens;   /* [batch] cached + new tokens of each sequence after this step */
  oc_tensor block_tables; /* [batch, max_blocks] physical KV block of each logical block; block 0 is reserved */
  oc_tensor slot_mapping; /* [num_tokens] cache slot (block * block_size + offset) of each new token; -1: skip */
  oc_tensor state_slots;  /* [batch] state-pool slot of each sequence (linear attention); -1: padding; empty if none */
} oc_attn_metadata;

/* 1.1: the MoE metadata of a step (opchain's MoeMetadata). */
typedef struct oc_moe_metadata {
  int32_t comm_type; /* oc_moe_comm_type, chosen by the host's policy from token counts and sizes */
  int32_t reserved;
  int64_t ep_size;            /* expert-parallel ranks */
  int64_t ep_rank;            /* this rank */
  int64_t tp_size;            /* tensor-parallel ranks */
  int64_t dp_size;            /* data-parallel ranks */
  int64_t num_tokens;         /* real tokens of this step */
  int64_t pad_size;           /* rows after the real ones (graph buckets); no expert computes them */
  oc_tensor x_active_mask;    /* u8 [num_tokens + pad_size]: 0 rows are padding */
  int64_t router_n_groups;    /* grouped top-k: experts split in groups (0: not grouped) */
  int64_t router_topk_groups; /* grouped top-k: groups chosen first */
} oc_moe_metadata;

/* 1.1: quantisation schemes and activation forms; opchain's QuantScheme and ActQuant (docs/quantization.md). */
typedef enum oc_quant_scheme {
  OC_QUANT_INT4_GROUP = 0,
  OC_QUANT_INT8_CHANNEL = 1,
  OC_QUANT_FP8_BLOCK = 2,
  OC_QUANT_FP8_CHANNEL = 3
} oc_quant_scheme;
typedef enum oc_act_quant { OC_ACT_NONE = 0, OC_ACT_INT8_TOKEN = 1, OC_ACT_FP8_GROUP = 2 } oc_act_quant;

/* 1.1: the parameters that turn a quantised weight's codes back into numbers (Note [Quantised
 * weights] in opchain's src/core/quant.h defines each scheme's formula). */
typedef struct oc_quant_params {
  int32_t scheme;      /* oc_quant_scheme */
  int32_t act;         /* oc_act_quant: what the activations become in the quantized precision */
  int64_t in_features; /* input channels (an int4 row holds ceil(in/2) bytes) */
  int64_t group_size;  /* input channels per scale column (int4 group, fp8 block); 0: all */
  int64_t act_group;   /* OC_ACT_FP8_GROUP: channels per activation scale */
  oc_tensor scales;    /* f32 [out, groups] */
  oc_tensor zeros;     /* f32 [out, groups], or empty: 0 (int8 channel), 8 (int4 group) */
  oc_tensor group_of;  /* i32 [in] or empty: each code column's scale column (else column / group_size) */
  /* 1.2: i32 [in] or empty: the input channel each code column holds (else the column itself). An
   * act-order checkpoint's int4 columns sorted by group at load; a plugin older than 1.2 is refused
   * such a weight, and arrays of this struct reach it at its own, shorter stride. */
  oc_tensor input_order;
} oc_quant_params;

/* 1.1: a list of tensors, e.g. one weight per expert. */
typedef struct oc_tensor_list {
  size_t count;             /* entries */
  const oc_tensor* tensors; /* count tensors */
} oc_tensor_list;

/* 1.1: one oc_quant_params per tensor of a list (a quantised grouped_matmul's experts). */
typedef struct oc_quant_list {
  size_t count;                  /* entries */
  const oc_quant_params* params; /* count parameter sets */
} oc_quant_list;

/* 1.1: the experts of one MoE layer (fused_moe), each expert's three matrices. */
typedef struct oc_expert_weights {
  int64_t num_experts;           /* entries of each array */
  int64_t intermediate;          /* rows of gate and up */
  int64_t hidden;                /* columns of gate and up (input channels), rows of down */
  int32_t dtype;                 /* oc_dtype of the matrices (their codes' when quantised): the dispatch dtype */
  int32_t quantized;             /* 1: gate_q/up_q/down_q hold each matrix's parameters; 0: they are NULL */
  const oc_tensor* gate;         /* [num_experts] W [intermediate, hidden] */
  const oc_tensor* up;           /* [num_experts] W [intermediate, hidden] */
  const oc_tensor* down;         /* [num_experts] W [hidden, intermediate] */
  const oc_quant_params* gate_q; /* [num_experts] or NULL */
  const oc_quant_params* up_q;   /* [num_experts] or NULL */
  const oc_quant_params* down_q; /* [num_experts] or NULL */
} oc_expert_weights;

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
    const oc_attn_metadata* attn_meta; /* 1.1 */
    const oc_moe_metadata* moe_meta;   /* 1.1 */
    const oc_expert_weights* experts;  /* 1.1 */
    const oc_tensor_list* tensors;     /* 1.1 */
    const oc_quant_params* quant;      /* 1.1: NULL when unset */
    const oc_quant_list* quants;       /* 1.1: NULL when unset */
  } value;
} oc_arg;

/* One field of an op, as host->op_field() describes it. */
typedef struct oc_field_info {
  const char* name;
  int32_t role;     /* oc_role */
  int32_t kind;     /* oc_arg_kind */
  int32_t optional; /* `?` in the schema: a tensor may be absent (data == NULL) */
  int32_t reserved;
  const char* enum_values; /* OC_ARG_ENUM: the values' names in index order, '|'-separated; else "" */
} oc_field_info;

/* What the host offers at init. Members are only ever appended (check struct_size). */
typedef struct oc_host_api {
  uint32_t abi_major;
  uint32_t abi_minor;
  size_t struct_size;
  size_t (*num_ops)(void);
  const char* (*op_key)(size_t op); /* NULL when op >= num_ops() */
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
  const char* op_key; /* "rms_norm" */
  int32_t dtype;      /* oc_dtype: the op's dispatch dtype (the weight's for weight ops) */
  uint32_t flags;     /* OC_KERNEL_* */
  const char* name;   /* shown in traces, e.g. "example::rms_norm_f32"; NULL: vendor::key_dtype */
  oc_kernel_fn fn;
} oc_kernel_def;

/* The step as the host's default update_step_context filled it, read only. */
typedef struct oc_step_info {
  int64_t batch_size;
  int64_t num_tokens; /* including padding rows */
  int64_t num_padding_tokens;
  int64_t block_size;
  int64_t max_q_seqlen;
  int64_t max_kv_seqlen;
  int32_t is_decoding;
  int32_t has_past;
  oc_tensor q_start_loc, q_seqlens, kv_seqlens, block_tables, slot_mapping, state_slots; /* i32 */
  /* 1.1 (read only when the host's abi_minor >= 1): */
  const oc_attn_metadata* attn; /* the attention metadata kernels read (never NULL) */
  const oc_moe_metadata* moe;   /* the MoE metadata (never NULL) */
  oc_tensor positions;          /* i32 [num_tokens] each row's position; set for impls' run, empty in the hook */
} oc_step_info;

/* 1.1: what an impl is created for: one nn module of one model (one per layer and op). */
typedef struct oc_impl_info {
  int32_t dtype; /* oc_dtype: the dtype the module builds for (its weights' for weight ops; f32 for attention) */
  int32_t reserved;
  const char* module_path; /* "model.layers.3.self_attn" */
  const char* nn_module;   /* "Attention" */
} oc_impl_info;

/* 1.1: an impl of one OpType (opchain's layer 3, Note [Impl builders]): the host builds it in place of
 * its default impl of that OpType for every module of a model run on this vendor, and calls run where
 * the default impl would run its kernel(s). The fields run is handed, in order:
 *  - "paged_decode_attention": the whole attention of a layer, every step (the default impl writes the
 *    KV cache, then runs decode, paged prefill or prefill attention): q [n,hq,d], k [n,hk,d],
 *    v [n,hk,d] (in), k_cache, v_cache [blocks,bs,hk,d] (inout), scale (f32), meta (attn), out [n,hq,d].
 *  - any other key: the op's fields as for a kernel (fused_moe's meta is the step's MoE metadata;
 *    gated_delta_rule's meta the attention metadata, its form chosen by the host).
 * Plugin impls run eagerly: in ABI 1.1 a graph capture that reaches one refuses it (run with --eager). */
typedef struct oc_impl_def {
  const char* op_key; /* the OpType, by its op-table key */
  const char* name;   /* shown in messages; NULL: vendor::key_impl */
  uint32_t flags;     /* reserved, 0 */
  /* Optional (NULL: *handle = NULL): makes the impl's state for one module. */
  int32_t (*create)(const oc_impl_info* info, void* user_data, void** handle, char* err, size_t err_size);
  /* Required: one call. step: the whole step's metadata (and positions). */
  int32_t (*run)(void* handle, const oc_arg* args, size_t num_args, const oc_step_info* step, void* user_data,
                 char* err, size_t err_size);
  /* Optional: frees what create made, when the model is destroyed. */
  void (*destroy)(void* handle, void* user_data);
} oc_impl_def;

/* 1.1: the plugin's memory. Declared: all four members are required. */
typedef struct oc_memory_hooks {
  void* (*alloc)(size_t nbytes, void* user_data); /* NULL on failure; nbytes >= 1 */
  void (*free)(void* ptr, void* user_data);       /* a pointer alloc returned */
  int32_t (*copy_to_device)(void* dst, const void* src, size_t nbytes, void* user_data); /* host src -> plugin dst */
  int32_t (*copy_to_host)(void* dst, const void* src, size_t nbytes, void* user_data);   /* plugin src -> host dst */
} oc_memory_hooks;

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
  void* user_data; /* passed to every kernel and hook */
  /* 1.1 (read only when abi_minor >= 1): */
  const oc_impl_def* impls;      /* NULL or num_impls impls, one per op key at most */
  size_t num_impls;              /* entries of impls */
  const oc_memory_hooks* memory; /* NULL: the plugin reads and writes host memory */
} oc_vendor_plugin;

typedef const oc_vendor_plugin* (*oc_vendor_plugin_init_fn)(const oc_host_api* host, char* err, size_t err_size);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* OPCHAIN_VENDOR_ABI_H */
