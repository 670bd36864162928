#pragma once
// Tensor: a contiguous, row-major view of memory with a dtype and up to 4 dims. Owning tensors hold
// their storage through a shared_ptr; views borrow (e.g. a memory-mapped weight).
#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

#include "core/dtype.h"

namespace opchain {

inline constexpr int kMaxDims = 4;

struct Shape {
  std::array<int64_t, kMaxDims> dims{};
  int ndim = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> d);
  int64_t operator[](int i) const { return dims[static_cast<size_t>(i < 0 ? i + ndim : i)]; }
  int64_t numel() const;
  bool operator==(const Shape& o) const;
  std::string str() const;  // "[16, 64]"
};

class Tensor {
 public:
  Tensor() = default;
  // Borrowed view; the caller keeps `data` alive.
  static Tensor view(void* data, DType dtype, Shape shape);
  static Tensor view(const void* data, DType dtype, Shape shape) { return view(const_cast<void*>(data), dtype, shape); }
  // Owning, zero-filled, 64-byte aligned.
  static Tensor empty(DType dtype, Shape shape);

  bool defined() const { return data_ != nullptr || shape_.numel() == 0; }
  bool is_null() const { return data_ == nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int ndim() const { return shape_.ndim; }
  int64_t size(int i) const { return shape_[i]; }
  int64_t numel() const { return shape_.numel(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() const { return data_; }
  template <class T>
  T* data() const {
    return static_cast<T*>(data_);
  }

  // Same memory, new shape with the same element count.
  Tensor reshape(Shape s) const;
  // Rows [begin, end) of dim 0 (a view).
  Tensor slice_rows(int64_t begin, int64_t end) const;
  std::string desc() const;  // "bf16[16, 64]"

 private:
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
  DType dtype_ = DType::F32;
  Shape shape_;
};

}  // namespace opchain
