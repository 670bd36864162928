#pragma once
// The MoE communication strategy: a pure function of the step's token counts and the parallel
// sizes, so it can be unit-tested without devices (and logged in traces).
#include <cstdint>

#include "ops/step_metadata.h"

namespace opchain {

struct MoeParallelSizes {
  int64_t ep_size = 1;
  int64_t tp_size = 1;
  int64_t dp_size = 1;
};

// Rules: ep == 1 -> Local (no exchange). With experts spread over ranks, small steps (decode-sized,
// at most `alltoall_max_tokens` per rank) use AllToAll, which moves only the chosen experts' rows;
// larger steps use AllGather (gather every token, compute local experts, reduce-scatter), whose
// volume is independent of routing skew.
MoeCommType select_moe_comm_type(int64_t tokens_per_rank, const MoeParallelSizes& sizes,
                                 int64_t alltoall_max_tokens = 256);

// Rows to add so every rank holds the same number of tokens (collectives need equal shapes).
int64_t moe_pad_size(int64_t tokens_per_rank, int64_t max_tokens_across_ranks, MoeCommType type);

}  // namespace opchain
