#include "engine/loaded_model.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "io/model_directory.h"
#include "vendors/builtin_vendors.h"

namespace opchain {

std::optional<PrecisionChoice> parse_precision_choice(std::string_view s) {
  if (s == "auto") return PrecisionChoice::Auto;
  if (s == "f32") return PrecisionChoice::F32;
  if (s == "bf16") return PrecisionChoice::Bf16;
  if (s == "quantized") return PrecisionChoice::Quantized;
  if (s == "int8") return PrecisionChoice::Int8;
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
    case PrecisionChoice::Int8:
      return MatmulPrecision::Int8;
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

size_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  size_t kb = 0;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

WeightResidency choose_weight_residency(size_t bytes, size_t mem_available, int64_t tp_size, int64_t ep_size,
                                        const char* env) {
  auto gb = [](size_t b) {
    std::ostringstream o;
    o.precision(3);
    o << static_cast<double>(b) / 1e9 << " GB";
    return o.str();
  };
  const std::string forced = env ? env : "";
  if (!forced.empty() && forced != "mapped" && forced != "resident")
    throw InvalidArgumentError("OPCHAIN_WEIGHTS must be 'mapped' or 'resident', not '" + forced + "'");
  if (tp_size > 1 || ep_size > 1)
    return {false, "mapped: each rank keeps only its shard (tp " + std::to_string(tp_size) + ", ep " +
                       std::to_string(ep_size) + ")"};
  if (forced == "mapped") return {false, "mapped: OPCHAIN_WEIGHTS=mapped"};
  if (bytes == 0) return {false, "mapped: no tensor the kernels read in place"};
  if (forced == "resident") return {true, "resident: " + gb(bytes) + " copied (OPCHAIN_WEIGHTS=resident)"};
  if (mem_available == 0) return {false, "mapped: available memory unknown"};
  if (bytes > mem_available / 4 * 3)
    return {false, "mapped: " + gb(bytes) + " of copies would exceed 3/4 of the " + gb(mem_available) + " available"};
  return {true, "resident: " + gb(bytes) + " copied"};
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
  const WeightResidency residency =
      choose_weight_residency(m.weights->resident_bytes(), available_memory_bytes(), m.device.parallel.tp_size,
                              m.device.parallel.ep_size, std::getenv("OPCHAIN_WEIGHTS"));
  if (residency.resident) m.weights->make_resident();
  m.weight_placement = residency.why;
  m.model = build_model(m.config, *m.weights, m.device, progress);
  m.load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return m;
}

}  // namespace opchain
