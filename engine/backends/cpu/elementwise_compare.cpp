// Comparison kernels (bool output) and bool logic: Equal Less Greater LessOrEqual GreaterOrEqual
// And Or Xor. f16/bf16 compare in float; NaN compares false (unequal) as in numpy.
#include "engine/backends/cpu/elementwise_binary.h"

namespace ms::cpu {
Status string_equal_kernel(runtime::KernelContext& ctx);  // string.cpp
}

namespace ms::cpu::elementwise {
namespace {

template <Types Set> struct CompareBase {
  static constexpr Types kTypes = Set;
  static constexpr bool kBoolOut = true;
  static constexpr bool kMixed = false;
  explicit CompareBase(const ir::Node&) {}
};

struct EqualOp : CompareBase<Types::Any> {
  using CompareBase::CompareBase;
  template <class C> bool operator()(C a, C b) const { return a == b; }
};
struct LessOp : CompareBase<Types::Numeric> {
  using CompareBase::CompareBase;
  template <class C> bool operator()(C a, C b) const { return a < b; }
};
struct GreaterOp : CompareBase<Types::Numeric> {
  using CompareBase::CompareBase;
  template <class C> bool operator()(C a, C b) const { return a > b; }
};
struct LessOrEqualOp : CompareBase<Types::Numeric> {
  using CompareBase::CompareBase;
  template <class C> bool operator()(C a, C b) const { return a <= b; }
};
struct GreaterOrEqualOp : CompareBase<Types::Numeric> {
  using CompareBase::CompareBase;
  template <class C> bool operator()(C a, C b) const { return a >= b; }
};
struct AndOp : CompareBase<Types::Bool> {
  using CompareBase::CompareBase;
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp : CompareBase<Types::Bool> {
  using CompareBase::CompareBase;
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp : CompareBase<Types::Bool> {
  using CompareBase::CompareBase;
  bool operator()(bool a, bool b) const { return a != b; }
};

Status equal_kernel(runtime::KernelContext& ctx) {
  if (ctx.input(0).dtype() == DType::String) return string_equal_kernel(ctx);
  return binary_kernel<EqualOp>(ctx);
}

}  // namespace

void register_compare_kernels(runtime::KernelRegistry& r) {
  r.add("Equal", equal_kernel);
  r.add("Less", binary_kernel<LessOp>);
  r.add("Greater", binary_kernel<GreaterOp>);
  r.add("LessOrEqual", binary_kernel<LessOrEqualOp>);
  r.add("GreaterOrEqual", binary_kernel<GreaterOrEqualOp>);
  r.add("And", binary_kernel<AndOp>);
  r.add("Or", binary_kernel<OrOp>);
  r.add("Xor", binary_kernel<XorOp>);
}

}  // namespace ms::cpu::elementwise
