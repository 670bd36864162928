#include "engine/loaded_model.h"

#include <chrono>

#include "io/model_directory.h"
#include "vendors/builtin_vendors.h"

namespace opchain {

std::optional<PrecisionChoice> parse_precision_choice(std::string_view s) {
  if (s == "auto") return PrecisionChoice::Auto;
  if (s == "f32") return PrecisionChoice::F32;
  if (s == "bf16") return PrecisionChoice::Bf16;
  if (s == "quantized") return PrecisionChoice::Quantized;
  return std::nullopt;
}

MatmulPrecision resolve_precision(PrecisionChoice choice, DType checkpoint_dtype, bool quantized_checkpoint) {
  switch (choice) {
    case PrecisionChoice::F32:
      return MatmulPrecision::F32;
    case PrecisionChoice::Bf16:
      return MatmulPrecision::Bf16;
    case PrecisionChoice::Quantized:
      return MatmulPrecision::Quantized;
    case PrecisionChoice::Auto:
      break;
  }
  if (quantized_checkpoint) return MatmulPrecision::Quantized;
  return checkpoint_dtype == DType::BF16 ? MatmulPrecision::Bf16 : MatmulPrecision::F32;
}

namespace {
ParallelPlacement& placement_of_process() {
  static ParallelPlacement p;
  return p;
}
}  // namespace

void set_process_placement(const ParallelPlacement& p) { placement_of_process() = p; }
const ParallelPlacement& process_placement() { return placement_of_process(); }

LoadedModel load_model(const std::string& dir, const std::string& vendor, const BuildProgress& progress,
                       PrecisionChoice precision) {
  const auto start = std::chrono::steady_clock::now();
  LoadedModel m = load_model(ModelDirectory::read(dir), vendor, progress, precision);
  m.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return m;
}

LoadedModel load_model(const ModelDirectory& dir, const std::string& vendor, const BuildProgress& progress,
                       PrecisionChoice precision) {
  const auto start = std::chrono::steady_clock::now();
  LoadedModel m;
  m.dir = dir.dir;
  m.config = load_model_config(dir);
  m.weights = std::make_unique<WeightStore>(dir);
  m.device.vendor = vendor;
  m.device.registry = &builtin_registry();  // the vendors compiled into this build
  m.device.matmul_precision =
      resolve_precision(precision, m.weights->dominant_dtype(), m.weights->quant_config().quantized());
  m.device.placement = process_placement();
  m.device.parallel.tp_size = m.device.placement.tp_size;
  m.device.parallel.ep_size = m.device.placement.ep_size;
  m.device.ep_rank = m.device.placement.ep_rank;
  m.model = build_model(m.config, *m.weights, m.device, progress);
  m.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return m;
}

}  // namespace opchain
