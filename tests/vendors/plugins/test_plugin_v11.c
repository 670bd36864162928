/* Vendor ABI 1.1 plugins for the tests (tests/CMakeLists.txt builds one MODULE per variant,
 * TEST_PLUGIN_<variant>), in plain C against include/opchain/vendor_abi.h only:
 *   abi11       the ops 1.0 refused: paged decode / paged prefill / prefill attention reading the
 *               marshalled oc_attn_metadata, fused_moe over oc_expert_weights with oc_moe_metadata,
 *               grouped_matmul over an oc_tensor_list; capture-safe; falls back to cpu.
 *   impl        no kernels: an impl (oc_impl_def) of a layer's whole attention that writes the KV
 *               cache and attends itself from the step's metadata; falls back to cpu.
 *   fakedev     memory hooks over a "fake device" (malloc'd buffers with a tag, reached only through
 *               the copy hooks); its rms_norm and grouped_matmul refuse any pointer that is not its own.
 *   bad_memory  memory hooks without copy_to_host: refused at load.
 *   bad_impl    an impl without run: refused at load.
 * The numerics follow opchain's reference kernels (f32 accumulation; Note [Matmul precision] for the
 * bf16 activation rounding), so the kernel harness holds them to the op table's tolerances. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <opchain/vendor_abi.h>

#define MAYBE_UNUSED __attribute__((unused))

/* ---- element access ------------------------------------------------------------------------- */

static float bf16_to_f32(uint16_t b) {
  const uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* Round to bf16, nearest even, and back (finite values). */
MAYBE_UNUSED static float round_bf16(float x) {
  uint32_t bits;
  memcpy(&bits, &x, 4);
  bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

static float load(const oc_tensor* t, int64_t i) {
  if (t->dtype == OC_DTYPE_BF16) return bf16_to_f32(((const uint16_t*)t->data)[i]);
  return ((const float*)t->data)[i];
}

MAYBE_UNUSED static void store_cache(const oc_tensor* t, int64_t i, float v) {
  if (t->dtype == OC_DTYPE_BF16) {
    const float r = round_bf16(v);
    uint32_t bits;
    memcpy(&bits, &r, 4);
    ((uint16_t*)t->data)[i] = (uint16_t)(bits >> 16);
  } else {
    ((float*)t->data)[i] = v;
  }
}

static const int32_t* i32(const oc_tensor* t) { return (const int32_t*)t->data; }

#define CHECK(cond, msg)                  \
  do {                                    \
    if (!(cond)) {                        \
      snprintf(err, err_size, "%s", msg); \
      return OC_STATUS_INVALID_ARGUMENT;  \
    }                                     \
  } while (0)

/* Per-call scratch lives on the stack (the kernels are flagged capture-safe: no allocation). */
enum { kMaxScratch = 16384 };

/* ---- attention ------------------------------------------------------------------------------ */

/* The key (or value) row of kv position p of sequence b, head kvh, of a paged cache, widened into buf. */
MAYBE_UNUSED static const float* paged_row(const oc_tensor* cache, const oc_attn_metadata* m, int64_t b, int64_t p,
                                           int64_t kvh, float* buf) {
  const int64_t bs = cache->shape[1], hk = cache->shape[2], d = cache->shape[3];
  const int64_t max_blocks = m->block_tables.shape[1];
  const int64_t block = i32(&m->block_tables)[b * max_blocks + p / bs];
  const int64_t off = ((block * bs + p % bs) * hk + kvh) * d;
  for (int64_t c = 0; c < d; ++c) buf[c] = load(cache, off + c);
  return buf;
}

/* softmax(q.k * scale) @ v over kv positions [0, visible), as reference::attend_one. Rows come from
 * `row(ctx, p, is_value, buf)`. scores holds visible floats. */
typedef const float* (*row_fn)(const void* ctx, int64_t p, int is_value, float* buf);
MAYBE_UNUSED static void attend_one(const float* q, int64_t d, int64_t visible, float scale, row_fn row,
                                    const void* ctx, float* scores, float* buf, float* out) {
  float max_score = -INFINITY;
  for (int64_t p = 0; p < visible; ++p) {
    const float* k = row(ctx, p, 0, buf);
    float s = 0.0f;
    for (int64_t c = 0; c < d; ++c) s += q[c] * k[c];
    scores[p] = s * scale;
    if (scores[p] > max_score) max_score = scores[p];
  }
  float denom = 0.0f;
  for (int64_t p = 0; p < visible; ++p) {
    scores[p] = expf(scores[p] - max_score);
    denom += scores[p];
  }
  for (int64_t c = 0; c < d; ++c) out[c] = 0.0f;
  for (int64_t p = 0; p < visible; ++p) {
    const float* v = row(ctx, p, 1, buf);
    const float w = scores[p] / denom;
    for (int64_t c = 0; c < d; ++c) out[c] += w * v[c];
  }
}

typedef struct paged_ctx {
  const oc_tensor *k_cache, *v_cache;
  const oc_attn_metadata* m;
  int64_t b, kvh;
} paged_ctx;
MAYBE_UNUSED static const float* paged_kv(const void* c, int64_t p, int is_value, float* buf) {
  const paged_ctx* x = (const paged_ctx*)c;
  return paged_row(is_value ? x->v_cache : x->k_cache, x->m, x->b, p, x->kvh, buf);
}

typedef struct fresh_ctx {
  const oc_tensor *k, *v;
  int64_t start, kvh;
} fresh_ctx;
MAYBE_UNUSED static const float* fresh_kv(const void* c, int64_t p, int is_value, float* buf) {
  const fresh_ctx* x = (const fresh_ctx*)c;
  const oc_tensor* t = is_value ? x->v : x->k;
  const int64_t hk = t->shape[1], d = t->shape[2];
  (void)buf;
  return (const float*)t->data + ((x->start + p) * hk + x->kvh) * d;
}

/* Each query row of the step over its sequence's paged cache: decode (one row per sequence) and paged
 * prefill (q_seqlens[b] rows, causal over past + own). */
MAYBE_UNUSED static int32_t paged_attention(const oc_tensor* q, const oc_tensor* k_cache, const oc_tensor* v_cache,
                                            float scale, const oc_attn_metadata* m, const oc_tensor* out, char* err,
                                            size_t err_size) {
  CHECK(m && m->block_tables.ndim == 2, "no attention metadata");
  const int64_t hq = q->shape[1], d = q->shape[2], hk = k_cache->shape[2], group = hq / hk;
  int64_t longest = 1; /* from the lengths themselves: max_kv_seqlen is a hint a kernel need not trust */
  for (int64_t b = 0; b < m->batch_size; ++b)
    if (i32(&m->kv_seqlens)[b] > longest) longest = i32(&m->kv_seqlens)[b];
  if (longest > kMaxScratch || d > kMaxScratch) {
    snprintf(err, err_size, "sequences longer than %d", kMaxScratch);
    return OC_STATUS_UNSUPPORTED;
  }
  float scores[longest], buf[d]; /* capture-safe: the stack, no allocation */
  for (int64_t b = 0; b < m->batch_size; ++b) {
    const int64_t start = i32(&m->q_start_loc)[b], len = i32(&m->q_seqlens)[b], kv_len = i32(&m->kv_seqlens)[b];
    const int64_t past = kv_len - len;
    for (int64_t i = 0; i < len; ++i)
      for (int64_t h = 0; h < hq; ++h) {
        const paged_ctx c = {k_cache, v_cache, m, b, h / group};
        const int64_t row = (start + i) * hq + h;
        attend_one((const float*)q->data + row * d, d, past + i + 1, scale, paged_kv, &c, scores, buf,
                   (float*)out->data + row * d);
      }
  }
  return OC_STATUS_OK;
}

/* Plain prefill: every sequence's rows over its own fresh k/v, causal. */
MAYBE_UNUSED static int32_t fresh_attention(const oc_tensor* q, const oc_tensor* k, const oc_tensor* v, float scale,
                                            const oc_attn_metadata* m, const oc_tensor* out, char* err,
                                            size_t err_size) {
  CHECK(m, "no attention metadata");
  const int64_t hq = q->shape[1], d = q->shape[2], hk = k->shape[1], group = hq / hk;
  int64_t longest = 1;
  for (int64_t b = 0; b < m->batch_size; ++b)
    if (i32(&m->q_seqlens)[b] > longest) longest = i32(&m->q_seqlens)[b];
  if (longest > kMaxScratch) {
    snprintf(err, err_size, "sequences longer than %d", kMaxScratch);
    return OC_STATUS_UNSUPPORTED;
  }
  float scores[longest];
  for (int64_t b = 0; b < m->batch_size; ++b) {
    const int64_t start = i32(&m->q_start_loc)[b], len = i32(&m->q_seqlens)[b];
    for (int64_t i = 0; i < len; ++i)
      for (int64_t h = 0; h < hq; ++h) {
        const fresh_ctx c = {k, v, start, h / group};
        const int64_t row = (start + i) * hq + h;
        attend_one((const float*)q->data + row * d, d, i + 1, scale, fresh_kv, &c, scores, NULL,
                   (float*)out->data + row * d);
      }
  }
  return OC_STATUS_OK;
}

/* paged_decode_attention / paged_prefill_attention(f32 q, C k_cache, C v_cache, float scale, AttnMetadata meta) -> out
 */
MAYBE_UNUSED static int32_t paged_attention_kernel(const oc_arg* a, size_t n, void* user, char* err, size_t err_size) {
  (void)user;
  CHECK(n == 6 && a[4].kind == OC_ARG_ATTN_META && a[5].kind == OC_ARG_TENSOR, "unexpected fields");
  return paged_attention(&a[0].value.tensor, &a[1].value.tensor, &a[2].value.tensor, a[3].value.f32,
                         a[4].value.attn_meta, &a[5].value.tensor, err, err_size);
}

/* prefill_attention(f32 q, f32 k, f32 v, float scale, AttnMetadata meta) -> out */
MAYBE_UNUSED static int32_t prefill_attention_kernel(const oc_arg* a, size_t n, void* user, char* err,
                                                     size_t err_size) {
  (void)user;
  CHECK(n == 6 && a[4].kind == OC_ARG_ATTN_META, "unexpected fields");
  return fresh_attention(&a[0].value.tensor, &a[1].value.tensor, &a[2].value.tensor, a[3].value.f32,
                         a[4].value.attn_meta, &a[5].value.tensor, err, err_size);
}

/* ---- MoE ------------------------------------------------------------------------------------ */

static float silu(float x) { return x / (1.0f + expf(-x)); }

/* Note [Matmul precision]: activations meet bf16 weights rounded to bf16 unless the precision is f32 (0). */
static int rounds_x(int64_t precision, int32_t weight_dtype) { return precision != 0 && weight_dtype == OC_DTYPE_BF16; }

/* fused_moe(f32 hidden, W experts, f32 topk_weights, i32 topk_ids, MatmulPrecision precision, MoeMetadata meta) -> out
 */
MAYBE_UNUSED static int32_t fused_moe_kernel(const oc_arg* a, size_t n, void* user, char* err, size_t err_size) {
  (void)user;
  CHECK(n == 7 && a[1].kind == OC_ARG_EXPERT_WEIGHTS && a[5].kind == OC_ARG_MOE_META, "unexpected fields");
  const oc_tensor *hidden = &a[0].value.tensor, *tw = &a[2].value.tensor, *ids = &a[3].value.tensor,
                  *out = &a[6].value.tensor;
  const oc_expert_weights* w = a[1].value.experts;
  const oc_moe_metadata* meta = a[5].value.moe_meta;
  if (w->quantized) {
    snprintf(err, err_size, "quantised experts are not supported");
    return OC_STATUS_UNSUPPORTED;
  }
  const int64_t rows = hidden->shape[0], h = hidden->shape[1], k = ids->shape[1], inter = w->intermediate;
  const int bf16_x = rounds_x(a[4].value.i64, w->dtype);
  if (inter + h > kMaxScratch) {
    snprintf(err, err_size, "intermediate + hidden above %d", kMaxScratch);
    return OC_STATUS_UNSUPPORTED;
  }
  float scratch[inter + h]; /* capture-safe: the stack, no allocation */
  float* act = scratch;
  float* x = act + inter;
  for (int64_t t = 0; t < rows; ++t) {
    float* o = (float*)out->data + t * h;
    for (int64_t c = 0; c < h; ++c) o[c] = 0.0f;
    if (meta && meta->x_active_mask.data && ((const uint8_t*)meta->x_active_mask.data)[t] == 0) continue;
    for (int64_t c = 0; c < h; ++c) {
      const float v = ((const float*)hidden->data)[t * h + c];
      x[c] = bf16_x ? round_bf16(v) : v;
    }
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = i32(ids)[t * k + j];
      const float weight = ((const float*)tw->data)[t * k + j];
      CHECK(e >= 0 && e < w->num_experts, "expert id out of range");
      for (int64_t i = 0; i < inter; ++i) {
        float g = 0.0f, u = 0.0f;
        for (int64_t c = 0; c < h; ++c) {
          g += x[c] * load(&w->gate[e], i * h + c);
          u += x[c] * load(&w->up[e], i * h + c);
        }
        const float s = silu(g) * u;
        act[i] = bf16_x ? round_bf16(s) : s;
      }
      for (int64_t c = 0; c < h; ++c) {
        float y = 0.0f;
        for (int64_t i = 0; i < inter; ++i) y += act[i] * load(&w->down[e], c * inter + i);
        o[c] += weight * y;
      }
    }
  }
  return OC_STATUS_OK;
}

/* grouped_matmul(f32 x, i32 expert_offsets, W weights[e], Q? quant[e], int out_col_offset, MatmulPrecision precision)
 * -> out */
MAYBE_UNUSED static int32_t grouped_matmul_kernel(const oc_arg* a, size_t n, void* user, char* err, size_t err_size) {
  (void)user;
  CHECK(n == 7 && a[2].kind == OC_ARG_TENSOR_LIST && a[3].kind == OC_ARG_QUANT_LIST, "unexpected fields");
  if (a[3].value.quants) {
    snprintf(err, err_size, "quantised weights are not supported");
    return OC_STATUS_UNSUPPORTED;
  }
  const oc_tensor *x = &a[0].value.tensor, *offsets = &a[1].value.tensor, *out = &a[6].value.tensor;
  const oc_tensor_list* ws = a[2].value.tensors;
  const int64_t experts = offsets->shape[0] - 1, kin = x->shape[1], ld = out->shape[1], col = a[4].value.i64;
  CHECK((size_t)experts <= ws->count, "fewer weights than experts");
  for (int64_t e = 0; e < experts; ++e) {
    const oc_tensor* w = &ws->tensors[e];
    const int64_t nout = w->shape[0];
    const int bf16_x = rounds_x(a[5].value.i64, w->dtype);
    for (int64_t r = i32(offsets)[e]; r < i32(offsets)[e + 1]; ++r)
      for (int64_t o = 0; o < nout; ++o) {
        float acc = 0.0f;
        for (int64_t c = 0; c < kin; ++c) {
          const float v = ((const float*)x->data)[r * kin + c];
          acc += (bf16_x ? round_bf16(v) : v) * load(w, o * kin + c);
        }
        ((float*)out->data)[r * ld + col + o] = acc;
      }
  }
  return OC_STATUS_OK;
}

/* rms_norm(f32 x[rows,h], W weight[h], float eps) -> out */
MAYBE_UNUSED static int32_t rms_norm_kernel(const oc_arg* a, size_t n, void* user, char* err, size_t err_size) {
  (void)user;
  CHECK(n == 4, "unexpected fields");
  const oc_tensor *x = &a[0].value.tensor, *w = &a[1].value.tensor, *out = &a[3].value.tensor;
  const int64_t h = w->shape[0];
  int64_t rows = 1;
  for (int32_t d = 0; d < x->ndim; ++d) rows *= x->shape[d];
  rows /= h;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = (const float*)x->data + r * h;
    float ss = 0.0f;
    for (int64_t c = 0; c < h; ++c) ss += xr[c] * xr[c];
    const float inv = 1.0f / sqrtf(ss / (float)h + a[2].value.f32);
    for (int64_t c = 0; c < h; ++c) ((float*)out->data)[r * h + c] = xr[c] * inv * load(w, c);
  }
  return OC_STATUS_OK;
}

/* ---- the step hook: the 1.1 members are there and agree with the 1.0 ones -------------------- */

static int g_step_calls = 0;
MAYBE_UNUSED static int32_t check_step(const oc_step_info* info, void* user, char* err, size_t err_size) {
  (void)user;
  CHECK(info->attn && info->moe, "no 1.1 metadata in oc_step_info");
  CHECK(info->attn->batch_size == info->batch_size && info->moe->pad_size == info->num_padding_tokens,
        "oc_step_info and its metadata disagree");
  ++g_step_calls;
  return OC_STATUS_OK;
}
OPCHAIN_VENDOR_EXPORT int test_plugin_step_calls(void) { return g_step_calls; }

/* ---- impl: a layer's whole attention -------------------------------------------------------- */

static int g_impl_creates = 0, g_impl_runs = 0, g_impl_destroys = 0;
OPCHAIN_VENDOR_EXPORT int test_plugin_impl_runs(void) { return g_impl_runs; }
OPCHAIN_VENDOR_EXPORT int test_plugin_impl_live(void) { return g_impl_creates - g_impl_destroys; }

typedef struct attn_state {
  char module_path[128];
  int64_t runs;
} attn_state;

MAYBE_UNUSED static int32_t attn_create(const oc_impl_info* info, void* user, void** handle, char* err,
                                        size_t err_size) {
  (void)user;
  attn_state* s = (attn_state*)calloc(1, sizeof *s);
  CHECK(s != NULL, "out of memory");
  snprintf(s->module_path, sizeof s->module_path, "%s", info->module_path);
  *handle = s;
  ++g_impl_creates;
  if (getenv("OPCHAIN_TEST_IMPL_VERBOSE")) fprintf(stderr, "implplug: attention impl for %s\n", info->module_path);
  return OC_STATUS_OK;
}

MAYBE_UNUSED static void attn_destroy(void* handle, void* user) {
  (void)user;
  free(handle);
  ++g_impl_destroys;
}

/* q, k, v, k_cache!, v_cache!, scale, meta, out: write the step's k/v into the cache at slot_mapping,
 * then attend as the default impl does: over the cache when some sequence has past or the cache rounds
 * what it stores (a bf16 cache), else over the fresh k/v. */
MAYBE_UNUSED static int32_t attn_run(void* handle, const oc_arg* a, size_t n, const oc_step_info* step, void* user,
                                     char* err, size_t err_size) {
  (void)user;
  attn_state* s = (attn_state*)handle;
  CHECK(n == 8 && a[6].kind == OC_ARG_ATTN_META && a[7].kind == OC_ARG_TENSOR, "unexpected attention impl fields");
  CHECK(step && step->attn && step->moe, "no step metadata");
  CHECK(step->positions.data != NULL && step->positions.shape[0] == a[0].value.tensor.shape[0], "no positions");
  const oc_tensor *q = &a[0].value.tensor, *k = &a[1].value.tensor, *v = &a[2].value.tensor;
  const oc_tensor *kc = &a[3].value.tensor, *vc = &a[4].value.tensor, *out = &a[7].value.tensor;
  const oc_attn_metadata* m = a[6].value.attn_meta;
  const int64_t rows = k->shape[0], hk = k->shape[1], d = k->shape[2];
  for (int64_t t = 0; t < rows; ++t) {
    const int32_t slot = i32(&m->slot_mapping)[t];
    if (slot < 0) continue;
    for (int64_t c = 0; c < hk * d; ++c) {
      store_cache(kc, (int64_t)slot * hk * d + c, ((const float*)k->data)[t * hk * d + c]);
      store_cache(vc, (int64_t)slot * hk * d + c, ((const float*)v->data)[t * hk * d + c]);
    }
  }
  ++s->runs;
  ++g_impl_runs;
  if (m->is_decoding || m->has_past || kc->dtype != k->dtype)
    return paged_attention(q, kc, vc, a[5].value.f32, m, out, err, err_size);
  return fresh_attention(q, k, v, a[5].value.f32, m, out, err, err_size);
}

/* ---- fakedev: memory that only the copy hooks reach ------------------------------------------ */

#define FAKE_TAG 0x0FA4EDE7u
typedef struct fake_header {
  uint32_t tag;
  uint32_t pad;
  uint64_t nbytes;
} fake_header;
static int g_live_allocs = 0;
OPCHAIN_VENDOR_EXPORT int test_plugin_live_allocs(void) { return g_live_allocs; }

MAYBE_UNUSED static void* fake_alloc(size_t nbytes, void* user) {
  (void)user;
  fake_header* h = (fake_header*)malloc(sizeof(fake_header) + nbytes);
  if (!h) return NULL;
  h->tag = FAKE_TAG;
  h->nbytes = nbytes;
  ++g_live_allocs;
  return h + 1;
}
static int is_fake(const void* p) { return p && ((const fake_header*)p - 1)->tag == FAKE_TAG; }
MAYBE_UNUSED static void fake_free(void* p, void* user) {
  (void)user;
  if (!is_fake(p)) abort();
  ((fake_header*)p - 1)->tag = 0;
  free((fake_header*)p - 1);
  --g_live_allocs;
}
MAYBE_UNUSED static int32_t fake_to_device(void* dst, const void* src, size_t nbytes, void* user) {
  (void)user;
  if (!is_fake(dst) || ((fake_header*)dst - 1)->nbytes < nbytes) return OC_STATUS_INVALID_ARGUMENT;
  memcpy(dst, src, nbytes);
  return OC_STATUS_OK;
}
MAYBE_UNUSED static int32_t fake_to_host(void* dst, const void* src, size_t nbytes, void* user) {
  (void)user;
  if (!is_fake(src)) return OC_STATUS_INVALID_ARGUMENT;
  memcpy(dst, src, nbytes);
  return OC_STATUS_OK;
}

/* Every tensor of the call, list members included, lies in fake-device memory. */
MAYBE_UNUSED static int on_device(const oc_tensor* t) {
  return !t->data || (t->device == OC_DEVICE_PLUGIN && is_fake(t->data));
}
MAYBE_UNUSED static int32_t check_device(const oc_arg* a, size_t n, char* err, size_t err_size) {
  for (size_t i = 0; i < n; ++i) {
    int ok = 1;
    if (a[i].kind == OC_ARG_TENSOR) ok = on_device(&a[i].value.tensor);
    if (a[i].kind == OC_ARG_TENSOR_LIST)
      for (size_t j = 0; j < a[i].value.tensors->count; ++j) ok = ok && on_device(&a[i].value.tensors->tensors[j]);
    if (!ok) {
      snprintf(err, err_size, "field '%s' is not in fake-device memory", a[i].name);
      return OC_STATUS_INVALID_ARGUMENT;
    }
  }
  return OC_STATUS_OK;
}
MAYBE_UNUSED static int32_t fake_rms_norm(const oc_arg* a, size_t n, void* user, char* err, size_t err_size) {
  const int32_t st = check_device(a, n, err, err_size);
  return st != OC_STATUS_OK ? st : rms_norm_kernel(a, n, user, err, err_size);
}
MAYBE_UNUSED static int32_t fake_grouped_matmul(const oc_arg* a, size_t n, void* user, char* err, size_t err_size) {
  const int32_t st = check_device(a, n, err, err_size);
  return st != OC_STATUS_OK ? st : grouped_matmul_kernel(a, n, user, err, err_size);
}

/* ---- the variants --------------------------------------------------------------------------- */

#define NO_KERNELS NULL, 0
#if defined(TEST_PLUGIN_abi11)
static const oc_kernel_def kKernels[] = {
    {"paged_decode_attention", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, paged_attention_kernel},
    {"paged_decode_attention", OC_DTYPE_BF16, OC_KERNEL_CAPTURE_SAFE, NULL, paged_attention_kernel},
    {"paged_prefill_attention", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, paged_attention_kernel},
    {"paged_prefill_attention", OC_DTYPE_BF16, OC_KERNEL_CAPTURE_SAFE, NULL, paged_attention_kernel},
    {"prefill_attention", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, prefill_attention_kernel},
    {"fused_moe", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, fused_moe_kernel},
    {"fused_moe", OC_DTYPE_BF16, OC_KERNEL_CAPTURE_SAFE, NULL, fused_moe_kernel},
    {"grouped_matmul", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, grouped_matmul_kernel},
    {"grouped_matmul", OC_DTYPE_BF16, OC_KERNEL_CAPTURE_SAFE, NULL, grouped_matmul_kernel},
};
static const oc_vendor_plugin kPlugin = {OPCHAIN_VENDOR_ABI_MAJOR,
                                         1,
                                         "abi11",
                                         "cpu",
                                         kKernels,
                                         sizeof kKernels / sizeof kKernels[0],
                                         check_step,
                                         NULL,
                                         NULL,
                                         0,
                                         NULL};
#elif defined(TEST_PLUGIN_impl)
static const oc_impl_def kImpls[] = {
    {"paged_decode_attention", "implplug::fused_attention", 0, attn_create, attn_run, attn_destroy},
};
static const oc_vendor_plugin kPlugin = {
    OPCHAIN_VENDOR_ABI_MAJOR, 1, "implplug", "cpu", NO_KERNELS, check_step, NULL, kImpls, 1, NULL};
#elif defined(TEST_PLUGIN_fakedev)
static const oc_kernel_def kKernels[] = {
    {"rms_norm", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, fake_rms_norm},
    {"grouped_matmul", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, fake_grouped_matmul},
    {"grouped_matmul", OC_DTYPE_BF16, OC_KERNEL_CAPTURE_SAFE, NULL, fake_grouped_matmul},
};
static const oc_memory_hooks kMemory = {fake_alloc, fake_free, fake_to_device, fake_to_host};
static const oc_vendor_plugin kPlugin = {OPCHAIN_VENDOR_ABI_MAJOR,
                                         1,
                                         "fakedev",
                                         "cpu",
                                         kKernels,
                                         sizeof kKernels / sizeof kKernels[0],
                                         NULL,
                                         NULL,
                                         NULL,
                                         0,
                                         &kMemory};
#elif defined(TEST_PLUGIN_bad_memory)
static const oc_kernel_def kKernels[] = {{"rms_norm", OC_DTYPE_F32, OC_KERNEL_CAPTURE_SAFE, NULL, fake_rms_norm}};
static const oc_memory_hooks kMemory = {fake_alloc, fake_free, fake_to_device, NULL};
static const oc_vendor_plugin kPlugin = {
    OPCHAIN_VENDOR_ABI_MAJOR, 1, "badmem", "cpu", kKernels, 1, NULL, NULL, NULL, 0, &kMemory};
#elif defined(TEST_PLUGIN_bad_impl)
static const oc_impl_def kImpls[] = {{"fused_moe", NULL, 0, NULL, NULL, NULL}};
static const oc_vendor_plugin kPlugin = {
    OPCHAIN_VENDOR_ABI_MAJOR, 1, "badimpl", "cpu", NO_KERNELS, NULL, NULL, kImpls, 1, NULL};
#else
#error "define TEST_PLUGIN_<variant>"
#endif

OPCHAIN_VENDOR_EXPORT const oc_vendor_plugin* opchain_vendor_plugin_init(const oc_host_api* host, char* err,
                                                                         size_t err_size) {
  if (host->abi_major != OPCHAIN_VENDOR_ABI_MAJOR || host->abi_minor < 1) {
    snprintf(err, err_size, "needs a host of vendor ABI 1.1 or later");
    return NULL;
  }
  return &kPlugin;
}
