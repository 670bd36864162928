#pragma once
// Layer 3: graph mode. A vendor's GraphRunner turns one run of a step into a CapturedGraph that
// replays the same kernel launches on the same buffers. Host vendors use HostGraphRunner (a list of
// bound calls); a CUDA vendor implements the same interface with CUDA graphs (stream capture ->
// cudaGraphInstantiate; replay = cudaGraphLaunch). OpsBackend::make_graph_runner() picks it.
//
// Note [Graph capture]
// A decode step at a bucketed batch size (engine/decode_graph_runner.h) is captured once and then
// replayed: replay runs the recorded launches with the arguments bound at capture and nothing else
// (no module dispatch, no lookups, no allocation). So everything a launch reads must be, at replay,
// either (a) a constant of the bucket or (b) memory the launch points at, refreshed before replay:
//  1. Tensors are bound by address and shape. Inputs (ids, positions, q/kv seqlens, block tables
//     with a fixed width, logits rows) are the bucket's own buffers, which fill_buffers overwrites
//     in place (make_buffers sizes them for the bucket once). Activations come from one Workspace
//     that every bucket shares: a bump allocator hands out the same addresses to the same
//     allocation sequence, and buckets never run at the same time.
//  2. Host-side values a kernel reads (AttnMetadata: is_decoding, has_past, batch/token counts,
//     max_q/kv_seqlen, q_start_loc, slot_mapping, state_slots; MoeMetadata: real tokens, pad size, comm type,
//     x_active_mask) live in the bucket's StepContext, whose address the launches hold. Before each
//     replay update_step_context refreshes them *in place*; it must not reallocate their storage
//     (the runner checks). A value copied into a kernel's arguments at capture is frozen: it must
//     not change between replays.
//  3. Decisions that layers 1-3 take on the host during capture are frozen too. Each must either
//     depend only on the bucket's shape (attention picks the decode kernel: every replay is a decode
//     step; the delta rule picks its recurrent form, likewise (Note [Delta rule forms]); lm_head skips
//     its row gather: a bucket asks for logits of every row; the MoE impl checks the comm type,
//     Local whenever ep_size is 1) or refuse capture:
//     StepContext::capturing is set while recording, and host code that reads per-step values
//     (dynamic NTK rope, the row gather) throws GraphCaptureError then. CausalLM::
//     graph_capture_blocker() lets a model refuse up front, so it runs eager instead.
//  4. Padding rows (bucket size - batch) are harmless by construction: token 0 at position 0,
//     q_len 1, kv_len 1 reading the reserved block 0 (never written: their slot is -1, which
//     fill_kv_cache skips), state slot -1 (the linear-attention kernels read and write no state for
//     it), and x_active_mask 0 so no expert computes them. Their logits are dropped.
//  5. Kernels declare KernelFlags::capture_safe in their registry entry (they read sizes only from
//     tensors and metadata, and allocate nothing per call once warm). Capturing a launch of a kernel
//     that is not is a GraphCaptureError naming the kernel, its op and its registration site.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace opchain {

// A step cannot be captured (a kernel that is not capture-safe, a host-side decision per step).
class GraphCaptureError : public Error {
 public:
  using Error::Error;
};

class CapturedGraph {
 public:
  virtual ~CapturedGraph() = default;
  // Required: runs the recorded launches in order on the buffers bound at capture, nothing else.
  // An active LaunchObserver sees each launch, as it would in an eager step.
  virtual void replay() const = 0;
  // Required: the vendor kernel of each recorded launch, in order (errors, tests, `opchain align`).
  virtual std::vector<std::string> kernels() const = 0;
};

class GraphRunner {
 public:
  virtual ~GraphRunner() = default;
  // Required: human-readable name, e.g. "HostGraphRunner".
  virtual std::string name() const = 0;
  // Required: runs `step` once, recording every top-level kernel launch it makes. Throws
  // GraphCaptureError naming the first launch whose kernel is not capture-safe; an exception from
  // `step` propagates and nothing is captured.
  virtual std::unique_ptr<CapturedGraph> capture(const std::function<void()>& step) = 0;
};

}  // namespace opchain
