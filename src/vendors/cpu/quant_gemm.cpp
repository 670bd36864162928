#include "vendors/cpu/quant_gemm.h"

#include <algorithm>
#include <vector>

#include "vendors/cpu/cpu_common.h"
#include "vendors/cpu/quant_simd.h"
#include "vendors/cpu/simd.h"

namespace opchain::cpu {

namespace {

constexpr int64_t kRowTile = 64, kColTile = 64, kMaxDecodeColTile = 1024;
constexpr int64_t kPrepRows = 16;  // rows per preparation chunk
// Int8Tile::xp starts a packed block at each tile's first row, and each preparation chunk packs whole blocks.
static_assert(kRowTile % kInt8PackRows == 0 && kPrepRows % kInt8PackRows == 0);
// The Amx fp8 and int4 tiles' activation blocks are 16 rows, each prepared by one chunk from a tile's first row.
static_assert(kRowTile % 16 == 0 && kPrepRows == 16);

// One problem's activations as its activation form prepares them, row by row: once per call, before
// any tile (every column tile of a row reads the same prepared row).
struct Prepared {
  ActivationForm form = ActivationForm::F32;
  const float* values = nullptr;  // F32: x itself (stride ldx); Bf16 / Fp8Group: prepared [rows, in]
  float* values_out = nullptr;    // Bf16 / Fp8Group: where they are prepared (= values)
  int64_t ld = 0;
  int8_t* codes = nullptr;  // Int8Token: [rows, ld8], zero-padded past in; Int8Group: [rows, in]
  int64_t ld8 = 0;
  int32_t* sums = nullptr;   // Int8Token: each row's code sum; Int8Group: each group's, [rows, groups]
  int8_t* packed = nullptr;  // Int8Token with QuantKernels::int8_pack: [rows rounded up to its blocks, ld8]
  float* scales = nullptr;   // Int8Token: [rows]; Fp8Group, Int8Group: [rows, groups]
  int64_t groups = 0, group = 0;
  const Int4Int8Kernels* i8k = nullptr;  // Int8Group where the SIMD tile runs (the codes in its layout)
  const Fp8Kernels* fp8 = nullptr;       // Fp8Group where an fp8 tile runs: its kernels, and the rows as
  uint16_t* x8 = nullptr;                // they prepare them, [rows, in] (Amx: whole 16-row blocks)
  const QuantKernels* k4 = nullptr;      // Bf16 with an int4 weight a SIMD tile takes: whose (int4_kernels)
  void* x4 = nullptr;                    // and its int4_prepare rows
  float* x4_sums = nullptr;              // and their group sums, [rows, groups]
};

// The kernels whose int4 tile runs this weight: the ISA's, or the narrower ones it names
// (QuantKernels::int4_other); null where none does (its rows are then decoded into an f32 panel).
const QuantKernels* int4_kernels(const QuantKernels* qk, const QuantParams& q, ActivationForm form) {
  if (form != ActivationForm::Bf16 || q.scheme != QuantScheme::Int4Group || !q.contiguous_groups()) return nullptr;
  for (const QuantKernels* k = qk; k; k = k->int4_other)
    if (k->int4_tile && q.in_features % k->int4_chunk == 0 && q.group_size % k->int4_chunk == 0) return k;
  return nullptr;
}

// The fp8 tile where it runs this weight in the Fp8Group form (its chunks divide k and the activation
// groups, and the weight's scales are per activation group or per row), else null.
const Fp8Kernels* fp8_tile_for(const QuantParams& q, int64_t act_group) {
  const Fp8Kernels* fp8 = fp8_kernels();
  const bool block = q.scheme == QuantScheme::Fp8Block;
  if (!fp8 || q.in_features % kFp8Chunk != 0 || act_group % kFp8Chunk != 0 ||
      !(block ? q.group_size == act_group : q.groups() == 1))
    return nullptr;
  return fp8;
}

// Rows of an fp8 problem's prepared activations: whole 16-row blocks where the tile reads blocks.
int64_t x8_rows(const Prepared& a, int64_t rows) { return a.fp8->pack_blocks ? (rows + 15) / 16 * 16 : rows; }
// The same for an int4 problem's (QuantKernels::int4_pack).
int64_t x4_rows(const Prepared& a, int64_t rows) { return a.k4->int4_pack ? (rows + 15) / 16 * 16 : rows; }

// Whether an Int8Token problem's activations are packed for the ISA's int8 tile (QuantKernels::int8_pack).
bool packs_int8(const QuantKernels* qk, const QuantGemmProblem& p) {
  return qk && qk->int8_pack && p.rows >= qk->int8_pack_rows;
}

struct Item {
  uint32_t problem;
  int64_t r0, r1, c0, c1;
};

void add_bias(const QuantGemmProblem& p, const Item& it) {
  if (!p.bias) return;  // out = dot + bias, as reference adds it after the sum
  for (int64_t c = it.c0; c < it.c1; ++c) {
    const float b = load_as_f32(p.bias, p.bias_dtype, static_cast<size_t>(c));
    for (int64_t r = it.r0; r < it.r1; ++r) p.out[r * p.ldo + c] += b;
  }
}

// out[r, c] for the item's rows and columns. The weight rows are decoded into an f32 panel once per
// item: exactly dequantised (F32 / Bf16 forms) or the fp8 codes' values (Fp8Group, scales applied per
// group after each group's dot), then every element is a fixed-order dot (Note [cpu kernels]).
void run_item(const SimdKernels& sk, const QuantKernels* qk, const QuantGemmProblem& p, const Prepared& a,
              const Item& it) {
  const QuantParams& q = *p.q;
  const int64_t in = q.in_features, cols = it.c1 - it.c0;
  if (a.x4) {
    Int4Tile t;
    t.x = static_cast<const char*>(a.x4) + it.r0 * in * a.k4->int4_x_bytes;
    t.ldx = in;
    t.codes = p.codes->data<uint8_t>() + it.c0 * p.codes->size(1);
    t.code_ld = p.codes->size(1);
    t.scales = q.scales.data<float>() + it.c0 * q.groups();
    t.zeros = q.zeros.is_null() ? nullptr : q.zeros.data<float>() + it.c0 * q.groups();
    t.x_sums = a.x4_sums + it.r0 * q.groups();
    t.groups = q.groups();
    t.group_size = q.group_size;
    t.k = in;
    t.out = p.out + it.r0 * p.ldo + it.c0;
    t.ldo = p.ldo;
    t.rows = it.r1 - it.r0;
    t.cols = cols;
    a.k4->int4_tile(t);
    add_bias(p, it);
    return;
  }
  if (a.i8k) {
    Int4Int8Tile t;
    t.x = a.codes + it.r0 * a.ld8;
    t.ldx = a.ld8;
    t.x_scales = a.scales + it.r0 * a.groups;
    t.x_sums = a.sums + it.r0 * a.groups;
    t.codes = p.codes->data<uint8_t>() + it.c0 * p.codes->size(1);
    t.code_ld = p.codes->size(1);
    t.scales = q.scales.data<float>() + it.c0 * q.groups();
    t.zeros = q.zeros.is_null() ? nullptr : q.zeros.data<float>() + it.c0 * q.groups();
    t.groups = a.groups;
    t.group_size = a.group;
    t.k = in;
    t.out = p.out + it.r0 * p.ldo + it.c0;
    t.ldo = p.ldo;
    t.rows = it.r1 - it.r0;
    t.cols = cols;
    a.i8k->tile(t);
    add_bias(p, it);
    return;
  }
  if (a.form == ActivationForm::Int8Token && qk) {
    Int8Tile t;
    t.x = a.codes + it.r0 * a.ld8;
    t.ldx = a.ld8;
    t.x_scales = a.scales + it.r0;
    t.x_sums = a.sums + it.r0;
    t.w = p.codes->data<int8_t>() + it.c0 * in;
    t.ldw = in;
    t.w_scales = q.scales.data<float>() + it.c0;
    t.w_zeros = q.zeros.is_null() ? nullptr : q.zeros.data<float>() + it.c0;
    t.k = in;
    t.out = p.out + it.r0 * p.ldo + it.c0;
    t.ldo = p.ldo;
    t.rows = it.r1 - it.r0;
    t.cols = cols;
    t.xp = a.packed ? a.packed + it.r0 * a.ld8 : nullptr;
    qk->int8_tile(t);
    add_bias(p, it);
    return;
  }
  thread_local std::vector<float> wbuf;
  float* w = scratch(wbuf, static_cast<size_t>(cols * in));
  switch (a.form) {
    case ActivationForm::F32:
    case ActivationForm::Bf16: {
      if (q.scheme == QuantScheme::Int8Channel) {
        // Int8 weights, float activations (W8A16): the tile's rows dequantised in vectors, the codes
        // prefetched 4 rows ahead (they stream from memory once per step, as fp8's below).
        const int8_t* codes = p.codes->data<int8_t>();
        const int64_t last_row = p.codes->size(0) - 1;
        for (int64_t c = it.c0; c < it.c1; ++c) {
          const int8_t* ahead = codes + std::min(c + 4, last_row) * in;
          for (int64_t b = 0; b < in; b += 64) __builtin_prefetch(ahead + b, 0, 2);
          sk.dequantize_i8(codes + c * in, q.zeros.is_null() ? 0.0f : q.zeros.data<float>()[c],
                           q.scales.data<float>()[c], w + (c - it.c0) * in, in);
        }
      } else {
        for (int64_t c = 0; c < cols; ++c) dequantize_row(*p.codes, q, it.c0 + c, w + c * in);
      }
      GemmTile t;
      t.x = a.values + it.r0 * a.ld;
      t.ldx = a.ld;
      t.w = w;
      t.ldw = in;
      t.out = p.out + it.r0 * p.ldo + it.c0;
      t.ldo = p.ldo;
      t.rows = it.r1 - it.r0;
      t.cols = cols;
      t.k = in;
      sk.gemm_f32(t);
      break;
    }
    case ActivationForm::Int8Token: {
      const float* sw = q.scales.data<float>();
      for (int64_t c = it.c0; c < it.c1; ++c) {
        const int8_t* wr = p.codes->data<int8_t>() + c * in;
        const int64_t zero = q.zeros.is_null() ? 0 : static_cast<int64_t>(q.zeros.data<float>()[c]);
        for (int64_t r = it.r0; r < it.r1; ++r) {
          const int8_t* xr = a.codes + r * a.ld8;
          int32_t acc = 0, xsum = 0;
          for (int64_t k = 0; k < in; ++k) {
            acc += static_cast<int32_t>(xr[k]) * wr[k];
            xsum += xr[k];
          }
          const int64_t total = static_cast<int64_t>(acc) - zero * xsum;
          p.out[r * p.ldo + c] = static_cast<float>(total) * a.scales[r] * sw[c];
        }
      }
      break;
    }
    case ActivationForm::Int8Group: {  // the reference's operations (quant_matmul.h)
      const int64_t code_ld = p.codes->size(1);
      for (int64_t c = it.c0; c < it.c1; ++c) {
        const uint8_t* wr = p.codes->data<uint8_t>() + c * code_ld;
        const float* sw = q.scales.data<float>() + c * q.groups();
        const float* zw = q.zeros.is_null() ? nullptr : q.zeros.data<float>() + c * q.groups();
        for (int64_t r = it.r0; r < it.r1; ++r) {
          const int8_t* xr = a.codes + r * a.ld8;
          float out = 0.0f;
          for (int64_t g = 0, g0 = 0; g0 < in; ++g, g0 += a.group) {
            int32_t dot = 0, xsum = 0;
            for (int64_t k = g0; k < std::min(in, g0 + a.group); ++k) {
              dot += static_cast<int32_t>(xr[k]) * ((wr[k / 2] >> (4 * (k % 2))) & 0xf);
              xsum += xr[k];
            }
            const float d = static_cast<float>(dot) - (zw ? zw[g] : 8.0f) * static_cast<float>(xsum);
            out += d * (a.scales[r * a.groups + g] * sw[g]);
          }
          p.out[r * p.ldo + c] = out;
        }
      }
      break;
    }
    case ActivationForm::Fp8Group: {
      const bool block = q.scheme == QuantScheme::Fp8Block;
      if (a.fp8) {
        Fp8Tile t;
        t.x = a.x8 + it.r0 * in;
        t.ldx = in;
        t.x_scales = a.scales + it.r0 * a.groups;
        t.codes = p.codes->data<uint8_t>() + it.c0 * in;
        t.code_ld = in;
        t.w_scales = q.scales.data<float>() + it.c0 * q.groups();
        t.w_groups = q.groups();
        t.group = a.group;
        t.groups = a.groups;
        t.k = in;
        t.out = p.out + it.r0 * p.ldo + it.c0;
        t.ldo = p.ldo;
        t.rows = it.r1 - it.r0;
        t.cols = cols;
        a.fp8->tile(t);
        break;
      }
      // The codes stream from memory once per step in decode: prefetch the rows 4 ahead of the one being
      // widened (without it the widening waited on memory for half the step).
      const uint8_t* codes = p.codes->data<uint8_t>();
      const int64_t last_row = p.codes->size(0) - 1;
      for (int64_t c = 0; c < cols; ++c) {
        const uint8_t* ahead = codes + std::min(it.c0 + c + 4, last_row) * in;
        for (int64_t b = 0; b < in; b += 64) __builtin_prefetch(ahead + b, 0, 2);
        sk.widen_f8e4m3(codes + (it.c0 + c) * in, w + c * in, in);
      }
      for (int64_t c = 0; c < cols; ++c) {
        const float* sw = q.scales.data<float>() + (it.c0 + c) * q.groups();
        for (int64_t r = it.r0; r < it.r1; ++r) {
          const float* xr = a.values + r * a.ld;
          float out = 0.0f;
          for (int64_t g = 0; g < a.groups; ++g) {
            const int64_t g0 = g * a.group, len = std::min(a.group, in - g0);
            out += sk.dot(xr + g0, w + c * in + g0, len) * a.scales[r * a.groups + g] * (block ? sw[g] : sw[0]);
          }
          p.out[r * p.ldo + it.c0 + c] = out;
        }
      }
      break;
    }
  }
  add_bias(p, it);
}

// Rows [r0, r1) of one problem's activations in its form, into the buffers `a` points at.
void prepare_rows(const QuantKernels* qk, const QuantGemmProblem& p, const Prepared& a, int64_t r0, int64_t r1) {
  const int64_t in = p.q->in_features;
  switch (a.form) {
    case ActivationForm::F32:
      return;
    case ActivationForm::Bf16:
      if (a.x4) {
        const int64_t groups = p.q->groups();
        // Columns sorted by group (act-order): the tile reads the activations in the columns' order.
        const int32_t* order = p.q->input_order.is_null() ? nullptr : p.q->input_order.data<int32_t>();
        thread_local std::vector<float> gathered;
        float* xg = order ? scratch(gathered, static_cast<size_t>(in)) : nullptr;
        // Where the tile reads packed blocks: this chunk's rows (one 16-row block, kPrepRows) first, then the block.
        thread_local std::vector<uint16_t> rows_buf;
        const bool pack = a.k4->int4_pack != nullptr;
        char* dst = pack ? reinterpret_cast<char*>(scratch_aligned(rows_buf, static_cast<size_t>((r1 - r0) * in))) -
                               r0 * in * a.k4->int4_x_bytes
                         : static_cast<char*>(a.x4);
        for (int64_t r = r0; r < r1; ++r) {
          const float* xr = p.x + r * p.ldx;
          if (order) {
            for (int64_t j = 0; j < in; ++j) xg[j] = xr[order[j]];
            xr = xg;
          }
          a.k4->int4_prepare(xr, in, p.q->group_size, dst + r * in * a.k4->int4_x_bytes, a.x4_sums + r * groups);
        }
        if (pack)
          a.k4->int4_pack(reinterpret_cast<const uint16_t*>(dst + r0 * in * a.k4->int4_x_bytes), in, r1 - r0,
                          reinterpret_cast<uint16_t*>(static_cast<char*>(a.x4) + r0 * in * a.k4->int4_x_bytes));
        return;
      }
      for (int64_t r = r0; r < r1; ++r) {
        float* vals = a.values_out + r * in;
        for (int64_t k = 0; k < in; ++k) vals[k] = round_to_bf16(p.x[r * p.ldx + k]);
      }
      return;
    case ActivationForm::Int8Token:
      for (int64_t r = r0; r < r1; ++r) {
        int8_t* row = a.codes + r * a.ld8;
        float* scale = a.scales + r;
        int32_t* sum = a.sums + r;
        if (qk) {
          *scale = qk->int8_prepare(p.x + r * p.ldx, in, row, sum);
        } else {
          *scale = quantize_row_int8(p.x + r * p.ldx, in, row);
          int32_t total = 0;
          for (int64_t k = 0; k < in; ++k) total += row[k];
          *sum = total;
        }
        std::fill(row + in, row + a.ld8, int8_t{0});
      }
      if (a.packed)  // once per call: every column tile of these rows reads the packed blocks
        for (int64_t b = r0; b < r1; b += kInt8PackRows)
          qk->int8_pack(a.codes + b * a.ld8, a.ld8, std::min(kInt8PackRows, r1 - b), a.packed + b * a.ld8);
      return;
    case ActivationForm::Int8Group: {
      // Columns sorted by group (act-order): the groups are over the columns, so gather first.
      const int32_t* order = p.q->input_order.is_null() ? nullptr : p.q->input_order.data<int32_t>();
      thread_local std::vector<float> gathered;
      float* xg = order ? scratch(gathered, static_cast<size_t>(in)) : nullptr;
      for (int64_t r = r0; r < r1; ++r) {
        const float* xr = p.x + r * p.ldx;
        if (order) {
          for (int64_t j = 0; j < in; ++j) xg[j] = xr[order[j]];
          xr = xg;
        }
        int8_t* row = a.codes + r * a.ld8;
        float* scales = a.scales + r * a.groups;
        int32_t* sums = a.sums + r * a.groups;
        if (a.i8k) {
          a.i8k->prepare(xr, in, a.group, row, scales, sums);
          continue;
        }
        for (int64_t g = 0, g0 = 0; g0 < in; ++g, g0 += a.group) {
          const int64_t len = std::min(a.group, in - g0);
          scales[g] = quantize_row_int8(xr + g0, len, row + g0);
          int32_t total = 0;
          for (int64_t k = g0; k < g0 + len; ++k) total += row[k];
          sums[g] = total;
        }
      }
      return;
    }
    case ActivationForm::Fp8Group: {
      if (a.fp8 && a.fp8->pack_blocks) {  // one 16-row block (kPrepRows): rows, then the block
        thread_local std::vector<uint16_t> rows_buf;
        uint16_t* rows = scratch_aligned(rows_buf, static_cast<size_t>((r1 - r0) * in));
        for (int64_t r = r0; r < r1; ++r)
          a.fp8->prepare(p.x + r * p.ldx, in, a.group, rows + (r - r0) * in, a.scales + r * a.groups);
        a.fp8->pack_blocks(rows, in, r1 - r0, a.x8 + r0 * in);
        return;
      }
      if (a.fp8) {
        for (int64_t r = r0; r < r1; ++r)
          a.fp8->prepare(p.x + r * p.ldx, in, a.group, a.x8 + r * in, a.scales + r * a.groups);
        return;
      }
      thread_local std::vector<uint8_t> f8;
      uint8_t* b = scratch(f8, static_cast<size_t>(in));
      for (int64_t r = r0; r < r1; ++r) {
        quantize_row_fp8(p.x + r * p.ldx, in, a.group, b, a.scales + r * a.groups);
        simd().widen_f8e4m3(b, a.values_out + r * in, in);
      }
      return;
    }
  }
}

}  // namespace

void quant_gemm(const QuantGemmProblem* problems, size_t count, MatmulPrecision precision) {
  const SimdKernels& sk = simd();
  const QuantKernels* qk = quant_kernels();
  // Prepare every problem's activations first (in parallel over rows), in the caller's scratch.
  thread_local std::vector<Prepared> prep_buf;
  thread_local std::vector<float> val_buf, scale_buf;
  thread_local std::vector<int8_t> code_buf, pack_buf;
  thread_local std::vector<int32_t> sum_buf;
  thread_local std::vector<char> x4_buf;
  thread_local std::vector<uint16_t> x8_buf;
  std::vector<Prepared>& prep = prep_buf;
  prep.assign(count, Prepared{});
  size_t val_total = 0, code_total = 0, scale_total = 0, sum_total = 0, x4_total = 0, pack_total = 0, x8_total = 0;
  for (size_t i = 0; i < count; ++i) {
    const QuantGemmProblem& p = problems[i];
    const int64_t in = p.q->in_features;
    Prepared& a = prep[i];
    a.form = activation_form(precision, *p.q);
    a.k4 = int4_kernels(qk, *p.q, a.form);
    if (a.form == ActivationForm::Int8Group) {
      a.group = p.q->group_size;
      a.groups = p.q->groups();
      a.ld8 = in;
      for (const Int4Int8Kernels* k = int4_int8_kernels(); k && !a.i8k; k = k->other)
        if (in % k->chunk == 0 && a.group % k->chunk == 0) a.i8k = k;
      code_total += static_cast<size_t>(p.rows * in);
      scale_total += static_cast<size_t>(p.rows * a.groups);
      sum_total += static_cast<size_t>(p.rows * a.groups);
    }
    if (a.form == ActivationForm::Fp8Group) {
      a.group = p.q->act_group > 0 ? p.q->act_group : in;
      a.groups = (in + a.group - 1) / a.group;
      a.fp8 = fp8_tile_for(*p.q, a.group);
    }
    if (a.k4) {
      x4_total += static_cast<size_t>(x4_rows(a, p.rows) * in * a.k4->int4_x_bytes);
      scale_total += static_cast<size_t>(p.rows * p.q->groups());
    } else if (a.fp8) {
      x8_total += static_cast<size_t>(x8_rows(a, p.rows) * in);
    } else if (a.form == ActivationForm::Bf16 || a.form == ActivationForm::Fp8Group) {
      val_total += static_cast<size_t>(p.rows * in);
    }
    if (a.form == ActivationForm::Int8Token) {
      a.ld8 = (in + 63) / 64 * 64;
      code_total += static_cast<size_t>(p.rows * a.ld8);
      scale_total += static_cast<size_t>(p.rows);
      sum_total += static_cast<size_t>(p.rows);
      if (packs_int8(qk, p))
        pack_total += static_cast<size_t>((p.rows + kInt8PackRows - 1) / kInt8PackRows * kInt8PackRows * a.ld8);
    }
    if (a.form == ActivationForm::Fp8Group) scale_total += static_cast<size_t>(p.rows * a.groups);
  }
  float* vals = scratch_aligned(val_buf, std::max<size_t>(val_total, 1));
  int8_t* codes = scratch_aligned(code_buf, std::max<size_t>(code_total, 1));
  float* scales = scratch_aligned(scale_buf, std::max<size_t>(scale_total, 1));
  int32_t* sums = scratch_aligned(sum_buf, std::max<size_t>(sum_total, 1));
  char* x4 = scratch_aligned(x4_buf, std::max<size_t>(x4_total, 1));
  int8_t* packed = scratch_aligned(pack_buf, std::max<size_t>(pack_total, 1));
  uint16_t* x8 = scratch_aligned(x8_buf, std::max<size_t>(x8_total, 1));
  // Each problem's share of the buffers first, then its rows prepared in parallel (chunks of rows over
  // every problem: a prefill's one big problem and an MoE step's many small ones both spread).
  struct PrepChunk {
    uint32_t problem;
    int64_t r0, r1;
  };
  thread_local std::vector<PrepChunk> chunks_buf;
  std::vector<PrepChunk>& chunks = chunks_buf;
  chunks.clear();
  int64_t prep_cost = 0;
  for (size_t i = 0; i < count; ++i) {
    const QuantGemmProblem& p = problems[i];
    const int64_t in = p.q->in_features;
    Prepared& a = prep[i];
    switch (a.form) {
      case ActivationForm::F32:
        a.values = p.x;
        a.ld = p.ldx;
        continue;  // nothing to prepare
      case ActivationForm::Bf16:
        if (a.k4) {
          a.x4 = x4;
          a.x4_sums = scales;
          x4 += x4_rows(a, p.rows) * in * a.k4->int4_x_bytes;
          scales += p.rows * p.q->groups();
          break;
        }
        a.values = a.values_out = vals;
        a.ld = in;
        vals += p.rows * in;
        break;
      case ActivationForm::Int8Token:
        a.codes = codes;
        a.scales = scales;
        a.sums = sums;
        codes += p.rows * a.ld8;
        scales += p.rows;
        sums += p.rows;
        if (packs_int8(qk, p)) {
          a.packed = packed;
          packed += (p.rows + kInt8PackRows - 1) / kInt8PackRows * kInt8PackRows * a.ld8;
        }
        break;
      case ActivationForm::Int8Group:
        a.codes = codes;
        a.scales = scales;
        a.sums = sums;
        codes += p.rows * in;
        scales += p.rows * a.groups;
        sums += p.rows * a.groups;
        break;
      case ActivationForm::Fp8Group:
        if (a.fp8) {
          a.x8 = x8;
          x8 += x8_rows(a, p.rows) * in;
        } else {
          a.values = a.values_out = vals;
          a.ld = in;
          vals += p.rows * in;
        }
        a.scales = scales;
        scales += p.rows * a.groups;
        break;
    }
    for (int64_t r0 = 0; r0 < p.rows; r0 += kPrepRows)
      chunks.push_back({static_cast<uint32_t>(i), r0, std::min(r0 + kPrepRows, p.rows)});
    prep_cost += p.rows * in;
  }
  parallel_dynamic(chunks.size(), prep_cost, [&](size_t ci) {
    const PrepChunk& ch = chunks[ci];
    const QuantGemmProblem& p = problems[ch.problem];
    const Prepared& a = prep[ch.problem];
    prepare_rows(qk, p, a, ch.r0, ch.r1);
  });
  // Tiles of rows x output features, handed out from a shared counter (parallel_dynamic).
  thread_local std::vector<Item> items_buf;
  std::vector<Item>& items = items_buf;
  items.clear();
  // Decode (every problem a row or two): each tile streams its weight rows once, prefetching ahead
  // (quant_simd.cpp), so wide tiles keep the streams long and the prefetch running into the tile's own
  // next rows; still several tiles per thread, so a thread held up by a neighbour is balanced out.
  // More rows: kColTile columns, whose unpacked weights stay in L2 while the rows pass.
  int64_t col_tile = kColTile;
  // (Only where the SIMD tiles run: the other paths decode a tile's weights into an f32 panel first.)
  bool decode = true;
  for (size_t i = 0; i < count; ++i)
    decode = decode && problems[i].rows <= 2 &&
             (prep[i].x4 || prep[i].fp8 || prep[i].i8k || (prep[i].form == ActivationForm::Int8Token && qk));
  if (decode) {
    const int threads = ThreadPool::global().num_threads();
    auto tiles_with = [&](int64_t tile) {
      int64_t n = 0;
      for (size_t i = 0; i < count; ++i) n += (problems[i].n + tile - 1) / tile;
      return n;
    };
    col_tile = kMaxDecodeColTile;
    while (col_tile > kColTile && tiles_with(col_tile) < 4 * threads) col_tile /= 2;
  }
  int64_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    const QuantGemmProblem& p = problems[i];
    for (int64_t c0 = 0; c0 < p.n; c0 += col_tile)
      for (int64_t r0 = 0; r0 < p.rows; r0 += kRowTile) {
        items.push_back(
            {static_cast<uint32_t>(i), r0, std::min(r0 + kRowTile, p.rows), c0, std::min(c0 + col_tile, p.n)});
        total += (std::min(r0 + kRowTile, p.rows) - r0 + 4) * (std::min(c0 + col_tile, p.n) - c0) * p.q->in_features;
      }
  }
  std::vector<Prepared>& prepared = prep;
  parallel_dynamic(items.size(), total, [&](size_t i) {
    run_item(sk, qk, problems[items[i].problem], prepared[items[i].problem], items[i]);
  });
}

}  // namespace opchain::cpu
