// Print (ai.modescope) on the CPU: copies input to output and writes "<label>: <tensor>" to stdout.
// The one kernel that prints, by design: it is the user's print statement compiled into a graph.
#include <cstdio>
#include <cstring>

#include "engine/backends/cpu/cpu_backend.h"

namespace ms::cpu {
namespace {

Status print_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:print");
  const Tensor& in = ctx.input(0);
  const std::string label = ctx.node().attr_string("label", ctx.node().name);
  std::printf("%s: %s\n", label.c_str(), in.to_string().c_str());
  std::fflush(stdout);
  Tensor& out = ctx.output(0);
  if (!out.defined()) {
    ctx.set_output(0, in);
    return Status::ok();
  }
  if (out.nbytes() != in.nbytes()) return ctx.fail("output size differs from input");
  if (out.raw() != in.raw() && in.nbytes()) std::memcpy(out.raw(), in.raw(), in.nbytes());
  return Status::ok();
}

}  // namespace

void register_modescope_kernels(runtime::KernelRegistry& r) { r.add("Print", print_kernel, "ai.modescope"); }

}  // namespace ms::cpu
