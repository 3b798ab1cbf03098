/* Modescope operator plugins: the C ABI between the engine and a shared library that adds ops.
 *
 * A plugin is a shared library that exports one function,
 *
 *   MODESCOPE_PLUGIN_EXPORT int modescope_register_ops_v1(const MsPluginHost* host, MsPluginRegistry* reg);
 *
 * which calls reg->add_op(reg, &def) once per op and returns 0 (nonzero: the load fails, with the
 * message given to host->set_load_error). The host keeps `host` alive for the life of the process;
 * the plugin stores it and calls back through it from its inference and kernel functions. Nothing
 * else crosses the boundary: a plugin links nothing from Modescope and includes only this header.
 *
 * Element types are ONNX TensorProto codes (MS_DTYPE_*). Shapes: rank -1 = unknown rank, a dim -1 =
 * unknown. An op's inference gets its inputs' types and fills its outputs' types; its CPU kernel gets
 * host tensors and asks the host for each output buffer (host->allocate_output), which the host
 * checks against what inference said for these inputs. Callbacks return 0 on success; on failure
 * they call host->set_error(call, message) and return nonzero.
 *
 * The version is in the symbol's name: a library built against another version of this header
 * exports modescope_register_ops_v<N> and is refused naming both versions.
 */
#ifndef MODESCOPE_PLUGIN_H
#define MODESCOPE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MODESCOPE_PLUGIN_ABI_VERSION 1
#define MODESCOPE_PLUGIN_MAX_RANK 8

#if defined(_WIN32)
#define MODESCOPE_PLUGIN_EXPORT __declspec(dllexport)
#else
#define MODESCOPE_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ONNX TensorProto element types. */
enum {
  MS_DTYPE_UNDEFINED = 0,
  MS_DTYPE_FLOAT = 1,
  MS_DTYPE_UINT8 = 2,
  MS_DTYPE_INT8 = 3,
  MS_DTYPE_INT32 = 6,
  MS_DTYPE_INT64 = 7,
  MS_DTYPE_BOOL = 9,
  MS_DTYPE_FLOAT16 = 10,
  MS_DTYPE_DOUBLE = 11,
  MS_DTYPE_BFLOAT16 = 16
};

/* Attribute kinds an op declares. */
enum { MS_ATTR_INT = 1, MS_ATTR_FLOAT = 2, MS_ATTR_STRING = 3 };

typedef struct MsTensorType {
  int32_t dtype;
  int32_t rank; /* -1: unknown */
  int64_t dims[MODESCOPE_PLUGIN_MAX_RANK];
} MsTensorType;

typedef struct MsTensor {
  int32_t dtype;
  int32_t rank;
  const int64_t* dims;
  const void* data; /* host memory, dense row-major */
} MsTensor;

/* One call of an op on one node (inference or kernel); opaque to the plugin. */
typedef struct MsCall MsCall;
typedef struct MsPluginRegistry MsPluginRegistry;

typedef struct MsPluginHost {
  uint32_t abi_version; /* MODESCOPE_PLUGIN_ABI_VERSION of the host */
  uint32_t size;        /* sizeof(MsPluginHost) of the host */
  /* The node's name (may be empty) and attributes; attr_* return 1 and set *out when present. */
  const char* (*node_name)(const MsCall* call);
  int (*attr_int)(const MsCall* call, const char* name, int64_t* out);
  int (*attr_float)(const MsCall* call, const char* name, float* out);
  const char* (*attr_string)(const MsCall* call, const char* name); /* NULL when absent */
  /* Kernels only: output `index`'s buffer with this type and shape, or NULL (the host has recorded why,
     e.g. the shape differs from the inferred one; the kernel returns nonzero). */
  void* (*allocate_output)(MsCall* call, int index, int32_t dtype, int32_t rank, const int64_t* dims);
  void (*set_error)(MsCall* call, const char* message);
  /* During modescope_register_ops_v1 only: why the plugin refuses to load. */
  void (*set_load_error)(MsPluginRegistry* reg, const char* message);
} MsPluginHost;

typedef int (*MsInferFn)(MsCall* call, const MsTensorType* inputs, int num_inputs, MsTensorType* outputs,
                         int num_outputs);
typedef int (*MsKernelFn)(MsCall* call, const MsTensor* inputs, int num_inputs, int num_outputs);

typedef struct MsAttrDef {
  const char* name;
  int32_t kind;     /* MS_ATTR_* */
  int32_t required; /* nonzero: a node without it is refused */
} MsAttrDef;

typedef struct MsOpDef {
  uint32_t size;                  /* sizeof(MsOpDef) */
  const char* domain;             /* e.g. "com.example"; never "" or "ai.onnx" for a new op */
  const char* name;               /* op type, e.g. "ScaledTanh" */
  int32_t min_inputs, max_inputs; /* max -1: variadic */
  int32_t min_outputs, max_outputs;
  const MsAttrDef* attrs;
  int32_t num_attrs;
  MsInferFn infer;        /* required: Graph mode plans memory from it */
  MsKernelFn cpu_kernel;  /* required */
  MsKernelFn cuda_kernel; /* optional, NULL: on a CUDA backend the CPU kernel runs with host copies */
} MsOpDef;

struct MsPluginRegistry {
  uint32_t abi_version;
  uint32_t size;
  void* impl;
  /* Adds one op; returns 0, or nonzero with the reason recorded (the load then fails). */
  int (*add_op)(MsPluginRegistry* reg, const MsOpDef* op);
};

typedef int (*MsRegisterOpsV1)(const MsPluginHost* host, MsPluginRegistry* reg);

#ifdef __cplusplus
}
#endif

#endif /* MODESCOPE_PLUGIN_H */
