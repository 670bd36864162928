#pragma once
// A Hugging Face model directory opened for inference: config, memory-mapped weights, the built model.
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "backends/ops_backend.h"
#include "io/hf_config.h"
#include "io/safetensors.h"
#include "models/causal_lm.h"

namespace opchain {

struct LoadedModel {
  std::string dir;
  ModelConfig config;
  std::unique_ptr<WeightStore> weights;
  DeviceContext device;
  std::unique_ptr<CausalLM> model;
  double load_seconds = 0;
  // Note [Resident weights] (io/safetensors.h): whether the kernels read copies in anonymous memory
  // (resident) or the file's mapping, and why.
  std::string weight_placement;
};

// Note [Resident weights]: whether a process copies `bytes` of weights into memory of its own. Not a
// shard of a tensor- or expert-parallel model (every rank would copy the whole checkpoint to keep its
// part); not when the copies would take more than 3/4 of `mem_available` (unknown: 0), so a model that
// only fits mapped still runs. `env` (OPCHAIN_WEIGHTS, null when unset) "mapped" or "resident" overrides
// the memory test; anything else is an InvalidArgumentError. The string says which and why.
struct WeightResidency {
  bool resident = false;
  std::string why;
};
WeightResidency choose_weight_residency(size_t bytes, size_t mem_available, int64_t tp_size, int64_t ep_size,
                                        const char* env);
size_t available_memory_bytes();  // /proc/meminfo's MemAvailable; 0 where unknown

// The matmul precision a model is built with (Note [Matmul precision]). Auto: Quantized for a quantised
// checkpoint (its format's own numerics, as vLLM runs it), Bf16 when the weights are mostly bf16 (run in
// their own dtype, as transformers and vLLM's dtype=auto do), else F32. The library default is F32: the
// reference numerics, which dequantise quantised weights exactly.
enum class PrecisionChoice : uint8_t { Auto, F32, Bf16, Quantized, Int8 };
// "auto" | "f32" | "bf16" | "quantized"; nullopt for anything else.
std::optional<PrecisionChoice> parse_precision_choice(std::string_view s);
MatmulPrecision resolve_precision(PrecisionChoice choice, DType checkpoint_dtype, bool quantized_checkpoint = false);

// Where this process sits among the ranks of one model (Note [Driver and workers] in
// engine/model_worker.h). It belongs to the process, as its MPI world does: the CLI sets it once after
// opening the world, and every load_model after that builds this rank's shard. A process alone keeps
// the default (no communicators, sizes 1).
void set_process_placement(const ParallelPlacement& p);
const ParallelPlacement& process_placement();

// Throws FormatError / UnsupportedOpError with the file, tensor or op named. The first form takes the
// directory already read (Note [Model directory]); the second reads it first.
LoadedModel load_model(const ModelDirectory& dir, const std::string& vendor, const BuildProgress& progress = {},
                       PrecisionChoice precision = PrecisionChoice::F32);
LoadedModel load_model(const std::string& dir, const std::string& vendor, const BuildProgress& progress = {},
                       PrecisionChoice precision = PrecisionChoice::F32);

}  // namespace opchain
