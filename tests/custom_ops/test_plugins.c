/* Plugins for the error cases, one library per TEST_PLUGIN_* definition (tests/custom_ops/CMakeLists.txt):
 *   NO_SYMBOL  exports no registration function
 *   V2         exports the registration function of another ABI version
 *   BAD_OUTPUT com.example.test.BadShape / BadType: kernels that ask for an output unlike inference's
 *   DUP_A/B    both add com.example.test.Dup
 *   BUILTIN    adds Relu, an op the engine has
 */
#include "engine/plugin/modescope_plugin.h"

static const MsPluginHost* host;

static int same_as_input(MsCall* call, const MsTensorType* in, int nin, MsTensorType* out, int nout) {
  (void)call;
  (void)nin;
  (void)nout;
  out[0] = in[0];
  return 0;
}

static int copy_kernel(MsCall* call, const MsTensor* in, int nin, int nout) {
  (void)nin;
  (void)nout;
  float* y = (float*)host->allocate_output(call, 0, in[0].dtype, in[0].rank, in[0].dims);
  if (!y) return 1;
  int64_t n = 1;
  for (int32_t i = 0; i < in[0].rank; ++i) n *= in[0].dims[i];
  for (int64_t i = 0; i < n; ++i) y[i] = ((const float*)in[0].data)[i];
  return 0;
}

/* Drops the last dim. */
static int bad_shape_kernel(MsCall* call, const MsTensor* in, int nin, int nout) {
  (void)nin;
  (void)nout;
  return host->allocate_output(call, 0, in[0].dtype, in[0].rank - 1, in[0].dims) ? 0 : 1;
}

static int bad_type_kernel(MsCall* call, const MsTensor* in, int nin, int nout) {
  (void)nin;
  (void)nout;
  return host->allocate_output(call, 0, MS_DTYPE_INT64, in[0].rank, in[0].dims) ? 0 : 1;
}

static int add(MsPluginRegistry* reg, const char* domain, const char* name, MsKernelFn kernel) {
  MsOpDef def = {0};
  def.size = sizeof(MsOpDef);
  def.domain = domain;
  def.name = name;
  def.min_inputs = def.max_inputs = 1;
  def.min_outputs = def.max_outputs = 1;
  def.infer = same_as_input;
  def.cpu_kernel = kernel;
  return reg->add_op(reg, &def);
}

#if defined(TEST_PLUGIN_NO_SYMBOL)
MODESCOPE_PLUGIN_EXPORT int modescope_something_else(void) { return 0; }
#elif defined(TEST_PLUGIN_V2)
MODESCOPE_PLUGIN_EXPORT int modescope_register_ops_v2(const MsPluginHost* h, MsPluginRegistry* reg) {
  host = h;
  return add(reg, "com.example.test", "FromTheFuture", copy_kernel);
}
#else
MODESCOPE_PLUGIN_EXPORT int modescope_register_ops_v1(const MsPluginHost* h, MsPluginRegistry* reg) {
  host = h;
#if defined(TEST_PLUGIN_BAD_OUTPUT)
  if (add(reg, "com.example.test", "BadShape", bad_shape_kernel)) return 1;
  return add(reg, "com.example.test", "BadType", bad_type_kernel);
#elif defined(TEST_PLUGIN_DUP_A) || defined(TEST_PLUGIN_DUP_B)
  return add(reg, "com.example.test", "Dup", copy_kernel);
#elif defined(TEST_PLUGIN_BUILTIN)
  return add(reg, "", "Relu", copy_kernel);
#endif
}
#endif
