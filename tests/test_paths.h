#pragma once
#include <string>

namespace opchain::test {

inline std::string data_dir() { return OPCHAIN_TEST_DATA_DIR; }
inline std::string model_dir(const std::string& name) { return data_dir() + "/models/" + name; }
inline std::string source_dir() { return OPCHAIN_SOURCE_DIR; }
inline std::string opchain_binary() { return OPCHAIN_BINARY; }

}  // namespace opchain::test
