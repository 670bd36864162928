#pragma once
// NumPy .npy v1.0 files of float32 (the logits format of `opchain logits` and the golden data).
#include <cstdint>
#include <string>
#include <vector>

namespace opchain {

struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Reads a little-endian float32 ('<f4'), C-order array; FormatError names the file on anything else.
NpyArray read_npy_f32(const std::string& path);
void write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data);

}  // namespace opchain
