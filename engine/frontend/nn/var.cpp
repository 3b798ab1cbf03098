#include "engine/frontend/nn/var.h"

#include <atomic>
#include <cstdio>

#include "engine/frontend/nn/context.h"
#include "engine/frontend/nn/trace.h"

namespace ms::nn {

Var::Var(Tensor t) : impl_(std::make_shared<VarImpl>()) { impl_->value = std::move(t); }

Var Var::symbolic(TraceState* trace, std::string name, ir::ValueType type, std::string path) {
  Var v;
  v.impl_ = std::make_shared<VarImpl>();
  v.impl_->trace = trace;
  v.impl_->sym = std::move(name);
  v.impl_->type = std::move(type);
  v.impl_->path = std::move(path);
  return v;
}

Var Var::failed(Status st) {
  Var v;
  v.impl_ = std::make_shared<VarImpl>();
  if (st.is_ok()) st = internal_error("failed Var without an error");
  v.impl_->error = std::move(st);
  return v;
}

Status Var::status() const {
  if (!impl_) return invalid_argument("undefined tensor (an empty Var was used)");
  return impl_->error;
}

DType Var::dtype() const {
  if (!ok()) return DType::Undefined;
  return impl_->trace ? impl_->type.dtype : impl_->value.dtype();
}

Shape Var::shape() const {
  if (!ok()) return {};
  if (!impl_->trace) return impl_->value.shape();
  return impl_->type.dims ? *impl_->type.dims : Shape{};
}

int64_t Var::dim(int64_t i) const {
  const Shape s = shape();
  const int64_t r = static_cast<int64_t>(s.size());
  if (i < 0) i += r;
  return i >= 0 && i < r ? s[static_cast<size_t>(i)] : -1;
}

namespace {
Status symbolic_value_error(const VarImpl& v, const char* what) {
  // The module running now is where the C++ `if` is; else the one that made the value.
  std::string path = current_path();
  if (path.empty()) path = v.path;
  const std::string where = path.empty() ? std::string("the traced function") : "module '" + path + "'";
  return invalid_argument(std::string(what) + " of symbolic tensor '" + v.sym + "' (" + v.type.to_string() + ") in " +
                          where +
                          ": its value is not known while tracing (Graph mode / jit). Data-dependent "
                          "control flow must use nn::cond(pred, then_fn, else_fn) or nn::fori_loop; "
                          "to see a value at run time use ops::print");
}
}  // namespace

Expected<Tensor> Var::tensor() const {
  if (!impl_) return status();
  if (!impl_->error.is_ok()) return impl_->error;
  if (impl_->trace) return symbolic_value_error(*impl_, "reading the value");
  return impl_->value;
}

Expected<double> Var::item() const {
  if (!impl_) return status();
  if (!impl_->error.is_ok()) return impl_->error;
  if (impl_->trace) {
    Status st = symbolic_value_error(*impl_, "item()");
    impl_->trace->fail(st);
    return st;
  }
  if (impl_->value.numel() < 1) return invalid_argument("item() of an empty tensor");
  return impl_->value.at_double(0);
}

Var::operator bool() const {
  if (impl_ && impl_->error.is_ok() && impl_->trace) {
    impl_->trace->fail(symbolic_value_error(*impl_, "a C++ `if`/bool conversion"));
    return false;
  }
  auto v = item();
  return v.has_value() && *v != 0.0;
}

const std::string& Var::name() const {
  static const std::string kEmpty;
  return impl_ ? impl_->sym : kEmpty;
}

const std::string& Var::path() const {
  static const std::string kEmpty;
  return impl_ ? impl_->path : kEmpty;
}

std::string Var::to_string() const {
  if (!impl_) return "Tensor(undefined)";
  if (!impl_->error.is_ok()) return "Tensor(error: " + impl_->error.message() + ")";
  if (impl_->trace) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
      std::fprintf(stderr,
                   "warning: printing symbolic tensor '%s' while tracing: it has no value now and this print "
                   "does not run in the compiled graph; use ops::print(x) to print in Graph mode too\n",
                   impl_->sym.c_str());
    return "SymbolicTensor(" + impl_->type.to_string() + ", name='" + impl_->sym + "')";
  }
  return impl_->value.to_string();
}

std::ostream& operator<<(std::ostream& os, const Var& v) { return os << v.to_string(); }

Status first_error(const Vars& vs) {
  for (const auto& v : vs)
    if (!v.ok()) return v.status();
  return Status::ok();
}

}  // namespace ms::nn
