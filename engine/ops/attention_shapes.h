// Shape rules of the ONNX Attention op (opset 23+), shared by its schema (static dims, -1 unknown)
// and its CPU kernel (concrete dims): one place decides what is valid and what the outputs are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::ops {

// Dims of the inputs; nullptr = input left out (or rank unknown, for the schema).
struct AttentionInputDims {
  const std::vector<int64_t>* q = nullptr;
  const std::vector<int64_t>* k = nullptr;
  const std::vector<int64_t>* v = nullptr;
  const std::vector<int64_t>* mask = nullptr;
  const std::vector<int64_t>* past_key = nullptr;
  const std::vector<int64_t>* past_value = nullptr;
  const std::vector<int64_t>* nonpad = nullptr;
  bool has_mask = false, has_past_key = false, has_past_value = false, has_nonpad = false;
};

// The 4-D view every Attention computes in; -1 = unknown (schema only).
struct AttentionGeometry {
  bool three_d = false;
  int64_t batch = -1, q_heads = -1, kv_heads = -1;
  int64_t q_len = -1, kv_len = -1, past_len = 0, total_len = -1;
  int64_t head_size = -1, v_head_size = -1;
};

// The attributes after validation.
struct AttentionAttrs {
  int64_t is_causal = 0;
  int64_t mode = 0;               // qk_matmul_output_mode 0..3
  int64_t softmax_precision = 0;  // ONNX dtype code, 0 = not set
  int64_t left_window = -1, right_window = -1;
  bool has_scale = false;
  float scale = 0, softcap = 0;
};

// Reads and checks the attributes for this opset; the error names the attribute ("" when valid).
std::string attention_attrs(const ir::Node& node, int64_t opset, AttentionAttrs& out);

// Checks the input dims (the unknown ones are skipped) and fills the geometry; the error names the
// input ("" when valid).
std::string attention_geometry(const ir::Node& node, int64_t opset, const AttentionInputDims& in,
                               AttentionGeometry& out);

// FlexAttention (ai.onnx.preview): 4-D Q (B, Hq, L, E), K (B, Hkv, S, E), V (B, Hkv, S, Ev) with Hq a
// multiple of Hkv; fills batch, heads, lengths and head sizes ("" when valid, else the error).
std::string flex_attention_geometry(const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                                    const std::vector<int64_t>& v, AttentionGeometry& out);

// Output dims: Y, present_key, present_value, qk_matmul_output.
std::vector<int64_t> attention_y_dims(const AttentionGeometry& g);
std::vector<int64_t> attention_present_dims(const AttentionGeometry& g, bool value);
std::vector<int64_t> attention_qk_dims(const AttentionGeometry& g);

}  // namespace ms::ops
