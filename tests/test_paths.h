#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace opchain::test {

inline std::string data_dir() { return OPCHAIN_TEST_DATA_DIR; }
inline std::string model_dir(const std::string& name) { return data_dir() + "/models/" + name; }
inline std::string source_dir() { return OPCHAIN_SOURCE_DIR; }
inline std::string opchain_binary() { return OPCHAIN_BINARY; }

// A golden model's ids.txt / ids_long.txt: comma-separated token ids.
inline std::vector<int32_t> read_ids(const std::string& path) {
  std::ifstream in(path);
  std::vector<int32_t> ids;
  std::string tok;
  while (std::getline(in, tok, ',')) ids.push_back(static_cast<int32_t>(std::stol(tok)));
  return ids;
}

inline float max_abs_diff(const float* a, const float* b, int64_t n) {
  float m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

}  // namespace opchain::test
