// Tensor: a typed, shaped, row-major contiguous view of a Buffer. Copies share the buffer.
// The same handle carries the runtime values that are not one tensor (ONNX seq(tensor(T)) and
// optional(...)): kind() says which; such a value owns no buffer bytes, only a shared, immutable
// list of element handles, so executors' slots, kernel inputs/outputs and taps keep one value type
// and the tensor path pays one null pointer.
#pragma once

#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/device.h"
#include "engine/core/dtype.h"
#include "engine/core/shape.h"

namespace ms {

// What a runtime value (and, in the IR, a value's static type) is.
enum class ValueKind : uint8_t { Tensor, Sequence, Optional };
const char* value_kind_name(ValueKind k);  // "tensor", "sequence", "optional"

struct ValueList;

// A block of memory; `release` returns it to whoever made it (allocator, arena, or nothing).
class Buffer {
 public:
  Buffer(void* data, size_t bytes, Device device, std::function<void(void*, size_t)> release)
      : data_(data), bytes_(bytes), device_(device), release_(std::move(release)) {}
  ~Buffer() {
    if (release_) release_(data_, bytes_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  // Frozen: the contents never change again (a compiled graph's constants, frozen by its executor
  // before any run), so kernels may cache what they derive from them (oneDNN's reordered weights)
  // without checking the bytes at every run. Writing into a frozen buffer is a bug.
  void freeze() { frozen_ = true; }
  bool frozen() const { return frozen_; }
  // Gives the bytes back while the buffer lives on (an executor whose kernels keep packed copies of a
  // frozen constant, in a process that reads the plain bytes no more: GraphExecutor::
  // release_constants_once_packed). data() keeps its value, for kernels that match their packed copy
  // by address, but must not be read. False, with nothing released, for a buffer that does not own its
  // bytes (borrowed) or was released already.
  // Host pages are given back to the system at once, whatever the allocator does with freed memory.
  bool release_storage();
  bool released() const { return released_; }

  // Host memory owned by the buffer (64-byte aligned).
  static std::shared_ptr<Buffer> host(size_t bytes);
  // Non-owning view (e.g. a slice of an arena that outlives the tensor).
  static std::shared_ptr<Buffer> borrowed(void* data, size_t bytes, Device device = {});

 private:
  void* data_;
  size_t bytes_;
  Device device_;
  std::function<void(void*, size_t)> release_;
  bool frozen_ = false;
  bool released_ = false;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<Buffer> buffer, DType dtype, Shape shape, size_t byte_offset = 0)
      : buffer_(std::move(buffer)), offset_(byte_offset), dtype_(dtype), shape_(std::move(shape)) {}

  // Fresh host tensor; contents uninitialized unless zeroed.
  static Tensor empty(DType dtype, Shape shape);
  static Tensor zeros(DType dtype, Shape shape);
  template <class T> static Tensor from_vector(const std::vector<T>& values, Shape shape) {
    Tensor t = empty(dtype_of<T>(), std::move(shape));
    if constexpr (std::is_same_v<T, bool>) {
      for (size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i];
    } else {
      if (!values.empty()) std::memcpy(t.raw(), values.data(), values.size() * sizeof(T));
    }
    return t;
  }
  template <class T> static Tensor scalar(T v) { return from_vector<T>(std::vector<T>{v}, {}); }

  // A sequence of tensors (elem_dtype: their element type, kept for an empty sequence).
  static Tensor sequence(std::vector<Tensor> items, DType elem_dtype);
  // An optional: empty (no item) or holding one tensor or one sequence. elem_kind / elem_dtype
  // describe what it holds (or would hold, when empty).
  static Tensor optional(std::vector<Tensor> item, ValueKind elem_kind, DType elem_dtype);

  bool defined() const { return buffer_ != nullptr || list_ != nullptr; }
  ValueKind kind() const;
  bool is_tensor() const { return list_ == nullptr; }
  // Elements of a sequence; the held value of an optional (empty when it holds none).
  const std::vector<Tensor>& items() const;
  const ValueList* list() const { return list_.get(); }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[static_cast<size_t>(i < 0 ? i + rank() : i)]; }
  int64_t numel() const { return ms::numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  Device device() const { return buffer_ ? buffer_->device() : Device{}; }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  size_t byte_offset() const { return offset_; }

  void* raw() const { return static_cast<char*>(buffer_->data()) + offset_; }
  template <class T> T* data() const { return static_cast<T*>(raw()); }
  template <class T> std::span<T> span() const { return {data<T>(), static_cast<size_t>(numel())}; }

  // Same buffer, new shape (numel must match).
  Tensor reshaped(Shape shape) const { return Tensor(buffer_, dtype_, std::move(shape), offset_); }
  // Deep copy into fresh host memory (containers: their elements deep-copied).
  Tensor clone() const;
  // Element i converted to double / int64 (any numeric dtype); for small host tensors (shapes, scalars).
  double at_double(int64_t i) const;
  int64_t at_int(int64_t i) const;
  // Values as int64 (for shape-like inputs).
  std::vector<int64_t> to_int_vector() const;

  std::string to_string(int64_t max_elements = 16) const;

 private:
  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;
  DType dtype_ = DType::Undefined;
  Shape shape_;
  std::shared_ptr<const ValueList> list_;  // set only for sequences and optionals
};

// The payload of a sequence or optional value. Immutable once made: sequence ops build new lists.
struct ValueList {
  ValueKind kind = ValueKind::Sequence;
  ValueKind elem_kind = ValueKind::Tensor;  // what the items are (an optional may hold a sequence)
  DType elem_dtype = DType::Undefined;      // element type of the tensors inside
  std::vector<Tensor> items;
};

inline ValueKind Tensor::kind() const { return list_ ? list_->kind : ValueKind::Tensor; }
inline const std::vector<Tensor>& Tensor::items() const {
  static const std::vector<Tensor> kNone;
  return list_ ? list_->items : kNone;
}

}  // namespace ms
