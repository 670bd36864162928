#pragma once
// A bump allocator for one step's activations. reset() at the start of a step makes every byte
// reusable; a step that asks for the same sizes in the same order gets the same addresses, which is
// what graph capture relies on (Note [Graph capture]). Memory grows in chunks and is never moved.
//
// Note [Layer arenas]: a decoder layer's activations are dead once the next layer has read its output,
// so a model switches to layer arena l % 2 at the start of layer l (emptying what layer l - 2 left
// there) and back to the step arena for what outlives the layers. Peak memory is then the step's
// long-lived tensors plus two layers' activations, not every layer's. The switches happen in the same
// order on every run of a step, so addresses stay deterministic for graph capture.
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace opchain {

class Workspace {
 public:
  explicit Workspace(size_t initial_bytes = 1 << 20);
  Tensor alloc(DType dtype, Shape shape);  // zero-initialised is NOT guaranteed
  // Empties every arena and makes the step arena current.
  void reset();
  // Makes layer arena `parity` (0 or 1) current and empties it: tensors allocated there before are gone.
  void use_layer_arena(int parity);
  // Makes the step arena (lives until reset()) current.
  void use_step_arena();
  size_t reserved_bytes() const;

 private:
  struct Chunk {
    std::shared_ptr<void> mem;
    size_t size = 0;
    size_t used = 0;
  };
  struct Arena {
    std::vector<Chunk> chunks;
    size_t current = 0;
    void empty();
  };
  Arena arenas_[3];  // step, layer 0, layer 1
  Arena* active_ = &arenas_[0];
  size_t initial_bytes_;
};

}  // namespace opchain
