#include "io/npy.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "io/input_errors.h"

namespace opchain {

namespace {

// A .npy header is a short Python dict literal; numpy itself writes a few hundred bytes.
constexpr uint32_t kMaxNpyHeaderBytes = 1u << 16;

// The dims of "'shape': (2, 3)" in the header, each checked as it is read.
std::vector<int64_t> parse_shape(const std::string& header, const std::string& path) {
  const size_t key = header.find("'shape':");
  if (key == std::string::npos) throw FormatError(path + ": .npy header has no shape");
  const size_t open = header.find('(', key);
  const size_t close = open == std::string::npos ? open : header.find(')', open);
  if (close == std::string::npos) throw FormatError(path + ": .npy header has a malformed shape");
  std::vector<int64_t> shape;
  const char* p = header.data() + open + 1;
  const char* end = header.data() + close;
  while (p < end) {
    if (*p == ' ' || *p == ',') {
      ++p;
      continue;
    }
    int64_t d = 0;
    const auto [next, ec] = std::from_chars(p, end, d);
    if (ec != std::errc() || d < 0)
      throw FormatError(path + ": .npy shape '" + header.substr(open, close - open + 1) + "' is not a tuple of sizes");
    shape.push_back(d);
    p = next;
  }
  return shape;
}

}  // namespace

NpyArray read_npy_unguarded(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError("cannot open " + path);
  in.seekg(0, std::ios::end);
  const auto file_size = static_cast<uint64_t>(std::max<std::streamoff>(in.tellg(), 0));
  in.seekg(0);
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
  // Every size is checked against the file before anything is allocated from it.
  if (!in || header_len > kMaxNpyHeaderBytes || header_len > file_size)
    throw FormatError(path + ": .npy header length " + std::to_string(header_len) + " is over the limit of " +
                      std::to_string(kMaxNpyHeaderBytes) + " bytes or past the end of the file");
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  if (!in) throw FormatError(path + ": truncated .npy header");
  if (header.find("'<f4'") == std::string::npos) throw FormatError(path + ": only little-endian float32 is supported");
  if (header.find("'fortran_order': True") != std::string::npos)
    throw FormatError(path + ": Fortran order not supported");
  NpyArray a;
  a.shape = parse_shape(header, path);
  const uint64_t data_bytes = file_size - static_cast<uint64_t>(in.tellg());
  uint64_t total = 1;
  for (const int64_t d : a.shape) {
    // Divided, not multiplied, so the product cannot wrap; it must fit the bytes the file holds.
    if (d != 0 && total > data_bytes / 4 / static_cast<uint64_t>(d))
      throw FormatError(path + ": .npy shape needs more data than the file's " + std::to_string(data_bytes) + " bytes");
    total *= static_cast<uint64_t>(d);
  }
  a.data.resize(static_cast<size_t>(total));
  in.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(total * 4));
  if (!in) throw FormatError(path + ": truncated data");
  return a;
}

NpyArray read_npy_f32(const std::string& path) {
  return guard_input(path, [&] { return read_npy_unguarded(path); });
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
