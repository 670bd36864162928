#pragma once
// Token sampling for one request: penalties, temperature, top-k, top-p, min-p, then a draw from the
// softmax. The pipeline order and each filter's edge cases follow HF transformers (and vLLM, which
// matches it), so that a seeded run here is comparable with a reference run there.
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace opchain {

struct SamplingParams {
  float temperature = 1.0f;  // 0 (or below 1e-5, as vLLM) => greedy
  int top_k = 0;             // 0 or <0 => disabled
  float top_p = 1.0f;        // 1 => disabled
  float min_p = 0.0f;        // 0 => disabled
  // HF semantics: logit>0 ? logit/p : logit*p, over ids seen in the prompt AND the output.
  float repetition_penalty = 1.0f;
  // OpenAI semantics over output ids only (as vLLM): logit -= presence*[count>0] + frequency*count.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  std::optional<uint64_t> seed;  // same seed (and same logits) => same tokens

  // Throws InvalidArgumentError naming the field for a value that cannot run.
  void validate() const;
  bool greedy() const;

  // Defaults from a model's generation_config.json object. Fields absent (or null) there keep this
  // struct's defaults, as vLLM does, rather than HF's GenerationConfig defaults (top_k=50), because
  // the file states what the model's authors chose and nothing else. "do_sample": false => greedy
  // (repetition_penalty still applies, as in HF). Throws FormatError for wrong types/bad values.
  static SamplingParams from_generation_config(const nlohmann::json& gen_cfg);
};

// Sets the logit of every id whose bit (id % 64 of word id / 64) is clear in `allowed` to -inf; ids
// past the mask count as clear. What Sampler::sample does with its `allowed` argument.
void apply_token_mask(std::span<float> logits, std::span<const uint64_t> allowed);

class Sampler {
 public:
  // Validates p (InvalidArgumentError). The RNG is std::mt19937_64 seeded from p.seed, or from
  // std::random_device when there is none.
  explicit Sampler(SamplingParams p);

  const SamplingParams& params() const { return params_; }

  // logits: one row over the vocabulary. prompt_ids/output_ids feed the penalties (ids are checked
  // against the row's size only where a penalty needs them). Scratch buffers keep their capacity, so
  // once they have grown to the vocabulary's needs a call does not allocate. Throws
  // InvalidArgumentError for an empty row, a NaN or +inf logit, a row with every logit -inf, or a
  // penalised id outside the vocabulary.
  // allowed (optional, e.g. a grammar's token mask): bit (id % 64) of word id / 64 set = the id may
  // be drawn; every other id's logit becomes -inf before any filter, so only this row changes.
  // Empty = every id allowed.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> prompt_ids,
                 std::span<const int32_t> output_ids, std::span<const uint64_t> allowed = {});

  // The distribution sample() would draw from (after every penalty and filter), one probability
  // per vocabulary id; one-hot on the argmax when greedy. For tests and debugging: it allocates and
  // does not advance the RNG.
  std::vector<float> probabilities(std::span<const float> logits, std::span<const int32_t> prompt_ids,
                                   std::span<const int32_t> output_ids, std::span<const uint64_t> allowed = {});

 private:
  struct Candidate {
    int32_t id;
    float w;  // logit until weights are computed, then exp((logit - max) / T), i.e. prob / max prob
  };

  // Runs penalties and filters; returns the greedy id, or -1 with the kept distribution either
  // dense (weights in scratch_, for every id) or sparse (cands_).
  int32_t prepare(std::span<const float> logits, std::span<const int32_t> prompt_ids,
                  std::span<const int32_t> output_ids, std::span<const uint64_t> allowed);
  void apply_penalties(std::span<const int32_t> prompt_ids, std::span<const int32_t> output_ids);
  void select_top_k();
  void dense_weights(float max_logit, float inv_t);
  void gather_top_p();
  void apply_top_p(double total);
  void apply_min_p();
  double next_uniform();  // [0, 1), bit-identical across standard libraries (unlike std distributions)

  SamplingParams params_;
  std::mt19937_64 rng_;
  // Scratch reused across calls so that a decode step does not allocate once capacities settle.
  std::vector<float> scratch_;    // penalised logits, then (dense mode) weights
  std::vector<Candidate> cands_;  // sparse mode: the kept candidates
  std::vector<float> heap_;       // top-k selection
  bool dense_ = false;
  double total_ = 0.0;                // sum of the kept weights
  std::vector<double> mass_;          // top-p histogram of dense weights by float exponent
  std::vector<uint32_t> seen_epoch_;  // dedups ids for the repetition penalty without clearing
  uint32_t epoch_ = 0;
  std::vector<int32_t> counts_;  // all zero between calls
};

}  // namespace opchain
