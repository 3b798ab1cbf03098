// The primitive descriptors of the convolution kinds: oneDNN 2.x op descriptor + attributes -> pd,
// and the walk over oneDNN's implementations (next_impl) while the op descriptor is alive.
#include "engine/backends/cpu/onednn.h"

namespace ms::cpu {

namespace {

dnnl::convolution_forward::desc conv_desc(const ConvProblem& p) {
  return dnnl::convolution_forward::desc(p.prop, p.alg, p.src, p.weights, p.bias, p.dst, p.strides, p.dilations,
                                         p.pad_l, p.pad_r);
}

}  // namespace

dnnl::convolution_forward::primitive_desc conv_forward_pd(dnnl::engine& eng, const ConvProblem& p,
                                                          const dnnl::primitive_attr& attr) {
  return dnnl::convolution_forward::primitive_desc(conv_desc(p), attr, eng);
}

std::optional<dnnl::convolution_forward::primitive_desc> conv_forward_pd(dnnl::engine& eng, const ConvProblem& p,
                                                                         const dnnl::primitive_attr& attr,
                                                                         const ImplFilter& accept) {
  const dnnl::convolution_forward::desc d = conv_desc(p);  // outlives the walk
  dnnl::convolution_forward::primitive_desc pd(d, attr, eng);
  do {
    if (accept(pd)) return pd;
  } while (pd.next_impl());
  return std::nullopt;
}

dnnl::deconvolution_forward::primitive_desc deconv_forward_pd(dnnl::engine& eng, const ConvProblem& p,
                                                              const dnnl::primitive_attr& attr) {
  const dnnl::deconvolution_forward::desc d(p.prop, p.alg, p.src, p.weights, p.bias, p.dst, p.strides, p.dilations,
                                            p.pad_l, p.pad_r);
  return dnnl::deconvolution_forward::primitive_desc(d, attr, eng);
}

dnnl::convolution_backward_weights::primitive_desc conv_backward_weights_pd(dnnl::engine& eng, const ConvProblem& p,
                                                                            const dnnl::primitive_attr& attr) {
  ConvProblem fwd = p;
  fwd.prop = dnnl::prop_kind::forward_training;
  const dnnl::convolution_forward::primitive_desc hint(conv_desc(fwd), eng);
  const dnnl::convolution_backward_weights::desc d(p.alg, p.src, p.weights, p.bias, p.dst, p.strides, p.dilations,
                                                   p.pad_l, p.pad_r);
  return dnnl::convolution_backward_weights::primitive_desc(d, attr, eng, hint);
}

}  // namespace ms::cpu
