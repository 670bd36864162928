#include "core/workspace.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"

namespace opchain {

namespace {
std::shared_ptr<void> allocate_chunk(size_t size) {
  void* p = std::aligned_alloc(64, std::max<size_t>(64, (size + 63) / 64 * 64));
  if (!p) throw Error("out of memory growing the step workspace to " + std::to_string(size) + " bytes");
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}
}  // namespace

Workspace::Workspace(size_t initial_bytes) : initial_bytes_(std::max<size_t>(64, initial_bytes)) {
  arenas_[0].chunks.push_back({allocate_chunk(initial_bytes_), initial_bytes_, 0});
}

Tensor Workspace::alloc(DType dtype, Shape shape) {
  const size_t bytes = (static_cast<size_t>(shape.numel()) * dtype_size(dtype) + 63) / 64 * 64;
  Arena& a = *active_;
  while (a.current < a.chunks.size() && a.chunks[a.current].used + bytes > a.chunks[a.current].size) ++a.current;
  if (a.current == a.chunks.size()) {
    const size_t size = std::max(bytes, a.chunks.empty() ? initial_bytes_ : a.chunks.back().size * 2);
    a.chunks.push_back({allocate_chunk(size), size, 0});
  }
  Chunk& c = a.chunks[a.current];
  void* out = static_cast<char*>(c.mem.get()) + c.used;
  c.used += bytes;
  return Tensor::view(out, dtype, shape);
}

void Workspace::Arena::empty() {
  for (auto& c : chunks) c.used = 0;
  current = 0;
}

void Workspace::reset() {
  for (auto& a : arenas_) a.empty();
  active_ = &arenas_[0];
}

void Workspace::use_layer_arena(int parity) {
  active_ = &arenas_[1 + (parity & 1)];
  active_->empty();
}

void Workspace::use_step_arena() { active_ = &arenas_[0]; }

size_t Workspace::reserved_bytes() const {
  size_t total = 0;
  for (const auto& a : arenas_)
    for (const auto& c : a.chunks) total += c.size;
  return total;
}

}  // namespace opchain
