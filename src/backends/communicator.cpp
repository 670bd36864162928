#include "backends/communicator.h"

#include <cstring>

namespace opchain {

namespace {

// With one rank every collective is the identity: gathers and exchanges copy send into recv.
class SingleProcessCommunicator final : public Communicator {
 public:
  explicit SingleProcessCommunicator(std::string name) : name_(std::move(name)) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const std::string& name() const override { return name_; }

  void all_reduce_sum(float*, int64_t) override { ++stats_.collectives; }
  void all_gather(const void* send, int64_t bytes, void* recv) override { copy(send, recv, bytes); }
  void reduce_scatter_sum(const float* send, float* recv, int64_t count) override {
    copy(send, recv, count * static_cast<int64_t>(sizeof(float)));
  }
  void all_to_all_v(const void* send, std::span<const int64_t> send_bytes, void* recv,
                    std::span<const int64_t> recv_bytes) override {
    if (send_bytes.size() != 1 || recv_bytes.size() != 1 || send_bytes[0] != recv_bytes[0])
      throw CommError("all_to_all_v on communicator '" + name_ +
                      "' of size 1: counts must be one entry each and equal");
    copy(send, recv, send_bytes[0]);
  }
  void all_to_all(const void* send, int64_t bytes, void* recv) override { copy(send, recv, bytes); }
  void broadcast(void*, int64_t, int root) override {
    if (root != 0)
      throw CommError("broadcast on communicator '" + name_ + "' of size 1 from root " + std::to_string(root));
    ++stats_.collectives;
  }
  void barrier() override { ++stats_.collectives; }
  std::unique_ptr<Communicator> split(int, int, const std::string& name) override {
    return std::make_unique<SingleProcessCommunicator>(name);
  }

 private:
  void copy(const void* send, void* recv, int64_t bytes) {
    ++stats_.collectives;
    if (bytes > 0 && send != recv) std::memmove(recv, send, static_cast<size_t>(bytes));
  }
  std::string name_;
};

}  // namespace

std::unique_ptr<Communicator> make_single_process_communicator(const std::string& name) {
  return std::make_unique<SingleProcessCommunicator>(name);
}

}  // namespace opchain
