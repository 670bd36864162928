/* The `example` vendor: rms_norm (f32, bf16 weights), silu_and_mul (f32) and linear (f32, bf16
 * weights) in plain C99 against include/opchain/vendor_abi.h; every other op falls back to `cpu`.
 * docs/writing-a-vendor.md walks through this file. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <opchain/vendor_abi.h>

/* ---- helpers --------------------------------------------------------------------------------- */

static float bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* Round to nearest even, as opchain (and torch) round f32 to bf16. */
static float round_to_bf16(float f) {
  uint32_t bits;
  memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return f; /* NaN */
  bits += 0x7fffu + ((bits >> 16) & 1u);
  bits &= 0xffff0000u;
  memcpy(&f, &bits, 4);
  return f;
}

static float load(const oc_tensor* t, int64_t i) {
  return t->dtype == OC_DTYPE_BF16 ? bf16_to_f32(((const uint16_t*)t->data)[i]) : ((const float*)t->data)[i];
}

static int64_t numel(const oc_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

static int fail(char* err, size_t err_size, const char* msg) {
  snprintf(err, err_size, "%s", msg);
  return OC_STATUS_INVALID_ARGUMENT;
}

/* ---- kernels: args in the op's field order (`opchain ops --json`, "abi_fields") -------------- */

/* rms_norm(f32 x[rows,h], W weight[h], float eps) -> f32 out[rows,h] */
static int32_t rms_norm(const oc_arg* args, size_t n, void* user, char* err, size_t err_size) {
  (void)user;
  if (n != 4) return fail(err, err_size, "rms_norm: expected 4 fields");
  const oc_tensor* x = &args[0].value.tensor;
  const oc_tensor* w = &args[1].value.tensor;
  const float eps = args[2].value.f32;
  const oc_tensor* out = &args[3].value.tensor;
  if (x->dtype != OC_DTYPE_F32 || out->dtype != OC_DTYPE_F32)
    return fail(err, err_size, "rms_norm: x and out must be f32");
  const int64_t h = w->shape[0], rows = numel(x) / h;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = (const float*)x->data + r * h;
    float* o = (float*)out->data + r * h;
    float ss = 0.0f;
    for (int64_t c = 0; c < h; ++c) ss += xr[c] * xr[c];
    const float inv = 1.0f / sqrtf(ss / (float)h + eps);
    for (int64_t c = 0; c < h; ++c) o[c] = xr[c] * inv * load(w, c);
  }
  return OC_STATUS_OK;
}

/* silu_and_mul(f32 x[n,2i]) -> f32 out[n,i] */
static int32_t silu_and_mul(const oc_arg* args, size_t n, void* user, char* err, size_t err_size) {
  (void)user;
  if (n != 2) return fail(err, err_size, "silu_and_mul: expected 2 fields");
  const oc_tensor* x = &args[0].value.tensor;
  const oc_tensor* out = &args[1].value.tensor;
  const int64_t i = out->shape[out->ndim - 1], rows = numel(out) / i;
  if (x->shape[x->ndim - 1] != 2 * i) return fail(err, err_size, "silu_and_mul: x's last dim must be twice out's");
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = (const float*)x->data + r * 2 * i;
    const float* u = g + i;
    float* o = (float*)out->data + r * i;
    for (int64_t c = 0; c < i; ++c) o[c] = g[c] / (1.0f + expf(-g[c])) * u[c];
  }
  return OC_STATUS_OK;
}

/* linear(f32 x[n,in], W weight[out,in], W? bias[out], Q? quant, MatmulPrecision precision) -> f32 out[n,out]
 * precision is an enum: 0 f32, 1 bf16 (round x to bf16 when the weight is bf16), 2 quantized. */
static int32_t linear(const oc_arg* args, size_t n, void* user, char* err, size_t err_size) {
  (void)user;
  if (n != 6) return fail(err, err_size, "linear: expected 6 fields");
  const oc_tensor* x = &args[0].value.tensor;
  const oc_tensor* w = &args[1].value.tensor;
  const oc_tensor* bias = &args[2].value.tensor; /* data == NULL: no bias */
  /* Vendor ABI 1.1 hands the quantisation parameters as OC_ARG_QUANT (NULL: a dense weight); 1.0 as opaque. */
  if (args[3].kind == OC_ARG_QUANT ? args[3].value.quant != NULL : args[3].value.present)
    return fail(err, err_size, "linear: quantised weights are not supported by the example vendor");
  const int64_t precision = args[4].value.i64;
  const oc_tensor* out = &args[5].value.tensor;
  const int64_t in = w->shape[1], out_f = w->shape[0], rows = numel(x) / in;
  const int bf16_x = precision != 0 && w->dtype == OC_DTYPE_BF16;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = (const float*)x->data + r * in;
    float* o = (float*)out->data + r * out_f;
    for (int64_t j = 0; j < out_f; ++j) {
      float acc = 0.0f;
      for (int64_t c = 0; c < in; ++c) acc += (bf16_x ? round_to_bf16(xr[c]) : xr[c]) * load(w, j * in + c);
      if (bias->data) acc += load(bias, j);
      o[j] = acc;
    }
  }
  return OC_STATUS_OK;
}

/* ---- the plugin ------------------------------------------------------------------------------ */

/* Each kernel reads sizes from its tensors only and allocates nothing: graph mode may capture it. */
static const oc_kernel_def kKernels[] = {
    {"rms_norm", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, "example::rms_norm_f32", rms_norm},
    {"rms_norm", OC_DTYPE_BF16, OC_KERNEL_CAPTURE_SAFE, "example::rms_norm_bf16", rms_norm},
    {"silu_and_mul", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, "example::silu_and_mul_f32", silu_and_mul},
    {"linear", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, "example::linear_f32", linear},
    {"linear", OC_DTYPE_BF16, OC_KERNEL_CAPTURE_SAFE, "example::linear_bf16", linear},
};

static const oc_vendor_plugin kPlugin = {OPCHAIN_VENDOR_ABI_MAJOR,
                                         OPCHAIN_VENDOR_ABI_MINOR,
                                         "example",
                                         "cpu",
                                         kKernels,
                                         sizeof kKernels / sizeof kKernels[0],
                                         NULL,
                                         NULL,
                                         NULL,
                                         0,
                                         NULL /* 1.1: no impls of its own; host memory (no memory hooks) */};

/* The field order each kernel above reads, checked against the host's at load: a host whose op
 * changed under us refuses this plugin with a message instead of running it on the wrong fields. */
static int expect_fields(const oc_host_api* host, const char* key, const char* const* names, size_t count, char* err,
                         size_t err_size) {
  size_t op;
  if (host->find_op(key, &op) != OC_STATUS_OK) {
    snprintf(err, err_size, "the host has no op '%s'", key);
    return 0;
  }
  if (host->op_num_fields(op) != count) {
    snprintf(err, err_size, "op '%s' has %zu fields on this host, the example vendor expects %zu", key,
             host->op_num_fields(op), count);
    return 0;
  }
  for (size_t i = 0; i < count; ++i) {
    oc_field_info f;
    if (host->op_field(op, i, &f) != OC_STATUS_OK || strcmp(f.name, names[i]) != 0) {
      snprintf(err, err_size, "op '%s' field %zu is not '%s' on this host", key, i, names[i]);
      return 0;
    }
  }
  return 1;
}

OPCHAIN_VENDOR_EXPORT const oc_vendor_plugin* opchain_vendor_plugin_init(const oc_host_api* host, char* err,
                                                                         size_t err_size) {
  static const char* const rms[] = {"x", "weight", "eps", "out"};
  static const char* const silu[] = {"x", "out"};
  static const char* const lin[] = {"x", "weight", "bias", "quant", "precision", "out"};
  if (!expect_fields(host, "rms_norm", rms, 4, err, err_size) ||
      !expect_fields(host, "silu_and_mul", silu, 2, err, err_size) ||
      !expect_fields(host, "linear", lin, 6, err, err_size))
    return NULL;
  return &kPlugin;
}
