#pragma once
// `opchain bench --json-schema FILE`: the cost of structured output per generated token, apart from
// the model: the token mask of a JSON-schema grammar over the model's tokenizer vocabulary, timed
// along seeded random walks through the grammar (each step draws uniformly among allowed tokens).
#include <ostream>
#include <string>

namespace opchain::tools {

struct GrammarBenchOptions {
  std::string model_dir;    // Hugging Face model directory: its tokenizer.json (and config.json's vocab_size)
  std::string schema_file;  // the JSON Schema
  int reps = 3;             // random walks
  bool json = false;        // one JSON object instead of the report
};

// Writes the report (or the JSON object) to `out`. Bad options throw InvalidArgumentError.
void run_grammar_bench(const GrammarBenchOptions& o, std::ostream& out);

}  // namespace opchain::tools
