#include "tools/logits.h"

#include "engine/model_runner.h"
#include "io/npy.h"

namespace opchain::tools {

void run_logits(const LogitsOptions& o, std::ostream& log) {
  LoadedModel m = load_model(o.model, o.vendor, {}, o.precision);
  const int64_t n = static_cast<int64_t>(o.ids.size());
  KvCache cache(m.model->cache_config(), 1 + (n + 15) / 16, 16, 1, kv_cache_dtype(m.device.matmul_precision));
  std::vector<int32_t> blocks;
  cache.allocator().allocate(cache.blocks_for(n), blocks);
  ModelRunner runner(*m.model, m.device, cache);
  SequenceStep step{o.ids, 0, blocks, true, cache.state_slots().allocate()};
  Tensor logits = runner.forward({&step, 1});
  write_npy_f32(o.out, {logits.size(0), logits.size(1)}, logits.data<float>());
  log << "wrote " << o.out << " [" << logits.size(0) << ", " << logits.size(1) << "]\n";
}

}  // namespace opchain::tools
