#include "io/npy.h"

#include <cstring>
#include <fstream>
#include <regex>

#include "core/error.h"

namespace opchain {

NpyArray read_npy_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError("cannot open " + path);
  char magic[8];
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) throw FormatError(path + " is not a .npy file");
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    in.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    in.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  }
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (!in) throw FormatError(path + ": truncated .npy header");
  if (header.find("'<f4'") == std::string::npos) throw FormatError(path + ": only little-endian float32 is supported");
  if (header.find("'fortran_order': True") != std::string::npos) throw FormatError(path + ": Fortran order not supported");
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'shape':\\s*\\(([^)]*)\\)"))) throw FormatError(path + ": no shape");
  NpyArray a;
  std::string dims = m[1];
  size_t pos = 0;
  int64_t total = 1;
  while (pos < dims.size()) {
    while (pos < dims.size() && (dims[pos] == ' ' || dims[pos] == ',')) ++pos;
    if (pos >= dims.size()) break;
    size_t used = 0;
    const int64_t d = std::stoll(dims.substr(pos), &used);
    a.shape.push_back(d);
    total *= d;
    pos += used;
  }
  a.data.resize(static_cast<size_t>(total));
  in.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(total * 4));
  if (!in) throw FormatError(path + ": truncated data");
  return a;
}

void write_npy_f32(const std::string& path, const std::vector<int64_t>& shape, const float* data) {
  std::string dims;
  int64_t total = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    dims += std::to_string(shape[i]);
    dims += (shape.size() == 1 || i + 1 < shape.size()) ? "," : "";
    if (i + 1 < shape.size()) dims += " ";
    total *= shape[i];
  }
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // v1.0: magic(6)+version(2)+len(2)+header, padded with spaces to a multiple of 64, ending in '\n'.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InvalidArgumentError("cannot write " + path);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char lb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  out.write(lb, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(total * 4));
  if (!out) throw InvalidArgumentError("failed writing " + path);
}

}  // namespace opchain
