/* A Modescope operator plugin in plain C: com.example.ScaledTanh, y = alpha * tanh(beta * x) on f32
 * tensors of any shape (attributes alpha and beta, floats, both 1 by default).
 *
 * It includes only engine/plugin/modescope_plugin.h and links nothing from Modescope:
 *   modescope-cli run model.onnx --plugin build/samples/libmodescope_scaled_tanh.so
 */
#include <math.h>
#include <stdint.h>

#include "engine/plugin/modescope_plugin.h"

static const MsPluginHost* host;

static float attr_or(const MsCall* call, const char* name, float fallback) {
  float v = fallback;
  host->attr_float(call, name, &v);
  return v;
}

/* The output has the input's type and shape. */
static int scaled_tanh_infer(MsCall* call, const MsTensorType* inputs, int num_inputs, MsTensorType* outputs,
                             int num_outputs) {
  (void)num_inputs;
  (void)num_outputs;
  if (inputs[0].dtype != MS_DTYPE_FLOAT) {
    host->set_error(call, "ScaledTanh takes float32 input");
    return 1;
  }
  outputs[0] = inputs[0];
  return 0;
}

static int scaled_tanh_cpu(MsCall* call, const MsTensor* inputs, int num_inputs, int num_outputs) {
  (void)num_inputs;
  (void)num_outputs;
  const MsTensor* x = &inputs[0];
  const float alpha = attr_or(call, "alpha", 1.0f);
  const float beta = attr_or(call, "beta", 1.0f);
  float* y = (float*)host->allocate_output(call, 0, MS_DTYPE_FLOAT, x->rank, x->dims);
  if (!y) return 1;
  int64_t n = 1;
  for (int32_t i = 0; i < x->rank; ++i) n *= x->dims[i];
  const float* in = (const float*)x->data;
  for (int64_t i = 0; i < n; ++i) y[i] = alpha * tanhf(beta * in[i]);
  return 0;
}

static const MsAttrDef scaled_tanh_attrs[] = {{"alpha", MS_ATTR_FLOAT, 0}, {"beta", MS_ATTR_FLOAT, 0}};

MODESCOPE_PLUGIN_EXPORT int modescope_register_ops_v1(const MsPluginHost* h, MsPluginRegistry* reg) {
  if (h->abi_version != MODESCOPE_PLUGIN_ABI_VERSION) return 1;
  host = h;
  MsOpDef def = {0};
  def.size = sizeof(MsOpDef);
  def.domain = "com.example";
  def.name = "ScaledTanh";
  def.min_inputs = def.max_inputs = 1;
  def.min_outputs = def.max_outputs = 1;
  def.attrs = scaled_tanh_attrs;
  def.num_attrs = 2;
  def.infer = scaled_tanh_infer;
  def.cpu_kernel = scaled_tanh_cpu;
  return reg->add_op(reg, &def);
}
