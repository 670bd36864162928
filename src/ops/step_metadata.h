#pragma once
// Per-step metadata that kernels read. Built once per step by the backend's update_step_context
// (layer 3) and only read by kernels (layer 5); see Note [Step metadata] in backends/step_context.h.
#include <cstdint>

#include "core/tensor.h"

namespace opchain {

// Attention metadata of one step. All index tensors are i32 host tensors.
struct AttnMetadata {
  bool is_decoding = false;  // every sequence contributes exactly one query token
  bool has_past = false;     // some sequence has cached tokens before this step's
  int64_t batch_size = 0;
  int64_t num_tokens = 0;
  int64_t block_size = 0;
  int64_t max_q_seqlen = 0;
  int64_t max_kv_seqlen = 0;
  Tensor q_start_loc;   // [batch] first row of each sequence in the flattened tokens
  Tensor q_seqlens;     // [batch] new tokens of each sequence in this step
  Tensor kv_seqlens;    // [batch] cached + new tokens of each sequence after this step
  Tensor block_tables;  // [batch, max_blocks] physical KV block of each logical block
  Tensor slot_mapping;  // [num_tokens] cache slot (block * block_size + offset) of each new token; -1 = skip
  // Linear-attention layers (Gated DeltaNet): the state-pool slot of each sequence's conv and recurrent
  // state; -1 = a padding sequence, which reads and writes no state. A sequence starts from zero state
  // when it has no cached tokens (kv_seqlens == q_seqlens), whatever its slot holds.
  Tensor state_slots;  // [batch]
  // [batch] or null (none): the first position of each sequence that a decode step produced (its
  // prompt's length). A step that carries several such positions of one sequence is a preempted
  // sequence recomputing them; a vendor that gives a decode step other bits than a prefill runs those
  // queries as it would in decode steps, so the recompute changes nothing (batch invariance).
  Tensor decoded_from;
};

// How expert-parallel ranks exchange tokens. Chosen by a pure policy (backends/moe_comm_policy.h).
enum class MoeCommType : uint8_t { Local, AllGather, AllToAll };
const char* moe_comm_type_name(MoeCommType t);

struct MoeMetadata {
  MoeCommType comm_type = MoeCommType::Local;
  int64_t ep_size = 1;
  int64_t ep_rank = 0;
  int64_t tp_size = 1;
  int64_t dp_size = 1;
  int64_t num_tokens = 0;       // real tokens of this step
  int64_t pad_size = 0;         // rows added after the real ones (graph buckets, collectives)
  Tensor x_active_mask;         // u8 [num_tokens + pad_size]: 0 rows are padding; no expert computes them
  int64_t router_n_groups = 0;  // grouped top-k: experts split in groups, top groups chosen first
  int64_t router_topk_groups = 0;
};

}  // namespace opchain
