#pragma once
// A bump allocator for one step's activations. reset() at the start of a step makes every byte
// reusable; a step that asks for the same sizes in the same order gets the same addresses, which is
// what graph capture relies on (Note [Graph capture]). Memory grows in chunks and is never moved.
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace opchain {

class Workspace {
 public:
  explicit Workspace(size_t initial_bytes = 1 << 20);
  Tensor alloc(DType dtype, Shape shape);  // zero-initialised is NOT guaranteed
  void reset();
  size_t reserved_bytes() const;

 private:
  struct Chunk {
    std::shared_ptr<void> mem;
    size_t size = 0;
    size_t used = 0;
  };
  std::vector<Chunk> chunks_;
  size_t current_ = 0;
};

}  // namespace opchain
