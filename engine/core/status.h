// Errors a caller can handle are values: Status and Expected<T>. Invariants are asserts.
#pragma once

#include <cassert>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace ms {

enum class ErrorCode : uint8_t {
  Ok = 0,
  InvalidArgument,  // bad user input (CLI flags, tensor shapes given by a caller)
  InvalidModel,     // malformed model file or graph
  Unsupported,      // op/dtype/attribute not implemented
  NotFound,
  OutOfMemory,
  Cancelled,
  Io,
  Internal,
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok() { return {}; }
  static Status error(ErrorCode code, std::string message) { return Status(code, std::move(message)); }

  bool is_ok() const { return code_ == ErrorCode::Ok; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Node the error is about (0 = none): lets the GUI select it.
  uint64_t node_id() const { return node_id_; }
  Status& with_node(uint64_t id) {
    if (node_id_ == 0) node_id_ = id;
    return *this;
  }
  // Prefixes context ("node 'conv1' (Conv): ...").
  Status& prepend(const std::string& context) {
    message_ = context + message_;
    return *this;
  }

 private:
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  ErrorCode code_ = ErrorCode::Ok;
  std::string message_;
  uint64_t node_id_ = 0;
};

inline Status invalid_argument(std::string m) { return Status::error(ErrorCode::InvalidArgument, std::move(m)); }
inline Status invalid_model(std::string m) { return Status::error(ErrorCode::InvalidModel, std::move(m)); }
inline Status unsupported(std::string m) { return Status::error(ErrorCode::Unsupported, std::move(m)); }
inline Status internal_error(std::string m) { return Status::error(ErrorCode::Internal, std::move(m)); }
inline Status io_error(std::string m) { return Status::error(ErrorCode::Io, std::move(m)); }

template <class T> class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).is_ok()); }  // NOLINT

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Status& status() const {
    static const Status kOk;
    return has_value() ? kOk : std::get<Status>(v_);
  }
  Status take_status() && { return has_value() ? Status() : std::get<Status>(std::move(v_)); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ms

#define MS_CONCAT_INNER(a, b) a##b
#define MS_CONCAT(a, b) MS_CONCAT_INNER(a, b)

#define MS_RETURN_IF_ERROR(expr)                \
  do {                                          \
    ::ms::Status ms_status_ = (expr);           \
    if (!ms_status_.is_ok()) return ms_status_; \
  } while (0)

#define MS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr)             \
  auto tmp = (expr);                                         \
  if (!tmp.has_value()) return std::move(tmp).take_status(); \
  lhs = std::move(tmp).value()

// MS_ASSIGN_OR_RETURN(auto x, make_x());
#define MS_ASSIGN_OR_RETURN(lhs, expr) MS_ASSIGN_OR_RETURN_IMPL(MS_CONCAT(ms_expected_, __LINE__), lhs, expr)
