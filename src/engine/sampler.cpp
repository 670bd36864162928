#include "engine/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace opchain {
namespace {

// Top-p histogram bins: a weight in (0, 1] keyed by its float bits >> 21 (exponent and two
// mantissa bits: quarter-octave bins), which orders like the weight itself; 1.0f is key 508.
constexpr size_t kMassBins = 509;
size_t mass_bin(float w) { return std::bit_cast<uint32_t>(w) >> 21; }

// vLLM treats temperatures this small as greedy: dividing by them only amplifies float noise.
constexpr float kGreedyTemperature = 1e-5f;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

[[noreturn]] void bad_param(const char* field, const std::string& rule, double got) {
  throw InvalidArgumentError(std::string("SamplingParams.") + field + " must be " + rule + ", got " + num(got));
}

// Orders candidates by weight descending, then id ascending: a strict total order, so the kept set
// and the draw do not depend on how nth_element/sort break ties.
struct ByWeightDesc {
  template <class C>
  bool operator()(const C& a, const C& b) const {
    return a.w > b.w || (a.w == b.w && a.id < b.id);
  }
};

}  // namespace

void SamplingParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0f) bad_param("temperature", "finite and >= 0", temperature);
  if (!(top_p > 0.0f && top_p <= 1.0f)) bad_param("top_p", "in (0, 1]", top_p);
  if (!(min_p >= 0.0f && min_p <= 1.0f)) bad_param("min_p", "in [0, 1]", min_p);
  if (!std::isfinite(repetition_penalty) || repetition_penalty <= 0.0f)
    bad_param("repetition_penalty", "finite and > 0", repetition_penalty);
  // The OpenAI API range; vLLM enforces the same.
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f))
    bad_param("presence_penalty", "in [-2, 2]", presence_penalty);
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f))
    bad_param("frequency_penalty", "in [-2, 2]", frequency_penalty);
}

bool SamplingParams::greedy() const { return temperature < kGreedyTemperature; }

SamplingParams SamplingParams::from_generation_config(const nlohmann::json& gen_cfg) {
  if (!gen_cfg.is_object())
    throw FormatError(std::string("generation_config: expected a JSON object, got ") + gen_cfg.type_name());

  auto field = [&](const char* key) -> const nlohmann::json* {
    auto it = gen_cfg.find(key);
    return it == gen_cfg.end() || it->is_null() ? nullptr : &*it;
  };
  auto number = [&](const char* key) -> std::optional<double> {
    const nlohmann::json* v = field(key);
    if (!v) return std::nullopt;
    if (!v->is_number())
      throw FormatError(std::string("generation_config: \"") + key + "\" must be a number, got " + v->type_name());
    // Sampling parameters are floats: a larger value has no float and converting it is undefined.
    if (!(std::abs(v->get<double>()) <= std::numeric_limits<float>::max()))
      throw FormatError(std::string("generation_config: \"") + key + "\" is out of range, got " +
                        num(v->get<double>()));
    return v->get<double>();
  };

  SamplingParams p;
  if (auto v = number("temperature")) p.temperature = static_cast<float>(*v);
  if (auto v = number("top_p")) p.top_p = static_cast<float>(*v);
  if (auto v = number("min_p")) p.min_p = static_cast<float>(*v);
  if (auto v = number("repetition_penalty")) p.repetition_penalty = static_cast<float>(*v);
  if (auto v = number("top_k")) {
    if (*v != std::floor(*v) || std::abs(*v) > std::numeric_limits<int>::max())
      throw FormatError("generation_config: \"top_k\" must be an integer, got " + num(*v));
    p.top_k = static_cast<int>(*v);
  }
  if (const nlohmann::json* v = field("do_sample")) {
    if (!v->is_boolean())
      throw FormatError(std::string("generation_config: \"do_sample\" must be a boolean, got ") + v->type_name());
    if (!v->get<bool>()) p.temperature = 0.0f;
  }
  try {
    p.validate();
  } catch (const InvalidArgumentError& e) {
    throw FormatError(std::string("generation_config: ") + e.what());
  }
  return p;
}

Sampler::Sampler(SamplingParams p) : params_(p) {
  params_.validate();
  if (params_.seed) {
    rng_.seed(*params_.seed);
  } else {
    std::random_device rd;
    rng_.seed((static_cast<uint64_t>(rd()) << 32) ^ rd());
  }
}

double Sampler::next_uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

void Sampler::apply_penalties(std::span<const int32_t> prompt_ids, std::span<const int32_t> output_ids) {
  const bool rep = params_.repetition_penalty != 1.0f;
  const bool counted = params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f;
  if (!rep && !counted) return;

  // Check every id before touching state, so a throw cannot leave counts_ dirty.
  const size_t n = scratch_.size();
  auto check = [n](std::span<const int32_t> ids, const char* which) {
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= n)
        throw InvalidArgumentError("Sampler: " + std::string(which) + " token id " + std::to_string(ids[i]) +
                                   " at position " + std::to_string(i) + " is outside the vocabulary of " +
                                   std::to_string(n) + " logits");
  };
  if (rep) check(prompt_ids, "prompt");
  check(output_ids, "output");

  if (rep) {
    const float p = params_.repetition_penalty;
    if (seen_epoch_.size() < n) seen_epoch_.resize(n, 0);
    if (++epoch_ == 0) {  // wrapped: stale marks could alias the new epoch
      std::fill(seen_epoch_.begin(), seen_epoch_.end(), 0u);
      epoch_ = 1;
    }
    for (std::span<const int32_t> ids : {prompt_ids, output_ids}) {
      for (int32_t raw : ids) {
        const auto id = static_cast<size_t>(raw);  // checked above
        if (seen_epoch_[id] == epoch_) continue;   // HF penalises each distinct id once
        seen_epoch_[id] = epoch_;
        float& l = scratch_[id];
        l = l > 0.0f ? l / p : l * p;
      }
    }
  }
  if (counted) {
    if (counts_.size() < n) counts_.resize(n, 0);
    for (int32_t raw : output_ids) ++counts_[static_cast<size_t>(raw)];
    for (int32_t raw : output_ids) {
      const auto id = static_cast<size_t>(raw);
      const int32_t c = counts_[id];
      if (c == 0) continue;  // already applied for an earlier occurrence
      scratch_[id] -= params_.frequency_penalty * static_cast<float>(c) + params_.presence_penalty;
      counts_[id] = 0;
    }
  }
}

// Keeps every id whose logit is >= the k-th largest, ties included, as HF and vLLM do. A min-heap
// of the k best seen so far costs one comparison for most of the vocabulary, far less than an
// nth_element over 150k candidates.
void Sampler::select_top_k() {
  const size_t k = static_cast<size_t>(params_.top_k);
  heap_.clear();
  for (float v : scratch_) {
    if (heap_.size() < k) {
      heap_.push_back(v);
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
    } else if (v > heap_.front()) {
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      heap_.back() = v;
      std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
    }
  }
  const float threshold = heap_.front();
  cands_.clear();
  for (size_t i = 0; i < scratch_.size(); ++i) {
    const float v = scratch_[i];
    if (v >= threshold && v != -std::numeric_limits<float>::infinity())
      cands_.push_back(Candidate{static_cast<int32_t>(i), v});
  }
}

// Weights for every id in place. Temperature folds into the exponent: (l - max) <= 0, so it cannot
// overflow for a tiny T, and -inf logits become weight 0. When top-p follows, the same pass builds a
// histogram of the mass by the weight's top float bits, which are monotonic in the weight.
void Sampler::dense_weights(float max_logit, float inv_t) {
  const bool histogram = params_.top_p < 1.0f;
  if (histogram) mass_.assign(kMassBins, 0.0);
  double lanes[4] = {0.0, 0.0, 0.0, 0.0};  // independent sums: one serial chain would bound the loop
  const size_t n = scratch_.size();
  for (size_t i = 0; i < n; ++i) {
    const float w = std::exp((scratch_[i] - max_logit) * inv_t);
    scratch_[i] = w;
    lanes[i & 3] += w;
    if (histogram) mass_[mass_bin(w)] += w;
  }
  total_ = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  dense_ = true;
}

// Top-p over the dense weights: the histogram says which weight bin the nucleus ends in, so only the
// ids at or above that bin (the nucleus plus part of one bin) are gathered and sorted.
void Sampler::gather_top_p() {
  const double target = static_cast<double>(params_.top_p) * total_;
  size_t cut = kMassBins;
  double cum = 0.0;
  while (cut > 0 && cum < target) cum += mass_[--cut];
  cands_.clear();
  for (size_t i = 0; i < scratch_.size(); ++i) {
    const float w = scratch_[i];
    if (w > 0.0f && mass_bin(w) >= cut) cands_.push_back(Candidate{static_cast<int32_t>(i), w});
  }
  dense_ = false;
  apply_top_p(total_);
}

// HF semantics: in descending order of probability keep a token while the mass strictly before it
// is < top_p, so the token that crosses top_p is kept. total is the mass of the whole distribution,
// which may exceed that of cands_. Only the head is sorted, in chunks of growing size selected with
// nth_element, which for a peaked distribution is usually the first chunk.
void Sampler::apply_top_p(double total) {
  const double target = static_cast<double>(params_.top_p) * total;
  const size_t n = cands_.size();
  auto first = cands_.begin();
  auto last = cands_.end();
  double cum = 0.0;
  size_t done = 0;
  size_t chunk = 64;
  while (done < n) {
    const size_t end = std::min(n, done + chunk);
    auto lo = first + static_cast<std::ptrdiff_t>(done);
    auto hi = first + static_cast<std::ptrdiff_t>(end);
    if (hi != last) std::nth_element(lo, hi, last, ByWeightDesc{});
    std::sort(lo, hi, ByWeightDesc{});
    for (size_t i = done; i < end; ++i) {
      if (cum >= target) {  // never at i == 0: target > 0 because the max weight is 1
        cands_.resize(i);
        return;
      }
      cum += cands_[i].w;
    }
    done = end;
    chunk *= 2;
  }
  // Rounding left cum just short of target: everything gathered is kept.
}

// HF semantics: drop tokens whose probability is < min_p * (max probability). Weights are already
// relative to the max (which every earlier filter keeps), so the test is w >= min_p, and the
// renormalisation after top-k/top-p cannot change it.
void Sampler::apply_min_p() {
  const float threshold = params_.min_p;
  if (dense_) {
    cands_.clear();
    for (size_t i = 0; i < scratch_.size(); ++i)
      if (scratch_[i] >= threshold) cands_.push_back(Candidate{static_cast<int32_t>(i), scratch_[i]});
    dense_ = false;
    return;
  }
  auto end = std::partition(cands_.begin(), cands_.end(), [threshold](const Candidate& c) { return c.w >= threshold; });
  cands_.erase(end, cands_.end());
}

void apply_token_mask(std::span<float> logits, std::span<const uint64_t> allowed) {
  // Word by word: a grammar's mask is mostly all-clear or all-set words, which need no per-bit test.
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const size_t n = logits.size();
  for (size_t base = 0; base < n; base += 64) {
    const size_t end = std::min(n, base + 64);
    const uint64_t bits = base / 64 < allowed.size() ? allowed[base / 64] : 0;
    if (bits == ~uint64_t{0}) continue;
    if (bits == 0) {
      std::fill(logits.begin() + static_cast<std::ptrdiff_t>(base), logits.begin() + static_cast<std::ptrdiff_t>(end),
                kNegInf);
      continue;
    }
    for (size_t i = base; i < end; ++i)
      if (!((bits >> (i - base)) & 1u)) logits[i] = kNegInf;
  }
}

int32_t Sampler::prepare(std::span<const float> logits, std::span<const int32_t> prompt_ids,
                         std::span<const int32_t> output_ids, std::span<const uint64_t> allowed) {
  if (logits.empty()) throw InvalidArgumentError("Sampler: empty logits row");
  const size_t n = logits.size();
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw InvalidArgumentError("Sampler: logits row of " + std::to_string(n) + " entries exceeds int32 ids");
  scratch_.assign(logits.begin(), logits.end());  // reuses capacity
  apply_penalties(prompt_ids, output_ids);
  if (!allowed.empty()) apply_token_mask(scratch_, allowed);

  // One pass for the argmax (strict > keeps the lowest id on ties) and the sanity checks.
  float max_logit = -std::numeric_limits<float>::infinity();
  int32_t argmax = -1;
  for (size_t i = 0; i < n; ++i) {
    const float v = scratch_[i];
    if (std::isnan(v) || v == std::numeric_limits<float>::infinity())
      throw InvalidArgumentError("Sampler: logit for id " + std::to_string(i) + " is " + num(v) +
                                 " (after penalties); the model produced non-finite output");
    if (v > max_logit) {
      max_logit = v;
      argmax = static_cast<int32_t>(i);
    }
  }
  if (argmax < 0) throw InvalidArgumentError("Sampler: every logit is -inf; nothing can be sampled");
  if (params_.greedy()) return argmax;

  const float inv_t = 1.0f / params_.temperature;
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    select_top_k();  // on logits: temperature > 0 does not change their order
    dense_ = false;
    total_ = 0.0;
    for (Candidate& c : cands_) total_ += c.w = std::exp((c.w - max_logit) * inv_t);
    if (params_.top_p < 1.0f) apply_top_p(total_);
  } else {
    dense_weights(max_logit, inv_t);
    if (params_.top_p < 1.0f) gather_top_p();
  }
  if (params_.min_p > 0.0f) apply_min_p();
  if (!dense_) {
    total_ = 0.0;
    for (const Candidate& c : cands_) total_ += c.w;
  }
  return -1;
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> prompt_ids,
                        std::span<const int32_t> output_ids, std::span<const uint64_t> allowed) {
  const int32_t greedy = prepare(logits, prompt_ids, output_ids, allowed);
  if (greedy >= 0) return greedy;
  const double u = next_uniform() * total_;
  // Returns the first entry whose cumulative weight exceeds u; a zero weight never can.
  double cum = 0.0;
  int32_t last_positive = -1;
  if (dense_) {
    for (size_t i = 0; i < scratch_.size(); ++i) {
      if (scratch_[i] <= 0.0f) continue;
      cum += scratch_[i];
      last_positive = static_cast<int32_t>(i);
      if (u < cum) return last_positive;
    }
  } else {
    for (const Candidate& c : cands_) {
      if (c.w <= 0.0f) continue;
      cum += c.w;
      last_positive = c.id;
      if (u < cum) return last_positive;
    }
  }
  return last_positive;  // u landed on rounding slack at the top; the max (weight 1) is always kept
}

std::vector<float> Sampler::probabilities(std::span<const float> logits, std::span<const int32_t> prompt_ids,
                                          std::span<const int32_t> output_ids, std::span<const uint64_t> allowed) {
  const int32_t greedy = prepare(logits, prompt_ids, output_ids, allowed);
  std::vector<float> probs(logits.size(), 0.0f);
  if (greedy >= 0) {
    probs[static_cast<size_t>(greedy)] = 1.0f;
  } else if (dense_) {
    for (size_t i = 0; i < probs.size(); ++i) probs[i] = static_cast<float>(scratch_[i] / total_);
  } else {
    for (const Candidate& c : cands_) probs[static_cast<size_t>(c.id)] = static_cast<float>(c.w / total_);
  }
  return probs;
}

}  // namespace opchain
