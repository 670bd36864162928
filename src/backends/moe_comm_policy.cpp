#include "backends/moe_comm_policy.h"

#include "core/error.h"

namespace opchain {

MoeCommType select_moe_comm_type(int64_t tokens_per_rank, const MoeParallelSizes& s, int64_t alltoall_max_tokens) {
  if (s.ep_size < 1 || s.tp_size < 1 || s.dp_size < 1)
    throw InvalidArgumentError("parallel sizes must be positive (ep=" + std::to_string(s.ep_size) +
                               ", tp=" + std::to_string(s.tp_size) + ", dp=" + std::to_string(s.dp_size) + ")");
  if (s.ep_size == 1) return MoeCommType::Local;
  if (tokens_per_rank <= alltoall_max_tokens) return MoeCommType::AllToAll;
  return MoeCommType::AllGather;
}

int64_t moe_pad_size(int64_t tokens_per_rank, int64_t max_tokens_across_ranks, MoeCommType type) {
  if (type == MoeCommType::Local) return 0;
  return max_tokens_across_ranks > tokens_per_rank ? max_tokens_across_ranks - tokens_per_rank : 0;
}

}  // namespace opchain
