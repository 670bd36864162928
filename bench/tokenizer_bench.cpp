// Tokenizer throughput on one core (Google Benchmark).
//
// Build standalone from the repository root, for example:
//   g++ -std=c++20 -O2 -Isrc bench/tokenizer_bench.cpp src/io/tokenizer*.cpp -o /tmp/tok_bench
//       -lbenchmark -lpthread -licuuc -licui18n -licudata
//   OPCHAIN_TEST_DATA_DIR=tests/data /tmp/tok_bench
// Texts: the 184 golden strings (code, prose, CJK, emoji, whitespace runs, special tokens) joined
// and repeated to about 4 MB, once with and once without the few 500-3000 character runs of one
// character, which take the slower heap merge path and dominate otherwise. Set
// OPCHAIN_TOKENIZER_BENCH_TEXT to a file to measure your own corpus too. Repeating a text keeps
// the word cache warm after the first iteration.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "io/tokenizer.h"

namespace {

std::string data_dir() {
  if (const char* d = std::getenv("OPCHAIN_TEST_DATA_DIR")) return d;
#ifdef OPCHAIN_TEST_DATA_DIR
  return OPCHAIN_TEST_DATA_DIR;
#else
  return "tests/data";
#endif
}

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const opchain::Tokenizer& qwen3() {
  static const opchain::Tokenizer t = opchain::Tokenizer::from_file(data_dir() + "/tokenizer/qwen3/tokenizer.json");
  return t;
}

std::string repeat_to_4mb(const std::string& once) {
  std::string out;
  while (out.size() < (4u << 20)) out += once;
  return out;
}

// max_case_chars bounds each golden string's length (0: no bound).
std::string golden_text(size_t max_case_chars) {
  const auto cases = nlohmann::json::parse(read(data_dir() + "/tokenizer/tok_cases.json"));
  std::string once;
  for (const auto& c : cases) {
    const std::string s = c.get<std::string>();
    if (max_case_chars == 0 || s.size() <= max_case_chars) once += s + "\n";
  }
  return repeat_to_4mb(once);
}

const std::string& mixed_text() {
  static const std::string text = golden_text(0);
  return text;
}

const std::string& mixed_text_no_long_runs() {
  static const std::string text = golden_text(400);
  return text;
}

void encode_bench(benchmark::State& state, const std::string& text) {
  if (text.empty()) {
    state.SkipWithError("no text");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(qwen3().encode(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

void BM_Load(benchmark::State& state) {
  for (auto _ : state) {
    auto t = opchain::Tokenizer::from_file(data_dir() + "/tokenizer/qwen3/tokenizer.json");
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_Load)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_EncodeMixed(benchmark::State& state) { encode_bench(state, mixed_text()); }
BENCHMARK(BM_EncodeMixed)->Unit(benchmark::kMillisecond);

void BM_EncodeMixedNoLongRuns(benchmark::State& state) { encode_bench(state, mixed_text_no_long_runs()); }
BENCHMARK(BM_EncodeMixedNoLongRuns)->Unit(benchmark::kMillisecond);

void BM_EncodeUserFile(benchmark::State& state) {
  static const std::string text = [] {
    const char* path = std::getenv("OPCHAIN_TOKENIZER_BENCH_TEXT");
    return path ? read(path) : std::string();
  }();
  encode_bench(state, text);
}
BENCHMARK(BM_EncodeUserFile)->Unit(benchmark::kMillisecond);

void BM_Decode(benchmark::State& state) {
  const std::vector<int32_t> ids = qwen3().encode(mixed_text());
  for (auto _ : state) benchmark::DoNotOptimize(qwen3().decode(ids));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * mixed_text().size()));
}
BENCHMARK(BM_Decode)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
