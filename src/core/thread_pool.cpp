#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace opchain {

// Note [Pool wake-up]: a decode step launches ~70 parallel regions back to back, a few hundred
// microseconds apart. Sleeping on a condition variable between them costs a futex wake-up (several
// microseconds, more when the scheduler moved the thread) per region, so both sides spin briefly on an
// atomic first: a worker for kSpin after its last job, the caller for the workers to finish. Past
// kSpin they sleep, so an idle engine costs no CPU.
constexpr auto kSpin = std::chrono::microseconds(100);

struct ThreadPool::State {
  std::mutex mu;
  std::condition_variable wake;
  std::condition_variable done;
  std::atomic<uint64_t> generation{0};
  std::atomic<int> pending{0};
  std::atomic<bool> stop{false};
  // Written by the caller before it publishes a generation, read by workers after they see it.
  const std::function<void(int, int64_t, int64_t)>* job = nullptr;
  int64_t n = 0;
  std::vector<std::thread> workers;
};

static inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins until pred() or kSpin has passed; true when pred() held.
template <class Pred>
static bool spin_until(const Pred& pred) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (pred()) return true;
    cpu_relax();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline) return pred();
  }
}

static void run_chunk(const std::function<void(int, int64_t, int64_t)>& fn, int64_t n, int parts, int idx) {
  const int64_t begin = n * idx / parts;
  const int64_t end = n * (idx + 1) / parts;
  if (begin < end) fn(idx, begin, end);
}

ThreadPool::ThreadPool(int num_threads) : state_(new State), num_threads_(std::max(1, num_threads)) {
  for (int w = 1; w < num_threads_; ++w) {
    state_->workers.emplace_back([this, w] {
      State& st = *state_;
      uint64_t seen = 0;
      for (;;) {
        auto published = [&] {
          return st.stop.load(std::memory_order_acquire) || st.generation.load(std::memory_order_acquire) != seen;
        };
        if (!spin_until(published)) {
          std::unique_lock lock(st.mu);
          st.wake.wait(lock, published);
        }
        if (st.stop.load(std::memory_order_acquire)) return;
        seen = st.generation.load(std::memory_order_acquire);
        run_chunk(*st.job, st.n, num_threads_, w);
        if (st.pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
          std::lock_guard lock(st.mu);  // the caller may be between its check and its wait
          st.done.notify_one();
        }
      }
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(state_->mu);
    state_->stop.store(true, std::memory_order_release);
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
  State& st = *state_;
  st.job = &fn;
  st.n = n;
  st.pending.store(num_threads_ - 1, std::memory_order_relaxed);
  {
    // Under the lock, so a worker between its predicate check and its wait cannot miss the wake-up.
    std::lock_guard lock(st.mu);
    st.generation.fetch_add(1, std::memory_order_release);
  }
  st.wake.notify_all();
  run_chunk(fn, n, num_threads_, 0);
  auto finished = [&] { return st.pending.load(std::memory_order_acquire) == 0; };
  if (!spin_until(finished)) {
    std::unique_lock lock(st.mu);
    st.done.wait(lock, finished);
  }
  st.job = nullptr;
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
