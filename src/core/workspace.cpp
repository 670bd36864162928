#include "core/workspace.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"

namespace opchain {

Workspace::Workspace(size_t initial_bytes) {
  void* p = std::aligned_alloc(64, std::max<size_t>(64, (initial_bytes + 63) / 64 * 64));
  if (!p) throw Error("out of memory reserving a workspace");
  chunks_.push_back({std::shared_ptr<void>(p, [](void* q) { std::free(q); }), initial_bytes, 0});
}

Tensor Workspace::alloc(DType dtype, Shape shape) {
  const size_t bytes = (static_cast<size_t>(shape.numel()) * dtype_size(dtype) + 63) / 64 * 64;
  while (current_ < chunks_.size() && chunks_[current_].used + bytes > chunks_[current_].size) ++current_;
  if (current_ == chunks_.size()) {
    const size_t size = std::max(bytes, chunks_.back().size * 2);
    void* p = std::aligned_alloc(64, size);
    if (!p) throw Error("out of memory growing the step workspace to " + std::to_string(size) + " bytes");
    chunks_.push_back({std::shared_ptr<void>(p, [](void* q) { std::free(q); }), size, 0});
  }
  Chunk& c = chunks_[current_];
  void* out = static_cast<char*>(c.mem.get()) + c.used;
  c.used += bytes;
  return Tensor::view(out, dtype, shape);
}

void Workspace::reset() {
  for (auto& c : chunks_) c.used = 0;
  current_ = 0;
}

size_t Workspace::reserved_bytes() const {
  size_t total = 0;
  for (const auto& c : chunks_) total += c.size;
  return total;
}

}  // namespace opchain
