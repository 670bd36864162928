#pragma once
// Streaming safetensors output, single file or Hugging Face shards with model.safetensors.index.json.
// Every tensor is declared before any data is written, so the header goes out first and tensor bytes
// can then be streamed in order without the model ever being held in memory.
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace opchain {

struct TensorDecl {
  TensorDecl() = default;
  TensorDecl(std::string n, DType t, Shape s, std::vector<int64_t> dims = {})
      : name(std::move(n)), dtype(t), shape(s), file_dims(std::move(dims)) {}
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  std::vector<int64_t> file_dims;  // the header's dims when there are more than kMaxDims (shape folds them)
  size_t nbytes() const { return static_cast<size_t>(shape.numel()) * dtype_size(dtype); }
};

class SafetensorsWriter {
 public:
  // Writes the header at once. Tensors are laid out in name order (the order the header lists them, so a
  // reader's offsets increase with the names); write() must then supply their bytes in that order.
  // Throws InvalidArgumentError for duplicate or empty names and FormatError when `path` cannot be written.
  SafetensorsWriter(std::string path, std::vector<TensorDecl> tensors,
                    const std::map<std::string, std::string>& metadata = {});
  // A writer destroyed before finish() (an exception unwound past it) removes its partial file, so a
  // half-written model never looks complete.
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  const std::string& path() const { return path_; }
  // The tensors in the order their bytes must be written.
  const std::vector<TensorDecl>& tensors() const { return tensors_; }
  // The tensor the next write() belongs to; null once every byte was written.
  const TensorDecl* current() const { return next_ < tensors_.size() ? &tensors_[next_] : nullptr; }

  // Appends bytes of the current tensor; one tensor may take many calls, and a call may not run past
  // the current tensor's end (so a mix-up of order or size is caught at the tensor it happens in).
  void write(const void* data, size_t nbytes);
  // Checks that every declared byte arrived, flushes and closes; throws naming the file otherwise.
  void finish();

  // Bytes of the whole file for these tensors (header included), without writing anything.
  static size_t file_size(const std::vector<TensorDecl>& tensors,
                          const std::map<std::string, std::string>& metadata = {});

 private:
  struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::string path_;
  std::vector<TensorDecl> tensors_;
  std::unique_ptr<std::FILE, FileCloser> file_;
  size_t next_ = 0;     // index of the tensor being written
  size_t written_ = 0;  // bytes of that tensor written so far
  bool finished_ = false;
};

// Fills the bytes of one tensor through writer.write(); called once per tensor, in the writer's order.
using TensorFiller = std::function<void(const TensorDecl&, SafetensorsWriter&)>;

struct ShardedWriteResult {
  std::vector<std::string> files;  // file names inside the directory, in shard order
  size_t total_bytes = 0;          // tensor bytes over all shards (the index's metadata.total_size)
};

// Writes `tensors` into `dir` as transformers' save_pretrained does: one model.safetensors when they fit
// in max_shard_bytes (0 = no limit), else model-0000X-of-0000N.safetensors plus
// model.safetensors.index.json. Tensors go to shards greedily in name order; a tensor larger than the
// limit gets a shard of its own. The directory must exist.
ShardedWriteResult write_sharded_safetensors(const std::string& dir, std::vector<TensorDecl> tensors,
                                             size_t max_shard_bytes, const TensorFiller& fill);

}  // namespace opchain
