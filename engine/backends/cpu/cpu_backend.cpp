#include "engine/backends/cpu/cpu_backend.h"

#include <omp.h>

#include <cstring>
#include <thread>

#include "engine/backends/cpu/onednn.h"
#include "engine/ops/grad_ops.h"
#include "engine/runtime/custom_kernels.h"

namespace ms::cpu {

CpuBackend::CpuBackend(int threads)
    : threads_(0),
      caching_(std::make_unique<runtime::CachingAllocator>(std::make_unique<runtime::HostAllocator>())),
      onednn_(std::make_unique<OneDnnContext>()) {
  set_threads(threads);
}

CpuBackend::~CpuBackend() = default;

std::string onednn_version() {
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

std::string CpuBackend::description() const {
  return "cpu (oneDNN " + onednn_version() + ", " + std::to_string(threads_) + " threads)";
}

bool CpuBackend::native_bf16() const {
  // oneDNN's ISA as it dispatches (ONEDNN_MAX_CPU_ISA applied): avx512_core_bf16 or above. The ISA
  // values are nested bit sets (avx512_core_amx includes avx512_core_bf16's bits).
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const unsigned bf16 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);
  return (isa & bf16) == bf16;
}

bool CpuBackend::bf16_matrix_units() const {
  const unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  const unsigned amx = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_amx);
  return (isa & amx) == amx;
}

void CpuBackend::set_threads(int n) {
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads_ = n;
  omp_set_num_threads(n);
}

OneDnnContext& CpuBackend::onednn() { return *onednn_; }

const runtime::KernelRegistry& CpuBackend::kernels() {
  static const runtime::KernelRegistry* reg = [] {
    auto* r = new runtime::KernelRegistry();
    register_elementwise_kernels(*r);
    register_nn_kernels(*r);
    register_tensor_kernels(*r);
    register_reduce_kernels(*r);
    register_control_kernels(*r);
    register_fused_kernels(*r);
    register_modescope_kernels(*r);
    register_grad_kernels(*r);
    register_attention_kernels(*r);
    register_llm_kernels(*r);
    register_recurrent_kernels(*r);
    register_quant_kernels(*r);
    register_vision_kernels(*r);
    register_signal_kernels(*r);
    register_text_kernels(*r);
    register_preview_kernels(*r);
    register_bitwise_kernels(*r);
    register_contrib_kernels(*r);
    register_contrib_attention_kernels(*r);
    register_sequence_kernels(*r);
    register_string_kernels(*r);
    return r;
  }();
  return *reg;
}

runtime::KernelFn CpuBackend::find_kernel(const ir::Node& node) const {
  if (runtime::KernelFn k = kernels().find(node.op_type, node.domain)) return k;
  return runtime::find_custom_kernel(node.op_type, node.domain, DeviceType::CPU);  // plugins, F::custom
}

Status CpuBackend::copy_to_host(const Tensor& src, Tensor& dst) {
  if (src.nbytes() != dst.nbytes()) return internal_error("copy_to_host: size mismatch");
  if (src.nbytes()) std::memcpy(dst.raw(), src.raw(), src.nbytes());
  return Status::ok();
}

Status CpuBackend::copy_from_host(const Tensor& src, Tensor& dst) { return copy_to_host(src, dst); }

dnnl::memory::desc plain_desc(const Shape& shape, dnnl::memory::data_type dt) {
  dnnl::memory::dims dims(shape.begin(), shape.end());
  if (dims.empty()) dims.push_back(1);
  const Shape st = contiguous_strides(Shape(dims.begin(), dims.end()));
  return dnnl::memory::desc(dims, dt, dnnl::memory::dims(st.begin(), st.end()));
}

dnnl::memory::data_type to_dnnl(DType t) {
  using dt = dnnl::memory::data_type;
  switch (t) {
    case DType::F32: return dt::f32;
    case DType::F16: return dt::f16;
    case DType::BF16: return dt::bf16;
    case DType::I32: return dt::s32;
    case DType::I8: return dt::s8;
    case DType::U8: return dt::u8;
    default: return dt::undef;
  }
}

dnnl::memory wrap(const Tensor& t, const dnnl::memory::desc& md, dnnl::engine& eng) {
  return dnnl::memory(md, eng, t.raw());
}

std::string impl_name(const dnnl::primitive_desc_base& pd) { return std::string("onednn:") + pd.impl_info_str(); }

}  // namespace ms::cpu
