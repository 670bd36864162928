#pragma once
// `opchain bench --json-schema FILE`: the cost of structured output per generated token, apart from
// the model: the token mask of a JSON-schema grammar over the model's tokenizer vocabulary, timed
// along seeded random walks through the grammar (each step draws uniformly among allowed tokens).
#include <string>

namespace opchain::cli {

// Prints a report (or one JSON object); returns the exit code.
int run_grammar_bench(const std::string& model_dir, const std::string& schema_file, int reps, bool json);

}  // namespace opchain::cli
