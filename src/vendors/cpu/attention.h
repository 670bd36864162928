#pragma once
// The attention drivers: softmax(q . k * scale) @ v with an online (flash-style) softmax over kv
// positions. attention() serves prefill_attention and paged_prefill_attention; decode_attention(), one
// query per sequence, serves paged_decode_attention (Note [decode attention]) and the single-query
// sequences of the other two.
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "ops/step_metadata.h"

namespace opchain::cpu {

// Where one sequence's queries and keys are. Query i (0-based) sees kv positions [0, past + i + 1).
struct AttnSeq {
  int64_t q_row0 = 0;  // first query row in q/out
  int64_t q_len = 0;
  int64_t past = 0;     // kv positions before the first query
  int64_t kv_row0 = 0;  // contiguous k/v: row of kv position 0
  int64_t b = 0;        // paged: row of the block table
};

struct AttnJob {
  const float* q = nullptr;  // [rows, hq, d]
  float* out = nullptr;      // [rows, hq, d]
  int64_t hq = 0, hk = 0, d = 0;
  float scale = 1.0f;
  // Contiguous keys/values [rows, hk, d] (prefill), or a paged cache [blocks, block_size, hk, d], of
  // kv_dtype: f32, or bf16 (a paged cache only; Note [KV cache dtype]), widened to f32 as it is read.
  const void* k = nullptr;
  const void* v = nullptr;
  DType kv_dtype = DType::F32;
  bool paged = false;
  int64_t block_size = 0;
  const int32_t* block_tables = nullptr;  // [batch, max_blocks]
  int64_t max_blocks = 0;
  // The op's precision is not F32: q, k, v and the softmax weights may enter their products as bf16
  // (Note [AMX attention]).
  bool bf16_dots = false;
};

// Appends sequence b's AttnSeq `s` to `seqs`, its queries at positions from meta.decoded_from[b] on (a
// preempted sequence recomputing tokens that decode steps produced) as sequences of one query each: they
// take decode_attention() as they did in their decode steps, so the recompute gives the same bits.
void add_attention_sequence(std::vector<AttnSeq>& seqs, const AttnSeq& s, const AttnMetadata& meta);

// The job of a paged attention op: q and out [rows, hq, d], caches [blocks, block_size, hk, d].
AttnJob paged_attention_job(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, const Tensor& out,
                            float scale, const AttnMetadata& meta);

// One work item: kv heads [h0, h1) and queries [i0, i1) of sequence seqs[seq].
struct AttnItem {
  int64_t seq, h0, h1, i0, i1;
};

// Work items are (sequence, range of kv heads, tile of up to 16 queries): all q heads of those kv heads
// share each chunk of keys/values, read contiguously per position. Scores of a chunk are one block of
// fixed-order dots (simd.h), then an online-softmax update per (query, head) row. Kv positions are
// visited in fixed absolute chunks of 32, so a query's result depends only on its own sequence, never
// on the batch, the item split or the thread count (Note [cpu kernels]).
// A sequence of one query (a decode row in a step that also prefills another sequence, a one-token
// prompt) goes to decode_attention(), as it would in a decode-only step: its bits then never depend on
// whether a batch-mate was prefilling. Decided by the sequence alone.
void attention(const AttnJob& job, const AttnSeq* seqs, int64_t count);

// Note [decode attention] (paged_decode_attention.cpp): every sequence has q_len == 1 and sees kv
// positions [0, past + 1). Contiguous keys (job.paged false) are read from row kv_row0 on.
void decode_attention(const AttnJob& job, const AttnSeq* seqs, int64_t count);

// Note [AMX attention] (attention_amx.cpp): with bf16_dots on Isa::Amx and d a multiple of 32, the two
// products of every chunk run on TDPBF16PS. Whether a job takes that path:
bool amx_attention_applies(const AttnJob& job);
// Runs `items` (balanced by cost_before / total, as attention() does) on that path.
void amx_attention(const AttnJob& job, const AttnSeq* seqs, int64_t count, const std::vector<AttnItem>& items,
                   const std::vector<int64_t>& cost_before, int64_t total);

// Note [bf16 dot attention] (attention_bf16_dot.cpp): with bf16_dots on Isa::Avx512Bf16 in the Vdpbf16ps
// form and d a multiple of 32, attention()'s chunks take their two products on VDPBF16PS and their
// softmax step in powers of two. Whether a job takes that path:
bool dot_attention_applies(const AttnJob& job);
namespace dot_attention {
constexpr int64_t kChunk = 32;  // kv positions a chunk: attention()'s
// out[r * d + c] = x[r][c] rounded to bf16 (RNE), r < rows, c < d.
void round_rows(const float* const* x, int64_t rows, int64_t d, uint16_t* out);
// vp[j * d + c] = the pair (v[2j][c], v[2j + 1][c]) of bf16 value rows, zero past row n: j < kChunk / 2.
void pack_values(const uint16_t* const* v, int64_t n, int64_t d, uint32_t* vp);
// out[r * ldo + j] = q row r (bf16, [rows, d]) . key j, j < kChunk, from keys as pairs kp[(c / 2) * kChunk + j]
// (the bf16 rows' 32-bit elements transposed).
void scores(const uint16_t* q, int64_t rows, const uint32_t* kp, int64_t d, float* out, int64_t ldo);
// One online-softmax step of a chunk for `rows` rows, in powers of two: row r's cnt[r] visible scores
// (s + r * lds) times scale * log2(e) against its running maximum m[r] (in those units), l[r] and its
// numerator acc + r * d rescaled where the maximum rises; its weights 2^(t - m[r]) summed unrounded into
// l[r] and written rounded to bf16 as 16 position pairs, w[r * 16 + j] = (p[2j], p[2j + 1]), the
// positions it must not see zero.
void softmax_weights(const float* s, int64_t lds, int64_t rows, const int64_t* cnt, float scale, float* m, float* l,
                     float* acc, int64_t d, uint32_t* w);
// acc[r * d + c] += sum over pairs j < kChunk / 2 of w[r * 16 + j] . (value 2j, value 2j + 1)[c], from
// pack_values' vp.
void weighted_values(float* acc, int64_t rows, const uint32_t* w, const uint32_t* vp, int64_t d);
}  // namespace dot_attention

}  // namespace opchain::cpu
