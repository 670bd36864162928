#pragma once
// A fixed pool of worker threads for data-parallel kernels. The calling thread takes a share of the
// work too, so a pool of N threads keeps N cores busy with N-1 workers.
#include <cstdint>
#include <functional>

namespace opchain {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }
  // Calls fn(thread_index, begin, end) on contiguous chunks covering [0, n); blocks until all finish.
  // Chunks are split so each thread gets one contiguous range (no false sharing of outputs).
  void parallel_for(int64_t n, const std::function<void(int, int64_t, int64_t)>& fn);

  // The process-wide pool kernels use; its size is set once by set_global_threads (default: cores).
  static ThreadPool& global();
  static void set_global_threads(int n);

 private:
  struct State;
  State* state_;
  int num_threads_;
};

}  // namespace opchain
