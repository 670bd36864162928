// Note [Layer arenas]: what each arena keeps across switches, and that a step's addresses repeat.
#include "core/workspace.h"

#include <gtest/gtest.h>

namespace opchain {
namespace {

TEST(Workspace, LayerArenasAlternateAndTheStepArenaLives) {
  Workspace ws(1 << 12);
  auto run_step = [&](std::vector<const void*>& addrs) {
    ws.reset();
    Tensor residual = ws.alloc(DType::F32, {4, 64});  // step arena
    residual.data<float>()[0] = 7.0f;
    Tensor pending;
    for (int l = 0; l < 4; ++l) {
      ws.use_layer_arena(l % 2);
      Tensor x = ws.alloc(DType::F32, {4, 64});
      if (!pending.is_null()) {
        EXPECT_EQ(pending.data<float>()[0], static_cast<float>(l - 1))
            << "layer " << l - 1 << "'s output was reused early";
        EXPECT_NE(x.raw(), pending.raw());
      }
      Tensor big = ws.alloc(DType::F32, {64, 64});  // grows the arena past its first chunk
      pending = ws.alloc(DType::F32, {4, 64});
      pending.data<float>()[0] = static_cast<float>(l);
      addrs.insert(addrs.end(), {x.raw(), big.raw(), pending.raw()});
    }
    ws.use_step_arena();
    Tensor logits = ws.alloc(DType::F32, {4, 8});
    addrs.push_back(logits.raw());
    EXPECT_EQ(residual.data<float>()[0], 7.0f) << "a layer arena overwrote the step arena";
  };
  std::vector<const void*> first, second;
  run_step(first);
  run_step(second);
  EXPECT_EQ(first, second) << "a repeated step must get the same addresses (graph capture)";
  // Layer 2 reuses layer 0's memory, layer 3 layer 1's.
  EXPECT_EQ(first[0], first[6]);
  EXPECT_EQ(first[3], first[9]);
  EXPECT_NE(first[0], first[3]);
}

}  // namespace
}  // namespace opchain
