#include "core/tensor.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace opchain {

Shape::Shape(std::initializer_list<int64_t> d) {
  if (d.size() > kMaxDims) throw InvalidArgumentError("tensor rank " + std::to_string(d.size()) + " exceeds 4");
  for (int64_t v : d) dims[static_cast<size_t>(ndim++)] = v;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= dims[static_cast<size_t>(i)];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (ndim != o.ndim) return false;
  for (int i = 0; i < ndim; ++i)
    if (dims[static_cast<size_t>(i)] != o.dims[static_cast<size_t>(i)]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[static_cast<size_t>(i)]);
  }
  return s + "]";
}

Tensor Tensor::view(void* data, DType dtype, Shape shape) {
  Tensor t;
  t.data_ = data;
  t.dtype_ = dtype;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::empty(DType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  size_t bytes = t.nbytes();
  size_t padded = ((bytes + 63) / 64) * 64;
  if (padded == 0) padded = 64;
  if (padded >= (4u << 20)) {
    // Large buffers (KV caches, repacked weights) come from the kernel already zeroed and only
    // become resident when touched, so an unused KV cache costs no memory. They sit on 2 MiB
    // boundaries and ask for transparent huge pages: a kernel streaming weights then takes a TLB miss
    // per 2 MiB instead of per 4 KiB (one core streaming int4 weights: 13 -> 22 GB/s on a Zen 4 VM).
    constexpr size_t kHuge = size_t{2} << 20;
    const size_t mapped = padded + kHuge;
    void* base = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
      throw Error("out of memory allocating " + std::to_string(padded) + " bytes for " + t.desc());
    const uintptr_t start = (reinterpret_cast<uintptr_t>(base) + kHuge - 1) / kHuge * kHuge;
    void* p = reinterpret_cast<void*>(start);
    ::madvise(p, padded, MADV_HUGEPAGE);  // advisory: where THP is off this changes nothing
    t.storage_ = std::shared_ptr<void>(p, [base, mapped](void*) { ::munmap(base, mapped); });
    t.data_ = p;
    return t;
  }
  void* p = std::aligned_alloc(64, padded);
  if (!p) throw Error("out of memory allocating " + std::to_string(padded) + " bytes for " + t.desc());
  std::memset(p, 0, padded);
  t.storage_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  t.data_ = p;
  return t;
}

Tensor Tensor::reshape(Shape s) const {
  if (s.numel() != numel()) throw InvalidArgumentError("cannot reshape " + desc() + " to " + s.str());
  Tensor t = *this;
  t.shape_ = s;
  return t;
}

Tensor Tensor::slice_rows(int64_t begin, int64_t end) const {
  if (ndim() < 1 || begin < 0 || end < begin || end > size(0))
    throw InvalidArgumentError("row slice [" + std::to_string(begin) + ", " + std::to_string(end) + ") out of " +
                               desc());
  Tensor t = *this;
  const int64_t row = size(0) ? numel() / size(0) : 0;
  t.data_ = static_cast<char*>(data_) + static_cast<size_t>(begin * row) * dtype_size(dtype_);
  t.shape_.dims[0] = end - begin;
  return t;
}

std::string Tensor::desc() const { return std::string(dtype_name(dtype_)) + shape_.str(); }

}  // namespace opchain
