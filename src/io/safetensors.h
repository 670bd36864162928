#pragma once
// Memory-mapped safetensors files, single or sharded (model.safetensors.index.json). Every header
// field and offset is validated before a tensor view is handed out; errors name the file and tensor.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/quant_config.h"

namespace opchain {

struct SafetensorsEntry {
  std::string name;
  DType dtype;
  Shape shape;                     // dims past kMaxDims are folded into the last one (see rank)
  int rank = 0;                    // the file's number of dims; tensor() refuses ranks above kMaxDims
  std::vector<int64_t> file_dims;  // the file's dims, kept only when rank > kMaxDims (to copy such tensors)
  size_t begin = 0;                // byte offsets into the data section
  size_t end = 0;
};

// Note [Resident weights]: a checkpoint's tensors are mapped from its file, and kernels reading them in
// place there read page-cache pages through 4 KiB mappings at the file's alignment, which for files written
// by the safetensors library (header padded to 8) puts tensors off a cache line. On a Sapphire Rapids KVM
// guest the same kernels on copies in anonymous memory ran, on the 4-layer Qwen3-30B-A3B shape, prefill
// 512 5-33% faster and decode 13-22% faster at batch 1 to 32 (Amx, Avx512 and Avx2 tiers; the dense
// Qwen3-4B shape 1-17%); copies on a 64-byte boundary were 2-7% faster at batch 1 than copies at the
// file's alignment (docs/performance/sapphire-rapids.md, seventh session). So when a process holds the
// whole model (make_resident), each large tensor of a dtype the kernels read in place (f32, bf16, f16,
// fp8, int8) is read with pread on first use into one lazily mapped, huge-page-advised arena, 64-byte
// aligned; tensors the loader converts anyway (int4 codes), small ones and sharded loads stay mapped.
class SafetensorsFile {
 public:
  // Throws FormatError naming `path` (and the tensor) on any malformed header or out-of-range offset.
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, SafetensorsEntry>& entries() const { return entries_; }
  // A borrowed view into the mapping, or into the resident copy (Note [Resident weights]); valid while
  // this file lives.
  Tensor tensor(const std::string& name) const;
  // From now on tensor() hands out resident copies of the tensors resident_eligible() picks.
  void make_resident();
  // Whether make_resident() would copy this entry, and the bytes all such entries take.
  static bool resident_eligible(const SafetensorsEntry& e);
  size_t resident_bytes() const;
  bool is_resident(const std::string& name) const;  // tensor() hands out a resident copy of it
  // The same view for a tensor of any rank (dims past kMaxDims folded): its bytes, for copying it.
  Tensor bytes(const std::string& name) const;
  size_t file_size() const { return size_; }

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t size_ = 0;
  const char* data_section_ = nullptr;
  std::map<std::string, SafetensorsEntry> entries_;
  struct Resident;
  std::unique_ptr<Resident> resident_;
};

struct ModelDirectory;

// All tensors of a Hugging Face model directory, across shards.
class WeightStore {
 public:
  // Opens <dir>/model.safetensors, or the shards listed in <dir>/model.safetensors.index.json, and
  // reads config.json's quantization_config when there is one (io/linear_weights.h uses it).
  // (Note [Model directory]; the string form reads the directory first.)
  explicit WeightStore(const ModelDirectory& dir);
  explicit WeightStore(const std::string& model_dir);

  const QuantConfig& quant_config() const { return quant_; }
  const std::string& dir() const { return dir_; }

  bool contains(const std::string& name) const;
  // Checks presence, shape and that the dtype is a float type; errors name file, tensor, expected and found.
  Tensor get(const std::string& name, const Shape& expected_shape) const;
  Tensor get_any_shape(const std::string& name) const;
  // Drops the mapped pages of tensor `name` from this process (they are read back from the file if it is
  // touched again): for tensors the loader has converted into memory of its own, so the checkpoint's
  // bytes are not resident twice. Pages shared with a neighbouring tensor are kept. (A resident copy,
  // Note [Resident weights], stays: only tensors the loader converts are released.)
  void release(const std::string& name) const;
  // Note [Resident weights]: copies each eligible tensor into aligned anonymous memory on first use.
  void make_resident();
  size_t resident_bytes() const;  // what make_resident() would copy, at most
  // Maps a tensor's pages in now (MADV_POPULATE_READ, else a WILLNEED hint): for tables read a few rows
  // at a time, whose rows would otherwise each fault on first use in the middle of a decode step.
  void map_in(const std::string& name) const;
  // Any tensor's entry and bytes, whatever its rank (tools that copy tensors through).
  const SafetensorsEntry& entry(const std::string& name) const;
  Tensor get_bytes(const std::string& name) const;
  // Rows of several tensors stacked into one owning tensor (e.g. gate_proj over up_proj), with
  // shapes checked like get(); all parts must share a dtype. The mapped originals are never touched.
  Tensor get_stacked_rows(const std::vector<std::string>& names, const std::vector<Shape>& shapes) const;
  // Row ranges [begin, end) of dim 0 of one tensor (shape checked like get()), copied in the order
  // given into one owning tensor: the query rows of a gated q_proj, or Qwen3-Next's per-key-head
  // groups put back in flat order. The mapped original is never touched.
  using RowRange = std::pair<int64_t, int64_t>;
  Tensor get_rows(const std::string& name, const Shape& expected_shape, const std::vector<RowRange>& ranges) const;
  std::vector<std::string> names() const;
  int64_t numel(const std::string& name) const;  // of any tensor, whatever its rank
  size_t total_bytes() const;
  DType dominant_dtype() const;
  // The file that holds `name` (for error messages).
  const std::string& file_of(const std::string& name) const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsFile*> where_;
  std::string dir_;
  QuantConfig quant_;
};

}  // namespace opchain
