// HugeScratch (cpu_common.h): scratch on transparent huge pages.
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <new>

#include "vendors/cpu/cpu_common.h"

namespace opchain::cpu {

HugeScratch::~HugeScratch() {
  if (base_) ::munmap(base_, bytes_);
}

void* HugeScratch::get(size_t bytes) {
  if (bytes <= bytes_) return base_;
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t want = std::max(bytes, bytes_ + bytes_ / 2);
  const size_t rounded = (want + kHuge - 1) / kHuge * kHuge;
  // Over-map by one huge page so the used range can start on a 2 MiB boundary.
  void* m = ::mmap(nullptr, rounded + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = (reinterpret_cast<uintptr_t>(m) + kHuge - 1) / kHuge * kHuge;
  const size_t head = start - reinterpret_cast<uintptr_t>(m), tail = kHuge - head;
  if (head) ::munmap(m, head);
  if (tail) ::munmap(reinterpret_cast<void*>(start + rounded), tail);
  ::madvise(reinterpret_cast<void*>(start), rounded, MADV_HUGEPAGE);  // advisory: where THP is off this changes nothing
  if (base_) ::munmap(base_, bytes_);
  base_ = reinterpret_cast<void*>(start);
  bytes_ = rounded;
  return base_;
}

}  // namespace opchain::cpu
