#pragma once
// Note [Step metadata]
// A StepContext is built once per forward step by the engine (what to run: token ids, positions,
// each sequence's lengths and block table), then the backend's update_step_context fills the
// metadata kernels read (AttnMetadata, MoeMetadata). Kernels only read it; nn modules pass pointers
// into it to their impls. Everything in it lives until the step ends.
#include <vector>

#include "core/tensor.h"
#include "core/workspace.h"
#include "ops/step_metadata.h"

namespace opchain {

struct StepContext {
  // Filled by the engine.
  Tensor input_ids;     // i32 [num_tokens]
  Tensor positions;     // i32 [num_tokens]
  Tensor q_seqlens;     // i32 [batch]
  Tensor kv_seqlens;    // i32 [batch]: cached + new
  Tensor block_tables;  // i32 [batch, max_blocks]
  int64_t block_size = 0;
  Tensor logits_rows;              // i32 [r]: rows of the hidden states that need logits, strictly increasing
  Tensor state_slots;              // i32 [batch]: each sequence's state slot (linear-attention layers); -1 = padding
  Tensor decoded_from;             // i32 [batch] or null: AttnMetadata::decoded_from
  Workspace* workspace = nullptr;  // activations of this step
  int64_t num_padding_tokens = 0;  // trailing rows that are padding (graph buckets)
  // A graph is recording this step: host code in the forward must not decide anything from this
  // step's values, since replays will not re-run it (Note [Graph capture] in backends/graph_runner.h).
  bool capturing = false;

  // Filled by update_step_context.
  AttnMetadata attn;
  MoeMetadata moe;
  // Owned storage the metadata tensors point into.
  Tensor q_start_loc_storage, slot_mapping_storage, x_active_mask_storage;

  int64_t num_tokens() const { return input_ids.numel(); }
  int64_t batch_size() const { return q_seqlens.numel(); }
};

}  // namespace opchain
