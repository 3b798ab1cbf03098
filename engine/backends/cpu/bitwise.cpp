// CPU kernels: BitwiseAnd/Or/Xor (the broadcasting binary template), BitwiseNot, BitCast. The random
// generators (backends/cpu/random.cpp) register from here too.
#include <cstring>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/elementwise_binary.h"
#include "engine/backends/cpu/elementwise_unary.h"

namespace ms::cpu {

void register_random_kernels(runtime::KernelRegistry& r);  // backends/cpu/random.cpp

namespace {

using elementwise::Types;

struct IntegerBinary {
  static constexpr Types kTypes = Types::Integer;
  static constexpr bool kBoolOut = false;
  static constexpr bool kMixed = false;
  explicit IntegerBinary(const ir::Node&) {}
};
struct AndOp : IntegerBinary {
  using IntegerBinary::IntegerBinary;
  template <class C> C operator()(C a, C b) const { return static_cast<C>(a & b); }
};
struct OrOp : IntegerBinary {
  using IntegerBinary::IntegerBinary;
  template <class C> C operator()(C a, C b) const { return static_cast<C>(a | b); }
};
struct XorOp : IntegerBinary {
  using IntegerBinary::IntegerBinary;
  template <class C> C operator()(C a, C b) const { return static_cast<C>(a ^ b); }
};
struct NotOp : elementwise::UnaryBase<Types::Integer> {
  using UnaryBase::UnaryBase;
  template <class C> C operator()(C x) const { return static_cast<C>(~x); }
};

int bit_width(DType t) { return is_narrow(t) ? dtype_packed_bits(t) : static_cast<int>(dtype_size(t) * 8); }

// The same bytes under another dtype; a bool target keeps its 0/1 invariant (any non-zero byte is true).
Status bitcast_kernel(runtime::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t to = ctx.node().attr_int("to", 0);
  const auto target = dtype_from_onnx(static_cast<int>(to));
  if (!target || *target == DType::String || *target == DType::Undefined || x.dtype() == DType::String)
    return ctx.fail("attribute 'to' = " + std::to_string(to) + " is not a supported non-string data type");
  if (bit_width(*target) != bit_width(x.dtype()) || dtype_size(*target) != dtype_size(x.dtype()))
    return ctx.fail("attribute 'to' (" + std::string(dtype_name(*target)) + ") must have the bit width of the input (" +
                    std::string(dtype_name(x.dtype())) + ")");
  MS_ASSIGN_OR_RETURN(Tensor * y, ctx.allocate_output(0, *target, x.shape()));
  if (x.nbytes() == 0) return Status::ok();
  if (*target == DType::Bool && x.dtype() != DType::Bool) {
    const auto* src = static_cast<const uint8_t*>(x.raw());
    bool* dst = y->data<bool>();
    for (int64_t i = 0; i < x.numel(); ++i) dst[i] = src[i] != 0;
  } else {
    std::memcpy(y->raw(), x.raw(), x.nbytes());
  }
  ctx.set_impl("copy");
  return Status::ok();
}

}  // namespace

void register_bitwise_kernels(runtime::KernelRegistry& r) {
  r.add("BitwiseAnd", elementwise::binary_kernel<AndOp>);
  r.add("BitwiseOr", elementwise::binary_kernel<OrOp>);
  r.add("BitwiseXor", elementwise::binary_kernel<XorOp>);
  r.add("BitwiseNot", elementwise::unary_kernel<NotOp>);
  r.add("BitCast", bitcast_kernel);
  register_random_kernels(r);
}

}  // namespace ms::cpu
