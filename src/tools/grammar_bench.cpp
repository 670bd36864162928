#include "tools/grammar_bench.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "engine/grammar_matcher.h"
#include "engine/json_schema_grammar.h"
#include "engine/sampler.h"
#include "engine/token_vocabulary.h"
#include "io/tokenizer.h"

namespace opchain::tools {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::string read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw InvalidArgumentError("cannot read " + what + " " + path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

}  // namespace

void run_grammar_bench(const GrammarBenchOptions& o, std::ostream& out) {
  const std::string& model_dir = o.model_dir;
  const std::string& schema_file = o.schema_file;
  const int reps = o.reps;
  if (reps <= 0) throw InvalidArgumentError("--reps must be positive, got " + std::to_string(reps));
  const Tokenizer tok = Tokenizer::from_file(model_dir + "/tokenizer.json");
  size_t vocab_size = tok.vocab_size();
  if (std::ifstream cfg(model_dir + "/config.json"); cfg) {
    const auto c = nlohmann::json::parse(cfg, nullptr, false);
    if (c.is_object() && c.contains("vocab_size") && c["vocab_size"].is_number_unsigned())
      vocab_size = c["vocab_size"].get<size_t>();
  }
  const std::string schema_text = read_file(schema_file, "--json-schema");

  auto t = Clock::now();
  const auto vocab = TokenVocabulary::from_tokenizer(tok, vocab_size);
  const double vocab_ms = ms_since(t);
  t = Clock::now();
  const auto grammar = compile_json_schema_text(schema_text);
  const double compile_ms = ms_since(t);

  constexpr int kMaxSteps = 256;
  std::vector<double> first_walk_ms, later_ms, apply_ms;
  int complete = 0;
  std::vector<uint64_t> mask;
  std::vector<float> logits(vocab_size, 0.0f);
  std::vector<float> row(vocab_size);
  for (int rep = 0; rep < reps; ++rep) {
    std::mt19937_64 rng(static_cast<uint64_t>(rep));
    GrammarMatcher m(grammar, vocab, {});
    std::vector<int32_t> allowed;
    for (int step = 0; step < kMaxSteps; ++step) {
      t = Clock::now();
      const bool any = m.fill_next_token_mask(mask);
      (rep == 0 ? first_walk_ms : later_ms).push_back(ms_since(t));
      // What the sampler adds: the mask applied to its copy of the logits row.
      std::copy(logits.begin(), logits.end(), row.begin());
      t = Clock::now();
      apply_token_mask(row, mask);
      apply_ms.push_back(ms_since(t));
      // A complete value ends the walk with probability 1/2, as if eos had been drawn.
      if (m.is_complete() && (!any || (rng() & 1))) {
        ++complete;
        break;
      }
      allowed.clear();
      for (size_t w = 0; w < mask.size(); ++w)
        for (uint64_t bits = mask[w]; bits; bits &= bits - 1)
          allowed.push_back(static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits))));
      if (allowed.empty()) break;
      const int32_t token = allowed[rng() % allowed.size()];
      if (!m.accept_token(token)) throw Error("grammar bench: the matcher rejected a token its mask allowed");
    }
  }
  const auto st = grammar->stats();
  std::vector<double> all = first_walk_ms;
  all.insert(all.end(), later_ms.begin(), later_ms.end());
  const nlohmann::json report = {{"model", model_dir},
                                 {"json_schema", schema_file},
                                 {"vocab_size", vocab_size},
                                 {"trie_nodes", vocab->num_nodes()},
                                 {"vocabulary_build_ms", vocab_ms},
                                 {"compile_ms", compile_ms},
                                 {"walks", reps},
                                 {"walks_complete", complete},
                                 {"tokens", all.size()},
                                 {"mask_ms_per_token",
                                  {{"mean", mean(all)},
                                   {"p50", percentile(all, 0.5)},
                                   {"p99", percentile(all, 0.99)},
                                   {"max", percentile(all, 1.0)}}},
                                 {"first_walk_mask_ms_per_token", mean(first_walk_ms)},
                                 {"later_walks_mask_ms_per_token", mean(later_ms)},
                                 {"apply_mask_in_sampler_ms", mean(apply_ms)},
                                 {"automaton_states", st.states},
                                 {"masks_computed", st.masks_computed}};
  if (o.json) {
    out << report.dump(2) << std::endl;
    return;
  }
  out << std::fixed << std::setprecision(3) << "grammar mask for " << schema_file << " over " << vocab_size
      << " tokens (" << vocab->num_nodes() << " trie nodes)\n"
      << "vocabulary trie built in " << vocab_ms << " ms, schema compiled in " << compile_ms << " ms\n"
      << reps << " random walks (" << complete << " reached a complete value), " << all.size() << " tokens\n"
      << "mask per token: mean " << mean(all) << " ms, p50 " << percentile(all, 0.5) << " ms, p99 "
      << percentile(all, 0.99) << " ms, max " << percentile(all, 1.0) << " ms\n"
      << "  first walk (cold automaton) " << mean(first_walk_ms) << " ms/token, later walks " << mean(later_ms)
      << " ms/token\n"
      << "applying the mask in the sampler: " << mean(apply_ms) << " ms/token\n"
      << st.states << " automaton states, " << st.masks_computed << " masks computed (the rest from the cache)\n";
}

}  // namespace opchain::tools
