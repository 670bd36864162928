#include "engine/quantize_model.h"

#include <chrono>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <filesystem>
#include <fstream>
#include <list>
#include <map>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "io/hf_config.h"
#include "io/model_directory.h"
#include "io/safetensors.h"

namespace opchain {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool ends_with(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}
bool starts_with(const std::string& s, const std::string& t) { return s.rfind(t, 0) == 0; }
bool is_float(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }

// A text model's linear layer, by its tensor's name and rank (vision towers and MTP heads are copied).
bool is_linear_weight(const TensorDecl& t) {
  const std::string& n = t.name;
  if (t.shape.ndim != 2 || !ends_with(n, ".weight") || !is_float(t.dtype)) return false;
  if (starts_with(n, "mtp.") || starts_with(n, "model.visual.") || n.find("embed_tokens") != std::string::npos)
    return false;
  return n.find("norm") == std::string::npos;
}

// Left dense: the vocabulary projection (unless asked, as GPTQModel's lm_head option does) and the tiny MoE
// routing layers, as the published recipes leave them (their errors move every token's expert choice).
bool kept_dense(const std::string& module, const QuantFormatOptions& o) {
  return (module == "lm_head" && !o.lm_head) || ends_with(module, ".mlp.gate") ||
         ends_with(module, ".shared_expert_gate");
}

// One layer of the output: a linear layer quantised from rows [row0, row0 + out) of expert `expert`
// (-1: the whole 2-D tensor) of a source tensor, or fused fp8 experts.
struct Item {
  std::string source;  // source tensor name
  int64_t expert = -1, row0 = 0, out = 0, in = 0;
  bool fused = false;  // fp8 fused experts: the whole 3-D tensor
  int64_t experts = 0;
  std::vector<TensorDecl> outputs;
};

// Source tensors as f32, the last two kept: per-expert layers split from two fused tensors alternate in
// name order (experts.0.down_proj, experts.0.gate_proj, ...), and a generated source is costly.
class SourceCache {
 public:
  SourceCache(const std::map<std::string, TensorDecl>& decls, const SourceTensorFn& fetch)
      : decls_(decls), fetch_(fetch) {}
  const std::vector<float>& get(const std::string& name) {
    for (auto it = cache_.begin(); it != cache_.end(); ++it)
      if (it->first == name) {
        cache_.splice(cache_.begin(), cache_, it);
        return cache_.front().second;
      }
    const Tensor t = fetch_(decls_.at(name));
    std::vector<float> v(static_cast<size_t>(t.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = load_as_f32(t.raw(), t.dtype(), i);
    cache_.emplace_front(name, std::move(v));
    if (cache_.size() > 2) cache_.pop_back();
    return cache_.front().second;
  }

 private:
  const std::map<std::string, TensorDecl>& decls_;
  const SourceTensorFn& fetch_;
  std::list<std::pair<std::string, std::vector<float>>> cache_;
};

}  // namespace

void untie_word_embeddings(nlohmann::json& config) {
  // The root's flag is the one read when it is there (a multimodal wrapper's too); a text_config's is
  // cleared as well, so that no reader of either finds the pair still tied.
  config["tie_word_embeddings"] = false;
  if (config.contains("text_config") && config["text_config"].is_object() &&
      config["text_config"].contains("tie_word_embeddings"))
    config["text_config"]["tie_word_embeddings"] = false;
}

QuantizedWeights write_quantized_weights(const std::string& out_dir, const std::vector<TensorDecl>& source,
                                         const SourceTensorFn& fetch, const QuantFormatOptions& o,
                                         size_t max_shard_bytes, const std::string& tied_embedding) {
  QuantizedWeights result;
  std::map<std::string, TensorDecl> by_name;
  for (const auto& t : source) by_name[t.name] = t;
  std::vector<Item> items;
  std::vector<TensorDecl> outputs;
  std::map<std::string, std::pair<size_t, size_t>> produced_by;  // output name -> (item, index), quantised outputs only
  auto add_linear = [&](const std::string& module, const std::string& src, int64_t expert, int64_t row0, int64_t out,
                        int64_t in) {
    Item it{src, expert, row0, out, in, false, 0, {}};
    it.outputs = quantized_linear_decls(o, module, out, in);
    for (size_t i = 0; i < it.outputs.size(); ++i) {
      produced_by[it.outputs[i].name] = {items.size(), i};
      outputs.push_back(it.outputs[i]);
    }
    items.push_back(std::move(it));
    ++result.quantized_layers;
  };
  std::map<std::string, std::pair<std::string, std::pair<int64_t, int64_t>>>
      dense_slices;  // per-expert dense layers from fused tensors

  for (const auto& t : source) {
    const std::string& n = t.name;
    const bool fused_gate_up = ends_with(n, ".experts.gate_up_proj"), fused_down = ends_with(n, ".experts.down_proj");
    const bool text_model = !starts_with(n, "mtp.") && !starts_with(n, "model.visual.");
    if ((fused_gate_up || fused_down) && t.shape.ndim == 3 && is_float(t.dtype) && text_model) {
      const int64_t experts = t.shape[0], rows = t.shape[1], cols = t.shape[2];
      if (o.format == QuantFormat::Fp8Block) {
        Item it{n, -1, 0, rows, cols, true, experts, {}};
        it.outputs = quantized_fused_expert_decls(o, n, experts, rows, cols);
        for (size_t i = 0; i < it.outputs.size(); ++i) {
          produced_by[it.outputs[i].name] = {items.size(), i};
          outputs.push_back(it.outputs[i]);
        }
        items.push_back(std::move(it));
        result.quantized_layers += experts * (fused_gate_up ? 2 : 1);
        continue;
      }
      const std::string prefix =
          n.substr(0, n.size() - (fused_gate_up ? std::string("gate_up_proj") : std::string("down_proj")).size());
      for (int64_t e = 0; e < experts; ++e) {
        std::vector<std::pair<std::string, int64_t>> parts;  // module, first row
        if (fused_gate_up)
          parts = {{prefix + std::to_string(e) + ".gate_proj", 0}, {prefix + std::to_string(e) + ".up_proj", rows / 2}};
        else
          parts = {{prefix + std::to_string(e) + ".down_proj", 0}};
        const int64_t out = fused_gate_up ? rows / 2 : rows;
        for (const auto& [module, row0] : parts) {
          if (format_holds(o, out, cols, nullptr)) {
            add_linear(module, n, e, row0, out, cols);
          } else {
            result.dense_modules.push_back(module);
            dense_slices[module + ".weight"] = {n, {e, row0}};
            outputs.push_back({module + ".weight", t.dtype, {out, cols}});
          }
        }
      }
      continue;
    }
    if (!is_linear_weight(t)) {
      outputs.push_back(t);
      continue;
    }
    const std::string module = n.substr(0, n.size() - std::string(".weight").size());
    if (kept_dense(module, o) || !format_holds(o, t.shape[0], t.shape[1], nullptr)) {
      result.dense_modules.push_back(module);
      outputs.push_back(t);
      continue;
    }
    add_linear(module, n, -1, 0, t.shape[0], t.shape[1]);
  }
  // A tied checkpoint has no lm_head tensor: asked to quantise it, the output projection gets its own
  // quantised copy of the embedding matrix (the embedding stays as it is, since it is read a row a token).
  // At one token a step the vocabulary projection is the largest read of a small dense model.
  if (o.lm_head && !tied_embedding.empty() && !by_name.count("lm_head.weight")) {
    auto embed = by_name.find(tied_embedding);
    if (embed == by_name.end())
      throw FormatError("the checkpoint ties its output projection to " + tied_embedding + ", which it does not hold");
    const Shape& s = embed->second.shape;
    if (s.ndim == 2 && format_holds(o, s[0], s[1], nullptr)) {
      add_linear("lm_head", tied_embedding, -1, 0, s[0], s[1]);
      result.untied_lm_head = true;
    } else {
      result.dense_modules.push_back("lm_head");  // stays tied; counted and listed as an untied one would be
    }
  }

  SourceCache cache(by_name, fetch);
  size_t cached_item = SIZE_MAX;
  [[maybe_unused]] int quantised_since_trim = 0;
  std::vector<Tensor> cached;
  result.written =
      write_sharded_safetensors(out_dir, outputs, max_shard_bytes, [&](const TensorDecl& d, SafetensorsWriter& w) {
        auto q = produced_by.find(d.name);
        if (q == produced_by.end()) {
          auto slice = dense_slices.find(d.name);
          if (slice == dense_slices.end()) {  // copied as it is
            const Tensor t = fetch(d);
            w.write(t.raw(), t.nbytes());
            return;
          }
          const TensorDecl& src = by_name.at(slice->second.first);
          const Tensor t = fetch(src);
          const int64_t rows = src.shape[1], cols = src.shape[2];
          const auto [e, row0] = slice->second.second;
          const size_t es = dtype_size(src.dtype);
          w.write(static_cast<const char*>(t.raw()) + static_cast<size_t>((e * rows + row0) * cols) * es, d.nbytes());
          return;
        }
        const auto [item_index, part] = q->second;
        if (item_index != cached_item) {
          const Item& it = items[item_index];
          const std::vector<float>& src = cache.get(it.source);
          if (it.fused) {
            cached = quantize_fused_experts(o, src.data(), it.experts, it.out, it.in);
          } else {
            const int64_t rows_per_expert = it.expert < 0 ? 0 : by_name.at(it.source).shape[1];
            const float* w0 = src.data() + (it.expert < 0 ? 0 : it.expert * rows_per_expert * it.in) + it.row0 * it.in;
            cached = quantize_linear(o, w0, it.out, it.in);
          }
          cached_item = item_index;
#if defined(__GLIBC__)
          // Thousands of layers of a few MB each: glibc keeps the freed blocks in its heap (its mmap threshold
          // rises after the first large free), and a 30B model then grows past the machine's memory. Give
          // them back every so often.
          if (++quantised_since_trim == 64) {
            ::malloc_trim(0);
            quantised_since_trim = 0;
          }
#endif
        }
        w.write(cached[part].raw(), cached[part].nbytes());
      });
  result.quantization_config = quantization_config_json(o, result.dense_modules);
  return result;
}

QuantizeModelResult quantize_model(const QuantizeModelOptions& opts) {
  const auto start = std::chrono::steady_clock::now();
  const fs::path src(opts.model_dir), dst(opts.out_dir);
  std::error_code ec;
  if (fs::equivalent(src, dst, ec))
    throw InvalidArgumentError("--out must differ from --model (" + opts.out_dir +
                               "): the source is read while the copy is written");
  const ModelDirectory model = ModelDirectory::read(opts.model_dir);
  const WeightStore store(model);
  if (store.quant_config().quantized())
    throw InvalidArgumentError(opts.model_dir + " is already quantised (" +
                               quant_method_name(store.quant_config().method) +
                               "); quantize reads a dense f32, bf16 or f16 model");
  if (!model.config.exists()) throw FormatError("no " + std::string(model_file::kConfig) + " in " + opts.model_dir);
  json config;
  try {
    config = json::parse(*model.config.text);
  } catch (const json::exception& e) {
    throw FormatError(model.config.path + " is not valid JSON: " + e.what());
  }

  fs::create_directories(dst, ec);
  if (ec || !fs::is_directory(dst))
    throw InvalidArgumentError("cannot create output directory " + opts.out_dir + ": " + ec.message());
  static const std::regex weight_file(
      R"(model\.safetensors|model\.safetensors\.index\.json|model-\d+-of-\d+\.safetensors)");
  for (const auto& entry : fs::directory_iterator(dst))
    if (std::regex_match(entry.path().filename().string(), weight_file)) fs::remove(entry.path());

  std::vector<TensorDecl> decls;
  for (const auto& name : store.names()) {
    const SafetensorsEntry& e = store.entry(name);
    decls.push_back({name, e.dtype, e.shape, e.file_dims});
  }
  const ModelConfig parsed = parse_model_config(*model.config.text, model.config.path);
  QuantizeModelResult r;
  r.weights = write_quantized_weights(
      opts.out_dir, decls, [&](const TensorDecl& d) { return store.get_bytes(d.name); }, opts.format,
      opts.max_shard_bytes, parsed.tie_word_embeddings ? parsed.weight_prefix + "embed_tokens.weight" : "");
  if (r.weights.untied_lm_head) untie_word_embeddings(config);
  config["quantization_config"] = r.weights.quantization_config;
  {
    std::ofstream out(dst / model_file::kConfig);
    out << config.dump(2) << "\n";
    if (!out.flush()) throw InvalidArgumentError("cannot write " + (dst / model_file::kConfig).string());
  }
  for (const auto& entry : fs::directory_iterator(src)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name == model_file::kConfig || std::regex_match(name, weight_file) ||
        ends_with(name, ".safetensors"))
      continue;
    fs::copy_file(entry.path(), dst / name, fs::copy_options::overwrite_existing);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace opchain
