#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace opchain {

struct ThreadPool::State {
  std::mutex mu;
  std::condition_variable wake;
  std::condition_variable done;
  uint64_t generation = 0;
  int pending = 0;
  bool stop = false;
  const std::function<void(int, int64_t, int64_t)>* job = nullptr;
  int64_t n = 0;
  std::vector<std::thread> workers;
};

static void run_chunk(const std::function<void(int, int64_t, int64_t)>& fn, int64_t n, int parts, int idx) {
  const int64_t begin = n * idx / parts;
  const int64_t end = n * (idx + 1) / parts;
  if (begin < end) fn(idx, begin, end);
}

ThreadPool::ThreadPool(int num_threads) : state_(new State), num_threads_(std::max(1, num_threads)) {
  for (int w = 1; w < num_threads_; ++w) {
    state_->workers.emplace_back([this, w] {
      uint64_t seen = 0;
      for (;;) {
        std::unique_lock lock(state_->mu);
        state_->wake.wait(lock, [&] { return state_->stop || state_->generation != seen; });
        if (state_->stop) return;
        seen = state_->generation;
        const auto* job = state_->job;
        const int64_t n = state_->n;
        lock.unlock();
        run_chunk(*job, n, num_threads_, w);
        lock.lock();
        if (--state_->pending == 0) state_->done.notify_one();
      }
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(state_->mu);
    state_->stop = true;
  }
  state_->wake.notify_all();
  for (auto& t : state_->workers) t.join();
  delete state_;
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int, int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (num_threads_ == 1 || n == 1) {
    fn(0, 0, n);
    return;
  }
  {
    std::lock_guard lock(state_->mu);
    state_->job = &fn;
    state_->n = n;
    state_->pending = num_threads_ - 1;
    ++state_->generation;
  }
  state_->wake.notify_all();
  run_chunk(fn, n, num_threads_, 0);
  std::unique_lock lock(state_->mu);
  state_->done.wait(lock, [&] { return state_->pending == 0; });
  state_->job = nullptr;
}

namespace {
std::unique_ptr<ThreadPool>& global_slot() {
  static std::unique_ptr<ThreadPool> pool;
  return pool;
}
std::mutex& global_mu() {
  static std::mutex mu;
  return mu;
}
}  // namespace

ThreadPool& ThreadPool::global() {
  std::lock_guard lock(global_mu());
  auto& slot = global_slot();
  if (!slot) slot = std::make_unique<ThreadPool>(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return *slot;
}

void ThreadPool::set_global_threads(int n) {
  std::lock_guard lock(global_mu());
  global_slot() = std::make_unique<ThreadPool>(n);
}

}  // namespace opchain
