#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/input_errors.h"
#include "io/json_input.h"
#include "io/model_directory.h"

namespace opchain {

using nlohmann::json;

// No checkpoint tensor comes near 2^44 elements (16 Ti); below it no product of dims or byte count
// (elements x 8 bytes at most) overflows 64 bits.
constexpr uint64_t kMaxTensorElements = uint64_t{1} << 44;

static FormatError bad(const std::string& path, const std::string& what) {
  return FormatError("malformed safetensors file " + path + ": " + what);
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw FormatError("cannot open safetensors file " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw FormatError("cannot stat " + path);
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ < 8) {
    ::close(fd);
    throw bad(path, "file is " + std::to_string(size_) + " bytes, shorter than the 8-byte header length");
  }
  map_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw FormatError("cannot mmap " + path + ": " + std::strerror(errno));
  }
  try {
    const auto* bytes = static_cast<const unsigned char*>(map_);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
    if (header_len > size_ - 8)
      throw bad(path,
                "header length " + std::to_string(header_len) + " exceeds the file size " + std::to_string(size_));
    if (header_len > (100u << 20)) throw bad(path, "header length " + std::to_string(header_len) + " over 100 MB");
    data_section_ = reinterpret_cast<const char*>(bytes) + 8 + header_len;
    const size_t data_size = size_ - 8 - header_len;
    const std::string_view header_text(reinterpret_cast<const char*>(bytes) + 8, header_len);
    check_json_nesting(header_text, "the header of safetensors file " + path);
    json header;
    try {
      header = json::parse(header_text);
    } catch (const json::exception& e) {
      throw bad(path, std::string("header is not valid JSON (") + e.what() + ")");
    }
    if (!header.is_object()) throw bad(path, "header is not a JSON object");
    std::vector<const SafetensorsEntry*> by_offset;
    for (auto& [name, v] : header.items()) {
      if (name == "__metadata__") continue;
      if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
        throw bad(path, "tensor '" + name + "' lacks dtype, shape or data_offsets");
      SafetensorsEntry e;
      e.name = name;
      if (!v["dtype"].is_string() || !parse_dtype(v["dtype"].get<std::string>(), e.dtype))
        throw bad(path, "tensor '" + name + "' has unsupported dtype " + json_excerpt(v["dtype"]));
      const auto& shp = v["shape"];
      if (!shp.is_array() || shp.size() > 16)
        throw bad(path, "tensor '" + name + "' has a bad shape " + json_excerpt(shp));
      e.shape.ndim = 0;
      e.rank = static_cast<int>(shp.size());
      // The bound is on the product of the nonzero dims, tested before each multiplication: a product
      // that wrapped (2^40 x 2^40 x ...) or that a zero dim hid passed the old size check, and the
      // shape then told kernels to read far past the mapping.
      uint64_t extent = 1;
      for (const auto& d : shp) {
        if (!d.is_number_unsigned()) throw bad(path, "tensor '" + name + "' has a bad shape " + json_excerpt(shp));
        const uint64_t dim = d.get<uint64_t>();
        if (dim != 0 && extent > kMaxTensorElements / dim)
          throw bad(path, "tensor '" + name + "' has shape " + json_excerpt(shp) + ", over the limit of " +
                              std::to_string(kMaxTensorElements) + " elements");
        if (dim != 0) extent *= dim;
        // Dims past the fourth fold into the fourth: the entry keeps its size, and tensor() refuses it.
        if (e.shape.ndim < kMaxDims)
          e.shape.dims[static_cast<size_t>(e.shape.ndim++)] = static_cast<int64_t>(dim);
        else
          e.shape.dims[kMaxDims - 1] *= static_cast<int64_t>(dim);
      }
      if (e.rank > kMaxDims)
        for (const auto& d : shp) e.file_dims.push_back(static_cast<int64_t>(d.get<uint64_t>()));
      const auto& off = v["data_offsets"];
      if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
        throw bad(path, "tensor '" + name + "' has bad data_offsets " + json_excerpt(off));
      e.begin = off[0].get<size_t>();
      e.end = off[1].get<size_t>();
      if (e.begin > e.end || e.end > data_size)
        throw bad(path, "tensor '" + name + "' data_offsets [" + std::to_string(e.begin) + ", " +
                            std::to_string(e.end) + ") fall outside the data section of " + std::to_string(data_size) +
                            " bytes");
      const size_t expect = static_cast<size_t>(e.shape.numel()) * dtype_size(e.dtype);
      if (e.end - e.begin != expect)
        throw bad(path, "tensor '" + name + "' occupies " + std::to_string(e.end - e.begin) + " bytes but its shape " +
                            e.shape.str() + " and dtype need " + std::to_string(expect));
      auto [it, inserted] = entries_.emplace(name, e);
      by_offset.push_back(&it->second);
    }
    // Empty tensors occupy no bytes and are left out: compared as a neighbour, one hid an overlap of
    // the tensors on either side of it. Each tensor is checked against the furthest end so far.
    std::erase_if(by_offset, [](const SafetensorsEntry* e) { return e->begin == e->end; });
    std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
    const SafetensorsEntry* furthest = nullptr;
    for (const SafetensorsEntry* e : by_offset) {
      if (furthest && e->begin < furthest->end)
        throw bad(path, "tensors '" + furthest->name + "' and '" + e->name + "' overlap");
      if (!furthest || e->end > furthest->end) furthest = e;
    }
  } catch (...) {
    ::munmap(map_, size_);
    map_ = nullptr;
    guard_input(path, [] { throw; });  // rethrown as an opchain error naming the file
  }
}

// The resident copies: slots in one arena, each 64-byte aligned; a slot is filled on first use.
struct SafetensorsFile::Resident {
  ~Resident() {
    if (fd >= 0) ::close(fd);
  }
  int fd = -1;   // the file, read with pread: no page faults on the mapping, nothing of it left resident
  Tensor arena;  // U8 [bytes], owning
  struct Slot {
    size_t offset = 0;
    bool filled = false;
  };
  std::map<std::string, Slot> slots;
  std::mutex mu;
};

namespace {
constexpr size_t kResidentMinBytes = size_t{64} << 10;  // smaller tensors (norms, biases) stay mapped
constexpr size_t kResidentAlign = 64;                   // a cache line: no vector or AMX tile row splits

size_t resident_slot_bytes(const SafetensorsEntry& e) {
  return (e.end - e.begin + kResidentAlign - 1) / kResidentAlign * kResidentAlign;
}

// Drops this process's mapped pages lying wholly inside [p, p + n) (a neighbour's shared page stays).
void drop_mapped_pages(const void* p, size_t n) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (end > begin)
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advisory: failure changes nothing
}
}  // namespace

SafetensorsFile::~SafetensorsFile() {
  if (map_) ::munmap(map_, size_);
}

bool SafetensorsFile::resident_eligible(const SafetensorsEntry& e) {
  const bool read_in_place = e.dtype == DType::F32 || e.dtype == DType::BF16 || e.dtype == DType::F16 ||
                             e.dtype == DType::F8E4M3 || e.dtype == DType::I8;
  return read_in_place && e.rank <= kMaxDims && e.end - e.begin >= kResidentMinBytes;
}

size_t SafetensorsFile::resident_bytes() const {
  size_t n = 0;
  for (const auto& [name, e] : entries_)
    if (resident_eligible(e)) n += resident_slot_bytes(e);
  return n;
}

bool SafetensorsFile::is_resident(const std::string& name) const {
  return resident_ && resident_->slots.count(name) > 0;
}

void SafetensorsFile::make_resident() {
  if (resident_) return;
  auto r = std::make_unique<Resident>();
  size_t total = 0;
  for (const auto& [name, e] : entries_)
    if (resident_eligible(e)) {
      r->slots[name].offset = total;
      total += resident_slot_bytes(e);
    }
  if (total == 0) return;
  r->fd = ::open(path_.c_str(), O_RDONLY);
  if (r->fd < 0) throw FormatError("cannot open safetensors file " + path_ + ": " + std::strerror(errno));
  // Tensor::empty maps large buffers lazily on a 2 MiB boundary with MADV_HUGEPAGE: slots never used
  // (a checkpoint's vision tower, say) cost no memory.
  r->arena = Tensor::empty(DType::U8, Shape{static_cast<int64_t>(total)});
  resident_ = std::move(r);
}

Tensor SafetensorsFile::tensor(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw FormatError("tensor '" + name + "' not found in " + path_);
  if (it->second.rank > kMaxDims)
    throw FormatError("tensor '" + name + "' in " + path_ + " has " + std::to_string(it->second.rank) +
                      " dimensions; opchain reads tensors of at most " + std::to_string(kMaxDims) +
                      " (a vision tower's conv weight is not needed for text)");
  const SafetensorsEntry& e = it->second;
  if (resident_) {
    auto slot = resident_->slots.find(name);
    if (slot != resident_->slots.end()) {
      char* dst = static_cast<char*>(resident_->arena.raw()) + slot->second.offset;
      std::lock_guard<std::mutex> lock(resident_->mu);
      if (!slot->second.filled) {
        const size_t file_offset = static_cast<size_t>(data_section_ - static_cast<const char*>(map_)) + e.begin;
        for (size_t done = 0; done < e.end - e.begin;) {
          const ssize_t got =
              ::pread(resident_->fd, dst + done, e.end - e.begin - done, static_cast<off_t>(file_offset + done));
          if (got < 0 && errno == EINTR) continue;
          if (got <= 0)
            throw FormatError("cannot read tensor '" + name + "' from " + path_ + ": " +
                              (got < 0 ? std::strerror(errno) : "the file ended early"));
          done += static_cast<size_t>(got);
        }
        slot->second.filled = true;
      }
      return Tensor::view(dst, e.dtype, e.shape);
    }
  }
  return Tensor::view(data_section_ + e.begin, e.dtype, e.shape);
}

Tensor SafetensorsFile::bytes(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw FormatError("tensor '" + name + "' not found in " + path_);
  return Tensor::view(data_section_ + it->second.begin, it->second.dtype, it->second.shape);
}

WeightStore::WeightStore(const std::string& model_dir) : WeightStore(ModelDirectory::read(model_dir)) {}

WeightStore::WeightStore(const ModelDirectory& md) : dir_(md.dir) {
  const std::string& model_dir = md.dir;
  if (md.weights_index.exists()) {
    const std::string& index = md.weights_index.path;
    const json j = parse_json_input(*md.weights_index.text, index);
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw FormatError("malformed " + index + ": no 'weight_map' object");
    std::map<std::string, const SafetensorsFile*> opened;
    for (auto& [tensor, file] : j["weight_map"].items()) {
      if (!file.is_string())
        throw FormatError("malformed " + index + ": weight_map['" + tensor + "'] is not a file name");
      const std::string fname = file.get<std::string>();
      if (fname.find("..") != std::string::npos || fname.find('/') != std::string::npos)
        throw FormatError("malformed " + index + ": shard name '" + fname + "' leaves the model directory");
      if (!opened.count(fname)) {
        files_.push_back(std::make_unique<SafetensorsFile>(md.path_of(fname)));
        opened[fname] = files_.back().get();
      }
      const SafetensorsFile* f = opened[fname];
      if (!f->entries().count(tensor))
        throw FormatError("tensor '" + tensor + "' listed in " + index + " is missing from " + f->path());
      where_[tensor] = f;
    }
  } else if (md.has_single_weights) {
    files_.push_back(std::make_unique<SafetensorsFile>(md.weights_path));
    for (const auto& [name, e] : files_.back()->entries()) where_[name] = files_.back().get();
  } else {
    throw FormatError("no " + std::string(model_file::kWeights) + " or " + std::string(model_file::kWeightsIndex) +
                      " in " + model_dir);
  }
  if (md.config.exists()) quant_ = parse_quant_config(*md.config.text, md.config.path);
}

bool WeightStore::contains(const std::string& name) const { return where_.count(name) != 0; }

const std::string& WeightStore::file_of(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) return dir_;
  return it->second->path();
}

Tensor WeightStore::get_any_shape(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) throw FormatError("missing tensor '" + name + "' in model " + dir_);
  return it->second->tensor(name);
}

void WeightStore::release(const std::string& name) const {
  const Tensor t = get_bytes(name);
  drop_mapped_pages(t.raw(), t.nbytes());
}

void WeightStore::map_in(const std::string& name) const {
  auto it = where_.find(name);
  if (it != where_.end() && it->second->is_resident(name)) {
    (void)it->second->tensor(name);  // the copy, made now if it was not: every page touched
    return;
  }
  const Tensor t = get_bytes(name);
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(t.raw()) / page * page;
  const uintptr_t end = reinterpret_cast<uintptr_t>(t.raw()) + t.nbytes();
#ifdef MADV_POPULATE_READ
  if (::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) == 0) return;
#endif
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_WILLNEED);  // advisory: failure changes nothing
}

const SafetensorsEntry& WeightStore::entry(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) throw FormatError("missing tensor '" + name + "' in model " + dir_);
  return it->second->entries().at(name);
}

Tensor WeightStore::get_bytes(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) throw FormatError("missing tensor '" + name + "' in model " + dir_);
  return it->second->bytes(name);
}

void WeightStore::make_resident() {
  for (auto& f : files_) f->make_resident();
}

size_t WeightStore::resident_bytes() const {
  size_t n = 0;
  for (const auto& f : files_) n += f->resident_bytes();
  return n;
}

Tensor WeightStore::get(const std::string& name, const Shape& expected) const {
  Tensor t = get_any_shape(name);
  if (t.dtype() != DType::F32 && t.dtype() != DType::BF16 && t.dtype() != DType::F16)
    throw FormatError("tensor '" + name + "' in " + file_of(name) + " has dtype " + std::string(dtype_name(t.dtype())) +
                      ", expected f32, f16 or bf16");
  if (!(t.shape() == expected))
    throw FormatError("tensor '" + name + "' in " + file_of(name) + " has shape " + t.shape().str() + ", expected " +
                      expected.str());
  return t;
}

Tensor WeightStore::get_stacked_rows(const std::vector<std::string>& names, const std::vector<Shape>& shapes) const {
  std::vector<Tensor> parts;
  int64_t rows = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    parts.push_back(get(names[i], shapes[i]));
    if (parts.back().dtype() != parts.front().dtype())
      throw FormatError("tensor '" + names[i] + "' in " + file_of(names[i]) + " has dtype " +
                        std::string(dtype_name(parts.back().dtype())) + " but '" + names[0] + "' has " +
                        std::string(dtype_name(parts.front().dtype())));
    rows += parts.back().size(0);
  }
  Shape s = parts.front().shape();
  s.dims[0] = rows;
  Tensor out = Tensor::empty(parts.front().dtype(), s);
  char* dst = out.data<char>();
  for (const auto& p : parts) {
    std::memcpy(dst, p.raw(), p.nbytes());
    dst += p.nbytes();
  }
  return out;
}

Tensor WeightStore::get_rows(const std::string& name, const Shape& expected,
                             const std::vector<RowRange>& ranges) const {
  const Tensor t = get(name, expected);
  const size_t row_bytes = t.nbytes() / static_cast<size_t>(std::max<int64_t>(t.size(0), 1));
  int64_t rows = 0;
  for (const auto& [b, e] : ranges) {
    if (b < 0 || e < b || e > t.size(0))
      throw FormatError("tensor '" + name + "' in " + file_of(name) + ": row range [" + std::to_string(b) + ", " +
                        std::to_string(e) + ") is outside its " + std::to_string(t.size(0)) + " rows");
    rows += e - b;
  }
  Shape s = t.shape();
  s.dims[0] = rows;
  Tensor out = Tensor::empty(t.dtype(), s);
  char* dst = out.data<char>();
  for (const auto& [b, e] : ranges) {
    std::memcpy(dst, t.data<char>() + static_cast<size_t>(b) * row_bytes, static_cast<size_t>(e - b) * row_bytes);
    dst += static_cast<size_t>(e - b) * row_bytes;
  }
  return out;
}

int64_t WeightStore::numel(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) throw FormatError("missing tensor '" + name + "' in model " + dir_);
  return it->second->entries().at(name).shape.numel();
}

std::vector<std::string> WeightStore::names() const {
  std::vector<std::string> out;
  for (const auto& [n, f] : where_) out.push_back(n);
  return out;
}

size_t WeightStore::total_bytes() const {
  size_t total = 0;
  for (const auto& [n, f] : where_) {
    const auto& e = f->entries().at(n);
    total += e.end - e.begin;
  }
  return total;
}

DType WeightStore::dominant_dtype() const {
  std::map<DType, size_t> bytes;
  for (const auto& [n, f] : where_) {
    const auto& e = f->entries().at(n);
    bytes[e.dtype] += e.end - e.begin;
  }
  DType best = DType::F32;
  size_t most = 0;
  for (auto [t, b] : bytes)
    if (b > most) {
      most = b;
      best = t;
    }
  return best;
}

}  // namespace opchain
