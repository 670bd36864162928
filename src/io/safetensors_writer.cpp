#include "io/safetensors_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "io/model_directory.h"

namespace opchain {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string safetensors_dtype(DType t) {
  switch (t) {
    case DType::F32:
      return "F32";
    case DType::F16:
      return "F16";
    case DType::BF16:
      return "BF16";
    case DType::I32:
      return "I32";
    case DType::I64:
      return "I64";
    case DType::U8:
      return "U8";
    case DType::I8:
      return "I8";
    case DType::F8E4M3:
      return "F8_E4M3";
  }
  throw InvalidArgumentError("dtype " + std::string(dtype_name(t)) + " has no safetensors name");
}

std::vector<TensorDecl> sorted_checked(std::vector<TensorDecl> tensors) {
  std::sort(tensors.begin(), tensors.end(), [](const TensorDecl& a, const TensorDecl& b) { return a.name < b.name; });
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name.empty()) throw InvalidArgumentError("a safetensors tensor needs a name");
    if (tensors[i].name == "__metadata__")
      throw InvalidArgumentError("'__metadata__' is reserved and cannot name a tensor");
    if (i > 0 && tensors[i].name == tensors[i - 1].name)
      throw InvalidArgumentError("tensor '" + tensors[i].name + "' is declared twice");
  }
  return tensors;
}

// The header bytes, space-padded so the data section starts on a 64-byte boundary (the spec allows
// trailing spaces): a reader can view f32 tensors in place, and a tensor whose offset is a multiple of 64
// starts on a cache line when mapped (Note [Resident weights] in io/safetensors.h).
std::string header_text(const std::vector<TensorDecl>& sorted, const std::map<std::string, std::string>& metadata) {
  json h = json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  size_t offset = 0;
  for (const auto& t : sorted) {
    json shape = json::array();
    if (!t.file_dims.empty())
      for (int64_t d : t.file_dims) shape.push_back(d);
    else
      for (int d = 0; d < t.shape.ndim; ++d) shape.push_back(t.shape.dims[static_cast<size_t>(d)]);
    h[t.name] = {
        {"dtype", safetensors_dtype(t.dtype)}, {"shape", shape}, {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string text = h.dump();
  text.append((64 - (8 + text.size()) % 64) % 64, ' ');
  return text;
}

}  // namespace

size_t SafetensorsWriter::file_size(const std::vector<TensorDecl>& tensors,
                                    const std::map<std::string, std::string>& metadata) {
  const auto sorted = sorted_checked(tensors);
  size_t total = 8 + header_text(sorted, metadata).size();
  for (const auto& t : sorted) total += t.nbytes();
  return total;
}

SafetensorsWriter::SafetensorsWriter(std::string path, std::vector<TensorDecl> tensors,
                                     const std::map<std::string, std::string>& metadata)
    : path_(std::move(path)), tensors_(sorted_checked(std::move(tensors))) {
  const std::string header = header_text(tensors_, metadata);
  file_.reset(std::fopen(path_.c_str(), "wb"));
  if (!file_) throw FormatError("cannot write " + path_ + ": " + std::strerror(errno));
  // A large stdio buffer turns many small tensor chunks into few big writes.
  std::setvbuf(file_.get(), nullptr, _IOFBF, 4 << 20);
  unsigned char len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<unsigned char>((static_cast<uint64_t>(header.size()) >> (8 * i)) & 0xff);
  if (std::fwrite(len, 1, 8, file_.get()) != 8 ||
      std::fwrite(header.data(), 1, header.size(), file_.get()) != header.size())
    throw FormatError("cannot write " + path_ + ": " + std::strerror(errno));
  // Zero-byte tensors are complete as soon as they are declared.
  while (next_ < tensors_.size() && tensors_[next_].nbytes() == 0) ++next_;
}

SafetensorsWriter::~SafetensorsWriter() {
  if (finished_) return;
  file_.reset();
  std::error_code ec;
  fs::remove(path_, ec);  // best effort: we are already unwinding from the real error
}

void SafetensorsWriter::write(const void* data, size_t nbytes) {
  if (finished_) throw InvalidArgumentError("write to " + path_ + " after finish()");
  const auto* p = static_cast<const char*>(data);
  while (nbytes > 0) {
    if (next_ >= tensors_.size())
      throw InvalidArgumentError("write of " + std::to_string(nbytes) + " bytes past the last declared tensor of " +
                                 path_);
    const TensorDecl& t = tensors_[next_];
    const size_t room = t.nbytes() - written_;
    if (nbytes > room)
      throw InvalidArgumentError("write of " + std::to_string(nbytes) + " bytes overruns tensor '" + t.name + "' in " +
                                 path_ + " (" + std::to_string(room) + " of its " + std::to_string(t.nbytes()) +
                                 " bytes left)");
    if (std::fwrite(p, 1, nbytes, file_.get()) != nbytes)
      throw FormatError("cannot write tensor '" + t.name + "' to " + path_ + ": " + std::strerror(errno));
    written_ += nbytes;
    p += nbytes;
    nbytes = 0;
    if (written_ == t.nbytes()) {
      written_ = 0;
      ++next_;
      while (next_ < tensors_.size() && tensors_[next_].nbytes() == 0) ++next_;
    }
  }
}

void SafetensorsWriter::finish() {
  if (finished_) return;
  if (next_ < tensors_.size())
    throw InvalidArgumentError("safetensors file " + path_ + " is incomplete: tensor '" + tensors_[next_].name +
                               "' has " + std::to_string(written_) + " of " + std::to_string(tensors_[next_].nbytes()) +
                               " bytes");
  std::FILE* f = file_.release();
  const bool flushed = std::fflush(f) == 0;
  const int err = errno;
  if (std::fclose(f) != 0 || !flushed)
    throw FormatError("cannot finish writing " + path_ + ": " + std::strerror(flushed ? errno : err));
  finished_ = true;
}

ShardedWriteResult write_sharded_safetensors(const std::string& dir, std::vector<TensorDecl> tensors,
                                             size_t max_shard_bytes, const TensorFiller& fill) {
  tensors = sorted_checked(std::move(tensors));
  std::vector<std::vector<TensorDecl>> shards(1);
  size_t shard_bytes = 0;
  for (auto& t : tensors) {
    // transformers' rule: a tensor that would push the shard past the limit opens a new shard.
    if (max_shard_bytes > 0 && !shards.back().empty() && shard_bytes + t.nbytes() > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shard_bytes += t.nbytes();
    shards.back().push_back(std::move(t));
  }
  ShardedWriteResult result;
  const size_t n = shards.size();
  json weight_map = json::object();
  for (size_t s = 0; s < n; ++s) {
    char name[64];
    if (n == 1)
      std::snprintf(name, sizeof name, "%s", std::string(model_file::kWeights).c_str());
    else
      std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, n);
    SafetensorsWriter w((fs::path(dir) / name).string(), shards[s], {{"format", "pt"}});
    for (const TensorDecl& decl : w.tensors()) {
      if (decl.nbytes() > 0) {
        fill(decl, w);
        // Too many bytes are caught by write() at the next tensor; too few show here.
        if (w.current() == &decl)
          throw InvalidArgumentError("the filler for tensor '" + decl.name + "' wrote too few bytes to " + w.path());
      }
      result.total_bytes += decl.nbytes();
      weight_map[decl.name] = name;
    }
    w.finish();
    result.files.emplace_back(name);
  }
  if (n > 1) {
    const auto index_path = fs::path(dir) / model_file::kWeightsIndex;
    std::ofstream out(index_path);
    const json index = {{"metadata", {{"total_size", result.total_bytes}}}, {"weight_map", weight_map}};
    out << index.dump(2) << "\n";
    if (!out.flush()) throw FormatError("cannot write " + index_path.string());
  }
  return result;
}

}  // namespace opchain
