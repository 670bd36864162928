#include "engine/random_model.h"

#include "engine/quantize_model.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/quantize_model.h"
#include "io/hf_config.h"
#include "io/model_directory.h"

namespace opchain {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int64_t kQwenBos = 151643, kQwenEos = 151645, kQwenVocab = 151936;

// Qwen3-MoE's config.json as transformers 4.51 writes it, with the sizes that differ per preset.
json qwen3_moe_config(int64_t hidden, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t experts, int64_t top_k,
                      int64_t moe_inter, int64_t inter) {
  return {{"architectures", {"Qwen3MoeForCausalLM"}},
          {"attention_bias", false},
          {"attention_dropout", 0.0},
          {"bos_token_id", kQwenBos},
          {"decoder_sparse_step", 1},
          {"eos_token_id", kQwenEos},
          {"head_dim", head_dim},
          {"hidden_act", "silu"},
          {"hidden_size", hidden},
          {"initializer_range", 0.02},
          {"intermediate_size", inter},
          {"max_position_embeddings", 40960},
          {"mlp_only_layers", json::array()},
          {"model_type", "qwen3_moe"},
          {"moe_intermediate_size", moe_inter},
          {"norm_topk_prob", true},
          {"num_attention_heads", heads},
          {"num_experts", experts},
          {"num_experts_per_tok", top_k},
          {"num_key_value_heads", kv_heads},
          {"output_router_logits", false},
          {"rms_norm_eps", 1e-6},
          {"rope_scaling", nullptr},
          {"rope_theta", 1000000.0},
          {"router_aux_loss_coef", 0.001},
          {"sliding_window", nullptr},
          {"tie_word_embeddings", false},
          {"transformers_version", "4.51.0"},
          {"use_cache", true},
          {"use_sliding_window", false},
          {"vocab_size", kQwenVocab}};
}

json qwen3_dense_config(int64_t hidden, int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t inter, bool tie) {
  return {{"architectures", {"Qwen3ForCausalLM"}},
          {"attention_bias", false},
          {"attention_dropout", 0.0},
          {"bos_token_id", kQwenBos},
          {"eos_token_id", kQwenEos},
          {"head_dim", head_dim},
          {"hidden_act", "silu"},
          {"hidden_size", hidden},
          {"initializer_range", 0.02},
          {"intermediate_size", inter},
          {"max_position_embeddings", 40960},
          {"model_type", "qwen3"},
          {"num_attention_heads", heads},
          {"num_key_value_heads", kv_heads},
          {"rms_norm_eps", 1e-6},
          {"rope_scaling", nullptr},
          {"rope_theta", 1000000.0},
          {"sliding_window", nullptr},
          {"tie_word_embeddings", tie},
          {"transformers_version", "4.51.0"},
          {"use_cache", true},
          {"use_sliding_window", false},
          {"vocab_size", kQwenVocab}};
}

constexpr int64_t kQwen35Vocab = 248320;

// The sizes a hybrid preset sets; the rest is what the hub configs carry.
struct HybridShape {
  int64_t hidden, heads, kv_heads, head_dim;
  int64_t lin_k_heads, lin_v_heads, lin_head_dim;
  int64_t experts, top_k, moe_inter, shared_inter;  // experts 0: dense Qwen3.5
  int64_t inter;                                    // dense MLP (Qwen3.5 dense, Qwen3-Next's dense layers)
};

// The hybrid decoders' text configs as their hub checkpoints carry them (Qwen3-Next-80B-A3B; the text
// part of Qwen3.5-35B-A3B and Qwen3.5-9B, as Qwen3_5(Moe)ForCausalLM writes it). Every fourth layer is
// full attention.
json hybrid_config(const std::string& family, const HybridShape& s) {
  json c = {{"attention_bias", false},
            {"attention_dropout", 0.0},
            {"bos_token_id", kQwenBos},
            {"eos_token_id", kQwenEos},
            {"full_attention_interval", 4},
            {"head_dim", s.head_dim},
            {"hidden_act", "silu"},
            {"hidden_size", s.hidden},
            {"initializer_range", 0.02},
            {"linear_conv_kernel_dim", 4},
            {"linear_key_head_dim", s.lin_head_dim},
            {"linear_num_key_heads", s.lin_k_heads},
            {"linear_num_value_heads", s.lin_v_heads},
            {"linear_value_head_dim", s.lin_head_dim},
            {"max_position_embeddings", 262144},
            {"num_attention_heads", s.heads},
            {"num_key_value_heads", s.kv_heads},
            {"rms_norm_eps", 1e-6},
            {"tie_word_embeddings", false},
            {"use_cache", true}};
  if (s.experts > 0) {
    c["num_experts"] = s.experts;
    c["num_experts_per_tok"] = s.top_k;
    c["moe_intermediate_size"] = s.moe_inter;
    c["shared_expert_intermediate_size"] = s.shared_inter;
  }
  if (family == "qwen3_next") {
    c["architectures"] = {"Qwen3NextForCausalLM"};
    c["model_type"] = "qwen3_next";
    c["decoder_sparse_step"] = 1;
    c["mlp_only_layers"] = json::array();
    c["norm_topk_prob"] = true;
    c["intermediate_size"] = s.inter;
    c["partial_rotary_factor"] = 0.25;
    c["rope_scaling"] = nullptr;
    c["rope_theta"] = 10000000.0;
    c["vocab_size"] = kQwenVocab;
    c["transformers_version"] = "4.57.0";
  } else {
    c["architectures"] = {s.experts > 0 ? "Qwen3_5MoeForCausalLM" : "Qwen3_5ForCausalLM"};
    c["model_type"] = s.experts > 0 ? "qwen3_5_moe_text" : "qwen3_5_text";
    if (s.inter > 0) c["intermediate_size"] = s.inter;
    c["rope_parameters"] = {{"rope_type", "default"},
                            {"rope_theta", 10000000.0},
                            {"partial_rotary_factor", 0.25},
                            {"mrope_section", {11, 11, 10}},
                            {"mrope_interleaved", true}};
    c["vocab_size"] = kQwen35Vocab;
    c["transformers_version"] = "5.2.0";
  }
  return c;
}

struct Preset {
  std::string name;
  int64_t full_layers;
  json config;  // without the depth
};

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"qwen3-30b-a3b", 48, qwen3_moe_config(2048, 32, 4, 128, 128, 8, 768, 6144)},
      {"qwen3-4b", 36, qwen3_dense_config(2560, 32, 8, 128, 9728, true)},
      {"tiny-moe", 4, qwen3_moe_config(256, 8, 2, 32, 16, 4, 128, 512)},
      {"qwen3.5-35b-a3b", 40, hybrid_config("qwen3_5", {2048, 16, 2, 256, 16, 32, 128, 256, 8, 512, 512, 0})},
      {"qwen3-next-80b-a3b", 48, hybrid_config("qwen3_next", {2048, 16, 2, 256, 16, 32, 128, 512, 10, 512, 512, 5120})},
      {"qwen3.5-9b", 32, hybrid_config("qwen3_5", {4096, 16, 4, 256, 16, 32, 128, 0, 0, 0, 0, 12288})},
      // The same layouts at toy sizes, for tests of the writer and the loader.
      {"tiny-qwen3.5-moe", 4, hybrid_config("qwen3_5", {128, 4, 2, 32, 2, 4, 32, 8, 2, 64, 64, 0})},
      {"tiny-qwen3-next", 4, hybrid_config("qwen3_next", {128, 4, 2, 32, 2, 4, 32, 8, 2, 64, 64, 192})},
  };
  return all;
}

const Preset& find_preset(const std::string& name) {
  for (const auto& p : presets())
    if (p.name == name) return p;
  std::string known;
  for (const auto& p : presets()) known += (known.empty() ? "" : ", ") + p.name;
  throw InvalidArgumentError("unknown preset '" + name + "'; known presets: " + known);
}

// --- random numbers: fast enough that generation keeps up with the disk ---

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Xoshiro256pp {
  uint64_t s[4];
  explicit Xoshiro256pp(uint64_t seed) {
    for (auto& v : s) v = splitmix64(seed);
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t next() {
    const uint64_t result = rotl(s[0] + s[3], 23) + s[0];
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
};

// Irwin-Hall with four 16-bit uniforms from one draw: mean 0, variance 1, bounded at +-3.46. Close
// enough to a normal for an initialisation, and several times cheaper than Box-Muller.
inline float approx_normal(uint64_t r) {
  const uint64_t s = (r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48);
  constexpr float kScale = 1.7320508075688772f / 65536.0f;  // sqrt(3) / 2^16: one uniform's std is 2^16/sqrt(12)
  return (static_cast<float>(s) - 131070.0f) * kScale;
}

uint64_t name_hash(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// How a tensor is initialised: all `constant`, or approx-normal with standard deviation `std`.
struct Init {
  bool is_constant = false;
  float constant = 0, std = 0;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Projections read unit-variance inputs (every sub-block starts with an RMSNorm), so std 1/sqrt(fan_in)
// keeps their outputs at unit variance. The projections that write into the residual stream (o_proj,
// down_proj, a linear-attention layer's out_proj) get a further 1/sqrt(2 * layers): the 2 * layers
// sub-blocks then add at most about unit variance in total, so the residual stays bounded at any
// depth. Embeddings use transformers' initializer_range, which with a tied lm_head gives logits of
// about unit variance. Hybrid models: zero-centred norms store 0 (a gain of 1), the gated norm 1,
// A_log 0 and dt_bias 1 (decays of about e^-1.3 per token), the depthwise conv 1/sqrt(K).
Init init_for(const TensorDecl& t, int64_t layers, bool zero_centered_norms) {
  const std::string& n = t.name;
  if (ends_with(n, "linear_attn.norm.weight")) return {true, 1.0f, 0};
  if (ends_with(n, "norm.weight")) return {true, zero_centered_norms ? 0.0f : 1.0f, 0};
  if (ends_with(n, ".A_log")) return {true, 0.0f, 0};
  if (ends_with(n, ".dt_bias")) return {true, 1.0f, 0};
  if (n == "model.embed_tokens.weight") return {false, 0, 0.02f};
  if (ends_with(n, "conv1d.weight"))
    return {false, 0, static_cast<float>(1.0 / std::sqrt(static_cast<double>(t.shape[-1])))};
  const double fan_in = static_cast<double>(t.shape.ndim >= 2 ? t.shape[-1] : 1);
  double std = 1.0 / std::sqrt(fan_in);
  if (ends_with(n, "o_proj.weight") || ends_with(n, "down_proj.weight") || ends_with(n, "experts.down_proj") ||
      ends_with(n, "out_proj.weight"))
    std /= std::sqrt(2.0 * static_cast<double>(layers));
  return {false, 0, static_cast<float>(std)};
}

// A hybrid decoder's tensors as its hub checkpoints name and shape them: Qwen3-Next with grouped
// in_proj_qkvz / in_proj_ba and per-expert tensors, Qwen3.5 with flat projections and fused experts.
void add_hybrid_layer(const ModelConfig& c, int64_t l, const std::function<void(std::string, Shape)>& add) {
  const int64_t h = c.hidden_size, hd = c.head_dim;
  const LinearAttentionConfig& lin = c.linear;
  const std::string p = "model.layers." + std::to_string(l);
  add(p + ".input_layernorm.weight", {h});
  add(p + ".post_attention_layernorm.weight", {h});
  if (c.is_linear_attention(l)) {
    const std::string a = p + ".linear_attn";
    if (c.grouped_qkvz) {
      add(a + ".in_proj_qkvz.weight", {lin.conv_dim() + lin.value_dim(), h});
      add(a + ".in_proj_ba.weight", {2 * lin.num_value_heads, h});
    } else {
      add(a + ".in_proj_qkv.weight", {lin.conv_dim(), h});
      add(a + ".in_proj_z.weight", {lin.value_dim(), h});
      add(a + ".in_proj_b.weight", {lin.num_value_heads, h});
      add(a + ".in_proj_a.weight", {lin.num_value_heads, h});
    }
    add(a + ".conv1d.weight", {lin.conv_dim(), 1, lin.conv_kernel});
    add(a + ".dt_bias", {lin.num_value_heads});
    add(a + ".A_log", {lin.num_value_heads});
    add(a + ".norm.weight", {lin.value_head_dim});
    add(a + ".out_proj.weight", {h, lin.value_dim()});
  } else {
    add(p + ".self_attn.q_proj.weight", {2 * c.num_attention_heads * hd, h});
    add(p + ".self_attn.k_proj.weight", {c.num_key_value_heads * hd, h});
    add(p + ".self_attn.v_proj.weight", {c.num_key_value_heads * hd, h});
    add(p + ".self_attn.o_proj.weight", {h, c.num_attention_heads * hd});
    add(p + ".self_attn.q_norm.weight", {hd});
    add(p + ".self_attn.k_norm.weight", {hd});
  }
  if (!c.is_moe_layer(l)) {
    add(p + ".mlp.gate_proj.weight", {c.intermediate_size, h});
    add(p + ".mlp.up_proj.weight", {c.intermediate_size, h});
    add(p + ".mlp.down_proj.weight", {h, c.intermediate_size});
    return;
  }
  const int64_t inter = c.moe_intermediate_size, shared = c.shared_expert_intermediate_size;
  add(p + ".mlp.gate.weight", {c.num_experts, h});
  if (c.grouped_qkvz) {  // Qwen3-Next's hub checkpoints list every expert
    for (int64_t e = 0; e < c.num_experts; ++e) {
      const std::string ep = p + ".mlp.experts." + std::to_string(e);
      add(ep + ".gate_proj.weight", {inter, h});
      add(ep + ".up_proj.weight", {inter, h});
      add(ep + ".down_proj.weight", {h, inter});
    }
  } else {
    add(p + ".mlp.experts.gate_up_proj", {c.num_experts, 2 * inter, h});
    add(p + ".mlp.experts.down_proj", {c.num_experts, h, inter});
  }
  add(p + ".mlp.shared_expert.gate_proj.weight", {shared, h});
  add(p + ".mlp.shared_expert.up_proj.weight", {shared, h});
  add(p + ".mlp.shared_expert.down_proj.weight", {h, shared});
  add(p + ".mlp.shared_expert_gate.weight", {1, h});
}

std::vector<TensorDecl> model_tensors(const ModelConfig& c, DType dt) {
  std::vector<TensorDecl> out;
  const int64_t h = c.hidden_size, hd = c.head_dim;
  auto add = [&](std::string name, Shape s) { out.push_back({std::move(name), dt, s}); };
  add("model.embed_tokens.weight", {c.vocab_size, h});
  add("model.norm.weight", {h});
  if (!c.tie_word_embeddings) add("lm_head.weight", {c.vocab_size, h});
  if (c.is_hybrid()) {
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) add_hybrid_layer(c, l, add);
    return out;
  }
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l);
    add(p + ".input_layernorm.weight", {h});
    add(p + ".post_attention_layernorm.weight", {h});
    add(p + ".self_attn.q_proj.weight", {c.num_attention_heads * hd, h});
    add(p + ".self_attn.k_proj.weight", {c.num_key_value_heads * hd, h});
    add(p + ".self_attn.v_proj.weight", {c.num_key_value_heads * hd, h});
    add(p + ".self_attn.o_proj.weight", {h, c.num_attention_heads * hd});
    if (c.qk_norm) {
      add(p + ".self_attn.q_norm.weight", {hd});
      add(p + ".self_attn.k_norm.weight", {hd});
    }
    if (c.is_moe_layer(l)) {
      add(p + ".mlp.gate.weight", {c.num_experts, h});
      for (int64_t e = 0; e < c.num_experts; ++e) {
        const std::string ep = p + ".mlp.experts." + std::to_string(e);
        add(ep + ".gate_proj.weight", {c.moe_intermediate_size, h});
        add(ep + ".up_proj.weight", {c.moe_intermediate_size, h});
        add(ep + ".down_proj.weight", {h, c.moe_intermediate_size});
      }
    } else {
      add(p + ".mlp.gate_proj.weight", {c.intermediate_size, h});
      add(p + ".mlp.up_proj.weight", {c.intermediate_size, h});
      add(p + ".mlp.down_proj.weight", {h, c.intermediate_size});
    }
  }
  return out;
}

// Generates a tensor in blocks of fixed-size chunks, each chunk its own RNG stream, so the values do
// not depend on the thread count; the block buffer bounds memory whatever the tensor's size.
class TensorGenerator {
 public:
  explicit TensorGenerator(uint64_t seed) : seed_(seed) {}

  // The whole tensor at once (the values fill() streams), for quantising it.
  Tensor make(const TensorDecl& t, const Init& init) {
    Tensor out = Tensor::empty(t.dtype, t.shape);
    const int64_t n = t.shape.numel();
    const size_t esize = dtype_size(t.dtype);
    uint64_t tensor_seed = seed_ ^ name_hash(t.name);
    tensor_seed = splitmix64(tensor_seed);
    ThreadPool::global().parallel_for((n + kChunk - 1) / kChunk, [&](int, int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        const int64_t begin = c * kChunk, end = std::min<int64_t>(n, begin + kChunk);
        generate(t.dtype, init, tensor_seed + static_cast<uint64_t>(c) * 0x9e3779b97f4a7c15ull,
                 out.data<char>() + begin * esize, end - begin);
      }
    });
    return out;
  }

  void fill(const TensorDecl& t, const Init& init, SafetensorsWriter& w) {
    const int64_t n = t.shape.numel();
    const size_t esize = dtype_size(t.dtype);
    buffer_.resize(static_cast<size_t>(std::min<int64_t>(n, kChunk * kChunksPerBlock)) * esize);
    uint64_t tensor_seed = seed_ ^ name_hash(t.name);
    tensor_seed = splitmix64(tensor_seed);
    ThreadPool& pool = ThreadPool::global();
    for (int64_t block_begin = 0; block_begin < n; block_begin += kChunk * kChunksPerBlock) {
      const int64_t block_n = std::min<int64_t>(n - block_begin, kChunk * kChunksPerBlock);
      const int64_t chunks = (block_n + kChunk - 1) / kChunk;
      pool.parallel_for(chunks, [&](int, int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          const int64_t begin = c * kChunk, end = std::min<int64_t>(block_n, begin + kChunk);
          const uint64_t chunk_id = static_cast<uint64_t>((block_begin + begin) / kChunk);
          generate(t.dtype, init, tensor_seed + chunk_id * 0x9e3779b97f4a7c15ull, buffer_.data() + begin * esize,
                   end - begin);
        }
      });
      w.write(buffer_.data(), static_cast<size_t>(block_n) * esize);
    }
  }

 private:
  static constexpr int64_t kChunk = 1 << 16;
  static constexpr int64_t kChunksPerBlock = 256;  // 16M elements: 32 MB of bf16 per write

  static void generate(DType dt, const Init& init, uint64_t seed, char* out, int64_t n) {
    Xoshiro256pp rng(seed);
    if (dt == DType::BF16) {
      auto* o = reinterpret_cast<uint16_t*>(out);
      if (init.is_constant)
        std::fill(o, o + n, f32_to_bf16(init.constant));
      else
        for (int64_t i = 0; i < n; ++i) o[i] = f32_to_bf16(approx_normal(rng.next()) * init.std);
    } else {
      auto* o = reinterpret_cast<float*>(out);
      if (init.is_constant)
        std::fill(o, o + n, init.constant);
      else
        for (int64_t i = 0; i < n; ++i) o[i] = approx_normal(rng.next()) * init.std;
    }
  }

  uint64_t seed_;
  std::vector<char> buffer_;
};

void write_json_file(const fs::path& path, const json& j) {
  std::ofstream out(path);
  out << j.dump(2) << "\n";
  if (!out.flush()) throw InvalidArgumentError("cannot write " + path.string());
}

}  // namespace

const std::vector<std::string>& random_model_presets() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& p : presets()) v.push_back(p.name);
    return v;
  }();
  return names;
}

std::string random_model_config_json(const std::string& preset, int64_t layers, DType dtype, int64_t vocab_size) {
  const Preset& p = find_preset(preset);
  if (layers <= 0) layers = p.full_layers;
  json c = p.config;
  c["num_hidden_layers"] = layers;
  if (c["model_type"] == "qwen3_moe" || c["model_type"] == "qwen3") c["max_window_layers"] = layers;
  c["torch_dtype"] = dtype == DType::BF16 ? "bfloat16" : "float32";
  if (vocab_size > 0) c["vocab_size"] = vocab_size;
  return c.dump(2) + "\n";
}

static RandomModelResult write_random_model_impl(const RandomModelOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (o.dtype != DType::BF16 && o.dtype != DType::F32)
    throw InvalidArgumentError("random models are bf16 or f32, not " + std::string(dtype_name(o.dtype)));
  if (o.layers < 0) throw InvalidArgumentError("layer count must be positive, got " + std::to_string(o.layers));
  if (o.vocab_size < 0)
    throw InvalidArgumentError("vocabulary size must be positive, got " + std::to_string(o.vocab_size));
  const std::string config_text = random_model_config_json(o.preset, o.layers, o.dtype, o.vocab_size);
  const ModelConfig config = parse_model_config(config_text, "preset " + o.preset);

  const fs::path dir(o.out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw InvalidArgumentError("cannot create output directory " + o.out_dir + ": " + ec.message());
  fs::path tok_json, tok_config;
  if (!o.tokenizer_dir.empty()) {
    tok_json = fs::path(o.tokenizer_dir) / model_file::kTokenizer;
    tok_config = fs::path(o.tokenizer_dir) / model_file::kTokenizerConfig;
    for (const auto& f : {tok_json, tok_config})
      if (!fs::is_regular_file(f))
        throw InvalidArgumentError("tokenizer directory " + o.tokenizer_dir + " has no " + f.filename().string());
  }
  static const std::regex stale(R"(model\.safetensors|model\.safetensors\.index\.json|model-\d+-of-\d+\.safetensors)");
  for (const auto& entry : fs::directory_iterator(dir))
    if (std::regex_match(entry.path().filename().string(), stale)) fs::remove(entry.path());

  write_json_file(dir / model_file::kConfig, json::parse(config_text));
  json gen = {{"bos_token_id", kQwenBos},
              {"do_sample", true},
              {"eos_token_id", {kQwenEos, kQwenBos}},
              {"pad_token_id", kQwenBos},
              {"temperature", 0.6},
              {"top_k", 20},
              {"top_p", 0.95},
              {"transformers_version", "4.51.0"}};
  write_json_file(dir / model_file::kGenerationConfig, gen);
  if (!o.tokenizer_dir.empty()) {
    fs::copy_file(tok_json, dir / model_file::kTokenizer, fs::copy_options::overwrite_existing);
    fs::copy_file(tok_config, dir / model_file::kTokenizerConfig, fs::copy_options::overwrite_existing);
  }

  RandomModelResult result;
  auto tensors = model_tensors(config, o.dtype);
  for (const auto& t : tensors) result.parameters += t.shape.numel();
  TensorGenerator gen_weights(o.seed);
  const int64_t layers = config.num_hidden_layers;
  if (o.quantize) {
    const QuantizedWeights q = write_quantized_weights(
        o.out_dir, tensors,
        [&](const TensorDecl& t) { return gen_weights.make(t, init_for(t, layers, config.zero_centered_norms)); },
        *o.quantize, o.max_shard_bytes, config.tie_word_embeddings ? config.weight_prefix + "embed_tokens.weight" : "");
    json c = json::parse(config_text);
    if (q.untied_lm_head) untie_word_embeddings(c);
    c["quantization_config"] = q.quantization_config;
    write_json_file(dir / model_file::kConfig, c);
    result.weight_files = q.written.files;
    result.weight_bytes = q.written.total_bytes;
    result.quantized_layers = q.quantized_layers;
    result.dense_layers = static_cast<int64_t>(q.dense_modules.size());
  } else {
    const ShardedWriteResult written = write_sharded_safetensors(
        o.out_dir, std::move(tensors), o.max_shard_bytes, [&](const TensorDecl& t, SafetensorsWriter& w) {
          gen_weights.fill(t, init_for(t, layers, config.zero_centered_norms), w);
        });
    result.weight_files = written.files;
    result.weight_bytes = written.total_bytes;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

RandomModelResult write_random_model(const RandomModelOptions& o) {
  try {
    return write_random_model_impl(o);
  } catch (const fs::filesystem_error& e) {
    // e.what() names the operation and the paths; keep it one user-facing line.
    throw InvalidArgumentError(std::string("cannot write model to ") + o.out_dir + ": " + e.what());
  }
}

}  // namespace opchain
