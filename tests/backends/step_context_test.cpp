// update_step_context fills the attention and MoE metadata kernels read; the MoE comm policy is a
// pure function of token counts and parallel sizes.
#include <gtest/gtest.h>

#include "backends/moe_comm_policy.h"
#include "backends/ops_backend.h"
#include "vendors/builtin_vendors.h"

namespace opchain {
namespace {

Tensor i32(std::vector<int32_t> v, Shape s) {
  Tensor t = Tensor::empty(DType::I32, s);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

TEST(MoeCommPolicy, LocalWhenOneExpertRank) {
  EXPECT_EQ(select_moe_comm_type(1, {1, 1, 1}), MoeCommType::Local);
  EXPECT_EQ(select_moe_comm_type(100000, {1, 4, 2}), MoeCommType::Local);
  EXPECT_EQ(moe_pad_size(3, 7, MoeCommType::Local), 0);
}

TEST(MoeCommPolicy, AllToAllForSmallStepsAllGatherForLarge) {
  EXPECT_EQ(select_moe_comm_type(8, {4, 1, 4}), MoeCommType::AllToAll);
  EXPECT_EQ(select_moe_comm_type(256, {4, 1, 4}), MoeCommType::AllToAll);
  EXPECT_EQ(select_moe_comm_type(257, {4, 1, 4}), MoeCommType::AllGather);
  EXPECT_EQ(select_moe_comm_type(64, {8, 1, 8}, 32), MoeCommType::AllGather);
  EXPECT_EQ(moe_pad_size(3, 7, MoeCommType::AllGather), 4);
  EXPECT_EQ(moe_pad_size(7, 7, MoeCommType::AllToAll), 0);
  EXPECT_THROW(select_moe_comm_type(1, {0, 1, 1}), InvalidArgumentError);
}

TEST(UpdateStepContext, MixedPrefillAndDecodeWithPadding) {
  DeviceContext dev;
  dev.vendor = "reference";
  dev.registry = &builtin_registry();
  const OpsBackend& backend = select_backend(dev);
  StepContext ctx;
  // Sequence 0: 3 new tokens after 5 cached; sequence 1: 1 new token after 0 cached; 2 padding rows.
  ctx.input_ids = i32({1, 2, 3, 4, 0, 0}, {6});
  ctx.positions = i32({5, 6, 7, 0, 0, 0}, {6});
  ctx.q_seqlens = i32({3, 1}, {2});
  ctx.kv_seqlens = i32({8, 1}, {2});
  ctx.block_tables = i32({7, 3, 9, 0}, {2, 2});
  ctx.block_size = 4;
  ctx.num_padding_tokens = 2;
  backend.update_step_context(ctx);
  const AttnMetadata& m = ctx.attn;
  EXPECT_FALSE(m.is_decoding);
  EXPECT_TRUE(m.has_past);
  EXPECT_EQ(m.max_q_seqlen, 3);
  EXPECT_EQ(m.max_kv_seqlen, 8);
  EXPECT_EQ(m.q_start_loc.data<int32_t>()[0], 0);
  EXPECT_EQ(m.q_start_loc.data<int32_t>()[1], 3);
  // positions 5,6,7 of seq 0 -> logical block 1 (physical 3), offsets 1,2,3; seq 1 pos 0 -> block 9.
  const int32_t* slots = m.slot_mapping.data<int32_t>();
  EXPECT_EQ(slots[0], 3 * 4 + 1);
  EXPECT_EQ(slots[1], 3 * 4 + 2);
  EXPECT_EQ(slots[2], 3 * 4 + 3);
  EXPECT_EQ(slots[3], 9 * 4 + 0);
  EXPECT_EQ(slots[4], -1);
  EXPECT_EQ(slots[5], -1);
  EXPECT_EQ(ctx.moe.comm_type, MoeCommType::Local);
  EXPECT_EQ(ctx.moe.num_tokens, 4);
  EXPECT_EQ(ctx.moe.pad_size, 2);
  const uint8_t* mask = ctx.moe.x_active_mask.data<uint8_t>();
  EXPECT_EQ(std::vector<int>(mask, mask + 6), (std::vector<int>{1, 1, 1, 1, 0, 0}));
}

TEST(UpdateStepContext, AllSingleTokenIsDecoding) {
  DeviceContext dev;
  dev.vendor = "cpu";
  dev.registry = &builtin_registry();
  dev.parallel.ep_size = 2;
  StepContext ctx;
  ctx.input_ids = i32({1, 2}, {2});
  ctx.positions = i32({4, 9}, {2});
  ctx.q_seqlens = i32({1, 1}, {2});
  ctx.kv_seqlens = i32({5, 10}, {2});
  ctx.block_tables = i32({1, 2, 3, 4, 5, 6}, {2, 3});
  ctx.block_size = 4;
  select_backend(dev).update_step_context(ctx);
  EXPECT_TRUE(ctx.attn.is_decoding);
  EXPECT_EQ(ctx.attn.slot_mapping.data<int32_t>()[1], 6 * 4 + 1);
  EXPECT_EQ(ctx.moe.comm_type, MoeCommType::AllToAll);  // ep 2, 2 tokens
  EXPECT_EQ(ctx.moe.ep_size, 2);
}

TEST(UpdateStepContext, PositionPastTheBlockTableIsAnError) {
  DeviceContext dev;
  dev.vendor = "reference";
  dev.registry = &builtin_registry();
  StepContext ctx;
  ctx.input_ids = i32({1}, {1});
  ctx.positions = i32({8}, {1});
  ctx.q_seqlens = i32({1}, {1});
  ctx.kv_seqlens = i32({9}, {1});
  ctx.block_tables = i32({1, 2}, {1, 2});
  ctx.block_size = 4;
  EXPECT_THROW(select_backend(dev).update_step_context(ctx), InvalidArgumentError);
}

TEST(SelectBackend, UnknownVendorListsTheKnownOnes) {
  DeviceContext dev;
  dev.vendor = "tpu";
  dev.registry = &builtin_registry();
  try {
    select_backend(dev);
    FAIL();
  } catch (const UnsupportedOpError& e) {
    EXPECT_NE(std::string(e.what()).find("reference"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace opchain
