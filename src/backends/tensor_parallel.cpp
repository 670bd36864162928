#include "backends/tensor_parallel.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/communicator.h"

namespace opchain {

namespace {

std::string bytes_moved(const Communicator& c, const CommStats& before) {
  return "comm=" + c.name() + " ranks=" + std::to_string(c.size()) +
         " bytes_sent=" + std::to_string(c.stats().bytes_sent - before.bytes_sent) +
         " bytes_received=" + std::to_string(c.stats().bytes_received - before.bytes_received);
}

}  // namespace

TpAllReduceImpl::TpAllReduceImpl(const OpsBackend& backend, const ImplBuildParams& p) : backend_(backend) {
  site_ = TraceSite{p.module_path, p.nn_module, "TpAllReduceImpl"};
}

void TpAllReduceImpl::forward(const Tensor& x, const Tensor& out) const {
  if (out.raw() != x.raw()) throw InvalidArgumentError("tp all-reduce at " + site_.module_path + " runs in place");
  Communicator& tp = backend_.tp();
  if (tp.size() == 1) return;
  if (x.dtype() != DType::F32) throw InvalidArgumentError("tp all-reduce at " + site_.module_path + " needs f32");
  const CommStats before = tp.stats();
  launch_host_step(
      "tp_all_reduce", &site_, [&tp, x] { tp.all_reduce_sum(const_cast<float*>(x.data<float>()), x.numel()); },
      [&tp, before] { return bytes_moved(tp, before); });
}

TpGatherColumnsImpl::TpGatherColumnsImpl(const OpsBackend& backend, const ImplBuildParams& p, int64_t full_cols)
    : backend_(backend), full_cols_(full_cols) {
  site_ = TraceSite{p.module_path, p.nn_module, "TpGatherColumnsImpl"};
}

std::pair<int64_t, int64_t> TpGatherColumnsImpl::block(int64_t full_cols, int64_t rank, int64_t ranks) {
  const int64_t chunk = (full_cols + ranks - 1) / ranks;
  return {std::min(full_cols, rank * chunk), std::min(full_cols, (rank + 1) * chunk)};
}

void TpGatherColumnsImpl::forward(const Tensor& local, const Tensor& out) const {
  Communicator& tp = backend_.tp();
  const int64_t ranks = tp.size(), rows = local.size(0), chunk = (full_cols_ + ranks - 1) / ranks;
  const CommStats before = tp.stats();
  launch_host_step(
      "tp_gather_columns", &site_,
      [this, &tp, local, out, ranks, rows, chunk] {
        // Padded to `chunk` columns so that every rank sends the same bytes; kept between steps.
        static thread_local std::vector<float> send, recv;
        send.assign(static_cast<size_t>(rows * chunk), 0.0f);
        recv.resize(static_cast<size_t>(ranks * rows * chunk));
        const int64_t mine = local.size(1);
        for (int64_t r = 0; r < rows; ++r)
          std::memcpy(send.data() + r * chunk, local.data<float>() + r * mine,
                      static_cast<size_t>(mine) * sizeof(float));
        tp.all_gather(send.data(), rows * chunk * static_cast<int64_t>(sizeof(float)), recv.data());
        float* o = const_cast<float*>(out.data<float>());
        for (int64_t p = 0; p < ranks; ++p) {
          const auto [begin, end] = block(full_cols_, p, ranks);
          for (int64_t r = 0; r < rows; ++r)
            std::memcpy(o + r * full_cols_ + begin, recv.data() + (p * rows + r) * chunk,
                        static_cast<size_t>(end - begin) * sizeof(float));
        }
      },
      [&tp, before] { return bytes_moved(tp, before); });
}

std::unique_ptr<TpCollectiveImpl> build_tp_collective(const OpsBackend& backend, TpCollective kind,
                                                      const ImplBuildParams& p, int64_t full_cols) {
  if (kind == TpCollective::AllReduce) return std::make_unique<TpAllReduceImpl>(backend, p);
  return std::make_unique<TpGatherColumnsImpl>(backend, p, full_cols);
}

}  // namespace opchain
