#include "engine/core/tensor.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "engine/core/alloc_error.h"
#include "engine/core/host_memory.h"
#include "engine/core/narrow.h"
#include "engine/core/strings.h"

namespace ms {

AllocationFailed::AllocationFailed(size_t bytes, std::string what_for)
    : bytes_(bytes),
      what_for_(std::move(what_for)),
      message_("out of memory: " + format_alloc_bytes(static_cast<double>(bytes)) + " asked for " + what_for_) {}

std::string format_alloc_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", bytes, units[u]);
  return buf;
}

std::shared_ptr<Buffer> Buffer::host(size_t bytes) {
  void* p = take_allocation_fault() ? nullptr : host_allocate(bytes);
  if (!p) throw AllocationFailed(bytes, "a host buffer");
  return std::make_shared<Buffer>(p, bytes, Device{}, [](void* d, size_t) { host_free(d); });
}

bool Buffer::release_storage() {
  if (!release_ || released_) return false;
  auto release = std::move(release_);
  release_ = nullptr;
  released_ = true;
  if (device_.is_cpu()) release_pages(data_, bytes_);
  release(data_, bytes_);
  return true;
}

std::shared_ptr<Buffer> Buffer::borrowed(void* data, size_t bytes, Device device) {
  return std::make_shared<Buffer>(data, bytes, device, nullptr);
}

Tensor Tensor::empty(DType dtype, Shape shape) {
  size_t bytes = 0;
  const bool fits = byte_size(shape, dtype_size(dtype), bytes);
  std::shared_ptr<Buffer> buffer;
  try {
    if (!fits) throw AllocationFailed(SIZE_MAX, "");
    buffer = Buffer::host(bytes);
  } catch (const AllocationFailed&) {
    std::string dims;
    for (int64_t d : shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    const std::string what = "a " + std::string(dtype_name(dtype)) + " [" + dims + "] tensor";
    throw AllocationFailed(fits ? bytes : SIZE_MAX, fits ? what : what + " (more bytes than an address space holds)");
  }
  Tensor t(std::move(buffer), dtype, std::move(shape));
  if (dtype == DType::String) fill_empty_strings(t);
  return t;
}

const char* value_kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::Tensor: return "tensor";
    case ValueKind::Sequence: return "sequence";
    case ValueKind::Optional: return "optional";
  }
  return "?";
}

Tensor Tensor::sequence(std::vector<Tensor> items, DType elem_dtype) {
  auto list = std::make_shared<ValueList>();
  list->kind = ValueKind::Sequence;
  list->elem_dtype = elem_dtype;
  list->items = std::move(items);
  Tensor t;
  t.list_ = std::move(list);
  return t;
}

Tensor Tensor::optional(std::vector<Tensor> item, ValueKind elem_kind, DType elem_dtype) {
  auto list = std::make_shared<ValueList>();
  list->kind = ValueKind::Optional;
  list->elem_kind = elem_kind;
  list->elem_dtype = elem_dtype;
  list->items = std::move(item);
  Tensor t;
  t.list_ = std::move(list);
  return t;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t = empty(dtype, std::move(shape));
  if (dtype != DType::String) std::memset(t.raw(), 0, t.nbytes());  // strings start as ""
  return t;
}

Tensor Tensor::clone() const {
  if (list_) {
    std::vector<Tensor> items;
    items.reserve(list_->items.size());
    for (const Tensor& e : list_->items) items.push_back(e.clone());
    return list_->kind == ValueKind::Sequence ? sequence(std::move(items), list_->elem_dtype)
                                              : optional(std::move(items), list_->elem_kind, list_->elem_dtype);
  }
  Tensor t = empty(dtype_, shape_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

double Tensor::at_double(int64_t i) const {
  if (is_narrow(dtype_)) return narrow::to_float(dtype_, static_cast<const uint8_t*>(raw())[i]);
  double v = 0;
  visit_dtype(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    v = static_cast<double>(data<T>()[i]);
  });
  return v;
}

int64_t Tensor::at_int(int64_t i) const {
  if (narrow::is_narrow_int(dtype_)) return narrow::to_int(dtype_, static_cast<const uint8_t*>(raw())[i]);
  if (is_narrow(dtype_)) return static_cast<int64_t>(at_double(i));
  int64_t v = 0;
  visit_dtype(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>)
      v = static_cast<int64_t>(data<T>()[i]);
    else
      v = static_cast<int64_t>(static_cast<double>(data<T>()[i]));
  });
  return v;
}

std::vector<int64_t> Tensor::to_int_vector() const {
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) out[static_cast<size_t>(i)] = at_int(i);
  return out;
}

std::string Tensor::to_string(int64_t max_elements) const {
  std::ostringstream os;
  if (list_) {
    os << (list_->kind == ValueKind::Sequence ? "Sequence(" : "Optional(");
    if (list_->items.empty()) os << (list_->kind == ValueKind::Sequence ? dtype_name(list_->elem_dtype) : "empty");
    for (size_t i = 0; i < list_->items.size(); ++i) os << (i ? ", " : "") << list_->items[i].to_string(max_elements);
    os << ")";
    return os.str();
  }
  os << "Tensor(" << dtype_name(dtype_) << shape_to_string(shape_);
  if (defined() && device().is_cpu() && dtype_ == DType::String) {
    os << " {";
    const int64_t n = std::min(numel(), max_elements);
    for (int64_t i = 0; i < n; ++i) os << (i ? ", \"" : "\"") << string_at(*this, i) << '"';
    if (numel() > n) os << ", ...";
    os << "}";
  } else if (defined() && device().is_cpu()) {
    os << " {";
    const int64_t n = std::min(numel(), max_elements);
    for (int64_t i = 0; i < n; ++i) os << (i ? ", " : "") << at_double(i);
    if (numel() > n) os << ", ...";
    os << "}";
  }
  os << ")";
  return os.str();
}

}  // namespace ms
