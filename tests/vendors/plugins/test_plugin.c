/* Vendor plugins for tests/vendors/plugin_loader_test.cpp: one source, one MODULE library per
 * variant (tests/CMakeLists.txt defines TEST_PLUGIN_<variant>). `good` is a working vendor; every
 * other variant is broken in one way the loader must report by name, without crashing. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <opchain/vendor_abi.h>

/* Each variant uses some of the functions below. */
#define MAYBE_UNUSED __attribute__((unused))

/* rms_norm(f32 x[rows,h], W weight[h], float eps) -> f32 out[rows,h], f32 weights. */
MAYBE_UNUSED static int32_t rms_norm_f32(const oc_arg* args, size_t n, void* user, char* err, size_t err_size) {
  (void)user;
  if (n != 4 || args[0].kind != OC_ARG_TENSOR || args[2].kind != OC_ARG_F32) {
    snprintf(err, err_size, "unexpected fields");
    return OC_STATUS_INVALID_ARGUMENT;
  }
  const oc_tensor* x = &args[0].value.tensor;
  const oc_tensor* w = &args[1].value.tensor;
  const oc_tensor* out = &args[3].value.tensor;
  const int64_t h = w->shape[0];
  int64_t rows = 1;
  for (int32_t d = 0; d < x->ndim; ++d) rows *= x->shape[d];
  rows /= h;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = (const float*)x->data + r * h;
    float ss = 0.0f;
    for (int64_t c = 0; c < h; ++c) ss += xr[c] * xr[c];
    const float inv = 1.0f / sqrtf(ss / (float)h + args[2].value.f32);
    for (int64_t c = 0; c < h; ++c) {
      float wc;
      if (w->dtype == OC_DTYPE_BF16) {
        const uint32_t bits = (uint32_t)((const uint16_t*)w->data)[c] << 16;
        memcpy(&wc, &bits, 4);
      } else {
        wc = ((const float*)w->data)[c];
      }
      ((float*)out->data)[r * h + c] = xr[c] * inv * wc;
    }
  }
  return OC_STATUS_OK;
}

MAYBE_UNUSED static int32_t always_fails(const oc_arg* args, size_t n, void* user, char* err, size_t err_size) {
  (void)args;
  (void)n;
  (void)user;
  snprintf(err, err_size, "device lost");
  return OC_STATUS_ERROR;
}

static int g_step_calls = 0;
MAYBE_UNUSED static int32_t count_steps(const oc_step_info* info, void* user, char* err, size_t err_size) {
  (void)user;
  (void)err;
  (void)err_size;
  if (info->batch_size >= 0) ++g_step_calls;
  return OC_STATUS_OK;
}
MAYBE_UNUSED static int32_t step_fails(const oc_step_info* info, void* user, char* err, size_t err_size) {
  (void)info;
  (void)user;
  snprintf(err, err_size, "no room for metadata");
  return OC_STATUS_ERROR;
}

/* Read by the test through dlsym. */
OPCHAIN_VENDOR_EXPORT int test_plugin_step_calls(void) { return g_step_calls; }

#if defined(TEST_PLUGIN_good)
static const oc_kernel_def kKernels[] = {
    {"rms_norm", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, rms_norm_f32},
    /* Not flagged capture-safe: graph mode must not capture it. */
    {"sigmoid_gate_mul", OC_DTYPE_F32, 0, "testplug::sigmoid_gate_mul_uncapturable", always_fails},
};
#define VENDOR "testplug"
#define FALLBACK "cpu"
#define STEP count_steps
#elif defined(TEST_PLUGIN_nocapture)
/* Correct kernels without OC_KERNEL_CAPTURE_SAFE: a model using them must decode eagerly. */
static const oc_kernel_def kKernels[] = {
    {"rms_norm", OC_DTYPE_F32, 0, "nocapture::rms_norm_f32", rms_norm_f32},
    {"rms_norm", OC_DTYPE_BF16, 0, "nocapture::rms_norm_bf16", rms_norm_f32},
};
#define VENDOR "nocapture"
#define FALLBACK "cpu"
#elif defined(TEST_PLUGIN_failing)
static const oc_kernel_def kKernels[] = {
    {"rms_norm", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, "failplug::rms_norm", always_fails}};
#define VENDOR "failplug"
#define FALLBACK "cpu"
#define STEP step_fails
#elif defined(TEST_PLUGIN_duplicate)
static const oc_kernel_def kKernels[] = {
    {"rms_norm", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, rms_norm_f32},
    {"silu_and_mul", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, always_fails},
    {"rms_norm", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, rms_norm_f32},
};
#define VENDOR "dupplug"
#elif defined(TEST_PLUGIN_unknown_key)
static const oc_kernel_def kKernels[] = {{"rms_nrom", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, rms_norm_f32}};
#define VENDOR "keyplug"
#elif defined(TEST_PLUGIN_unknown_fallback)
static const oc_kernel_def kKernels[] = {{"rms_norm", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, rms_norm_f32}};
#define VENDOR "fbplug"
#define FALLBACK "nosuch"
#elif defined(TEST_PLUGIN_opaque_op)
/* A 1.0 plugin taking an op whose fields 1.0 could not marshal: still refused (ABI 1.1 marshals it for
 * 1.1 plugins only). */
static const oc_kernel_def kKernels[] = {{"fused_moe", OC_DTYPE_BF16, OC_KERNEL_CAPTURE_SAFE, NULL, always_fails}};
#define VENDOR "moeplug"
#else /* wrong_major, no_entry, init_fails: a valid list, broken elsewhere */
static const oc_kernel_def kKernels[] = {{"rms_norm", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, rms_norm_f32}};
#define VENDOR "brokenplug"
#endif
#ifndef FALLBACK
#define FALLBACK NULL
#endif
#ifndef STEP
#define STEP NULL
#endif

#if defined(TEST_PLUGIN_wrong_major)
#define MAJOR (OPCHAIN_VENDOR_ABI_MAJOR + 1)
#else
#define MAJOR OPCHAIN_VENDOR_ABI_MAJOR
#endif

MAYBE_UNUSED static const oc_vendor_plugin kPlugin = {MAJOR,
                                                      0,
                                                      VENDOR,
                                                      FALLBACK,
                                                      kKernels,
                                                      sizeof kKernels / sizeof kKernels[0],
                                                      STEP,
                                                      NULL,
                                                      /* 1.1 members, never read: this plugin says minor 0 */ NULL,
                                                      0,
                                                      NULL};

#if defined(TEST_PLUGIN_no_entry)
/* Misspelt entry point: the loader finds no opchain_vendor_plugin_init. */
OPCHAIN_VENDOR_EXPORT const oc_vendor_plugin* opchain_vendor_plugin_initialise(const oc_host_api* host, char* err,
                                                                               size_t n) {
  (void)host;
  (void)err;
  (void)n;
  return &kPlugin;
}
#else
OPCHAIN_VENDOR_EXPORT const oc_vendor_plugin* opchain_vendor_plugin_init(const oc_host_api* host, char* err,
                                                                         size_t err_size) {
#if defined(TEST_PLUGIN_init_fails)
  (void)host;
  snprintf(err, err_size, "no device found");
  return NULL;
#else
  (void)err;
  (void)err_size;
  if (host->abi_major != OPCHAIN_VENDOR_ABI_MAJOR) return NULL;
  return &kPlugin;
#endif
}
#endif
