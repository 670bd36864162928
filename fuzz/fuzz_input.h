#pragma once
// Shared by the libFuzzer harnesses (one per parser of outside input, fuzz/*_fuzzer.cpp).
//
// The contract under test: any input gives a result or an opchain::Error naming what was wrong.
// Errors of ours are caught here; anything else (a std:: or nlohmann exception, a crash, a sanitizer
// report, a hang past -timeout, memory past -rss_limit_mb) escapes and libFuzzer reports it.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/error.h"

namespace opchain::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// tests/data of this checkout (golden tokenizer and template the harnesses load once).
inline std::string test_data(const std::string& relative) {
  return std::string(OPCHAIN_SOURCE_DIR) + "/tests/data/" + relative;
}

// A directory of this process's own, for parsers that read files by path.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("opchain-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

inline std::string write_scratch(const std::string& name, std::string_view bytes) {
  const std::string path = (scratch_dir() / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// Runs fn; opchain errors are the expected outcome of bad input.
template <class Fn>
void expect_ok_or_error(Fn&& fn) {
  try {
    fn();
  } catch (const Error&) {
  }
}

}  // namespace opchain::fuzz
