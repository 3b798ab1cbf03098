// Shape plans of the LLM-era ops (see llm_internal.h): the checks both inference and the kernels run.
#include <cmath>

#include "engine/ops/llm_internal.h"

namespace ms::ops::llm {
namespace {

using std::string;
using std::to_string;

int64_t dim_at(Arg a, size_t i) { return a.dims && i < a.dims->size() ? (*a.dims)[i] : -1; }
bool conflict(int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; }

// Takes `d` into `into` when `into` is unknown; false when both are known and differ.
bool merge(int64_t& into, int64_t d) {
  if (conflict(into, d)) return false;
  if (into < 0) into = d;
  return true;
}

string want_rank(Arg a, const char* name, size_t rank) {
  if (!a.present || !a.dims || a.dims->size() == rank) return "";
  return string("input '") + name + "' must have rank " + to_string(rank) + ", got shape " + dims_text(*a.dims);
}

string dim_error(const char* name, Arg a, size_t axis, const string& expected) {
  return string("input '") + name + "' " + dims_text(*a.dims) + " has dim " + to_string(axis) + " = " +
         to_string(dim_at(a, axis)) + ", expected " + expected;
}

// Merges dim `axis` of `a` into `into` (the shared size called `what`).
string merge_dim(int64_t& into, Arg a, size_t axis, const char* name, const char* what) {
  if (merge(into, dim_at(a, axis))) return "";
  return dim_error(name, a, axis, to_string(into) + " (" + what + ")");
}

string rotary_input(const ir::Node& node, Arg x, RotaryPlan& p) {
  if (!x.dims) return "";
  if (x.dims->size() != 3 && x.dims->size() != 4)
    return "input 'X' must have rank 3 or 4, got shape " + dims_text(*x.dims);
  const Dims& d = *x.dims;
  p.four_d = d.size() == 4;
  p.batch = d[0];
  if (p.four_d) {
    p.heads = d[1];
    p.seq = d[2];
    p.head_size = d[3];
    return "";
  }
  const int64_t num_heads = node.attr_int("num_heads", 0);
  if (num_heads <= 0) return "attribute 'num_heads' (> 0) is required for a 3-D input 'X' " + dims_text(d);
  p.seq = d[1];
  p.heads = num_heads;
  if (d[2] >= 0 && d[2] % num_heads != 0)
    return "input 'X' hidden size " + to_string(d[2]) + " is not divisible by num_heads " + to_string(num_heads);
  p.head_size = d[2] < 0 ? -1 : d[2] / num_heads;
  return "";
}

string rotary_cache(Arg c, const char* name, Arg pos, const RotaryPlan& p) {
  if (!c.dims) return "";
  if (string e = want_rank(c, name, pos.present ? 2 : 3); !e.empty())
    return e + (pos.present ? " (position_ids given)" : " (no position_ids)");
  const int64_t half = p.rot_dim < 0 ? -1 : p.rot_dim / 2;
  if (conflict(c.dims->back(), half))
    return dim_error(name, c, c.dims->size() - 1, to_string(half) + " (rotary_embedding_dim / 2)");
  if (!pos.present && conflict(dim_at(c, 0), p.batch)) return dim_error(name, c, 0, to_string(p.batch) + " (batch)");
  if (!pos.present && conflict(dim_at(c, 1), p.seq)) return dim_error(name, c, 1, to_string(p.seq) + " (sequence)");
  return "";
}

string linear_attention_rule(const ir::Node& node, Arg decay, Arg beta, LinearAttentionPlan& p) {
  const string rule = node.attr_string("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    return "attribute 'update_rule' = '" + rule + "' is not one of linear, gated, delta, gated_delta";
  p.gating = rule == "gated" || rule == "gated_delta";
  p.delta = rule == "delta" || rule == "gated_delta";
  if (!node.has_attr("q_num_heads") || !node.has_attr("kv_num_heads"))
    return "attributes 'q_num_heads' and 'kv_num_heads' are required";
  p.q_heads = node.attr_int("q_num_heads", 0);
  p.kv_heads = node.attr_int("kv_num_heads", 0);
  if (p.q_heads <= 0 || p.kv_heads <= 0 || p.q_heads % p.kv_heads != 0)
    return "attribute 'q_num_heads' (" + to_string(p.q_heads) + ") must be a positive multiple of 'kv_num_heads' (" +
           to_string(p.kv_heads) + ")";
  if (p.gating != decay.present)
    return "update_rule '" + rule + (p.gating ? "' requires" : "' forbids") + " input 'decay'";
  if (p.delta != beta.present) return "update_rule '" + rule + (p.delta ? "' requires" : "' forbids") + " input 'beta'";
  return "";
}

string linear_attention_qkv(Arg q, Arg k, Arg v, LinearAttentionPlan& p) {
  const char* names[] = {"query", "key", "value"};
  const Arg args[] = {q, k, v};
  for (int i = 0; i < 3; ++i) {
    if (string e = want_rank(args[i], names[i], 3); !e.empty()) return e;
    if (string e = merge_dim(p.batch, args[i], 0, names[i], "batch"); !e.empty()) return e;
    if (string e = merge_dim(p.steps, args[i], 1, names[i], "sequence"); !e.empty()) return e;
  }
  const int64_t ql = dim_at(q, 2), kl = dim_at(k, 2), vl = dim_at(v, 2);
  if (ql >= 0 && ql % p.q_heads != 0)
    return "input 'query' last dim " + to_string(ql) + " is not divisible by q_num_heads " + to_string(p.q_heads);
  if (kl >= 0 && kl % p.kv_heads != 0)
    return "input 'key' last dim " + to_string(kl) + " is not divisible by kv_num_heads " + to_string(p.kv_heads);
  if (vl >= 0 && vl % p.kv_heads != 0)
    return "input 'value' last dim " + to_string(vl) + " is not divisible by kv_num_heads " + to_string(p.kv_heads);
  p.dk = ql >= 0 ? ql / p.q_heads : (kl >= 0 ? kl / p.kv_heads : -1);
  if (conflict(kl, p.dk < 0 ? -1 : p.dk * p.kv_heads))
    return dim_error("key", k, 2, to_string(p.dk * p.kv_heads) + " (kv_num_heads * d_k)");
  p.dv = vl >= 0 ? vl / p.kv_heads : -1;
  return "";
}

string linear_attention_gates(Arg decay, Arg beta, LinearAttentionPlan& p) {
  for (auto [a, name] : {std::pair{decay, "decay"}, std::pair{beta, "beta"}}) {
    if (string e = want_rank(a, name, 3); !e.empty()) return e;
    if (string e = merge_dim(p.batch, a, 0, name, "batch"); !e.empty()) return e;
    if (string e = merge_dim(p.steps, a, 1, name, "sequence"); !e.empty()) return e;
  }
  const int64_t dl = dim_at(decay, 2), bl = dim_at(beta, 2), hk = p.dk < 0 ? -1 : p.kv_heads * p.dk;
  if (dl >= 0) {
    if (dl != p.kv_heads && conflict(dl, hk))
      return dim_error("decay", decay, 2,
                       to_string(p.kv_heads) + " (kv_num_heads) or " + to_string(hk) + " (kv_num_heads * d_k)");
    p.decay_per_key = dl != p.kv_heads;
  }
  if (bl >= 0 && bl != p.kv_heads && bl != 1)
    return dim_error("beta", beta, 2, to_string(p.kv_heads) + " (kv_num_heads) or 1");
  p.beta_heads = bl >= 0 ? bl : 1;
  return "";
}

string linear_attention_state(Arg past, LinearAttentionPlan& p) {
  if (string e = want_rank(past, "past_state", 4); !e.empty()) return e;
  if (!past.dims) return "";
  const int64_t want[] = {p.batch, p.kv_heads, p.dk, p.dv};
  const char* what[] = {"batch", "kv_num_heads", "d_k", "d_v"};
  for (size_t i = 0; i < 4; ++i)
    if (conflict((*past.dims)[i], want[i]))
      return dim_error("past_state", past, i, to_string(want[i]) + " (" + what[i] + ")");
  return "";
}

}  // namespace

string dims_text(const Dims& d) {
  string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? "," : "") + (d[i] < 0 ? string("?") : to_string(d[i]));
  return s + "]";
}

string rms_plan(const ir::Node& node, Arg x, Arg scale, RmsPlan& p) {
  const int64_t stash = node.attr_int("stash_type", 1);
  if (stash != 1 && stash != 10 && stash != 11 && stash != 16)
    return "attribute 'stash_type' = " + to_string(stash) + " is not a float type";
  p.axis = -1;
  if (!x.dims) return "";
  const auto r = static_cast<int64_t>(x.dims->size());
  const int64_t a = node.attr_int("axis", -1);
  if (r == 0 || a < -r || a >= r)
    return "attribute 'axis' = " + to_string(a) + " is out of range for X " + dims_text(*x.dims);
  p.axis = a < 0 ? a + r : a;
  if (!scale.dims) return "";
  const Dims& s = *scale.dims;
  bool ok = s.size() <= x.dims->size();
  for (size_t j = 0; ok && j < s.size(); ++j) {
    const int64_t sd = s[s.size() - 1 - j];
    ok = sd == 1 || !conflict(sd, (*x.dims)[x.dims->size() - 1 - j]);
  }
  if (!ok) return "input 'scale' " + dims_text(s) + " does not broadcast to X " + dims_text(*x.dims);
  return "";
}

string rotary_plan(const ir::Node& node, Arg x, Arg cos, Arg sin, Arg pos, RotaryPlan& p) {
  p = RotaryPlan{};
  p.interleaved = node.attr_int("interleaved", 0) != 0;
  const int64_t rot = node.attr_int("rotary_embedding_dim", 0);
  if (rot < 0) return "attribute 'rotary_embedding_dim' must be >= 0, got " + to_string(rot);
  if (node.attr_int("num_heads", 0) < 0)
    return "attribute 'num_heads' must be >= 0, got " + to_string(node.attr_int("num_heads", 0));
  if (string e = rotary_input(node, x, p); !e.empty()) return e;
  p.rot_dim = rot > 0 ? rot : p.head_size;
  if (p.rot_dim >= 0 && p.rot_dim % 2 != 0)
    return "rotary dim " + to_string(p.rot_dim) + " (rotary_embedding_dim, or the head size when 0) must be even";
  if (p.head_size >= 0 && p.rot_dim > p.head_size)
    return "attribute 'rotary_embedding_dim' = " + to_string(rot) + " exceeds the head size " + to_string(p.head_size);
  if (string e = rotary_cache(cos, "cos_cache", pos, p); !e.empty()) return e;
  if (string e = rotary_cache(sin, "sin_cache", pos, p); !e.empty()) return e;
  if (cos.dims && sin.dims && cos.dims->size() == sin.dims->size())
    for (size_t i = 0; i < cos.dims->size(); ++i)
      if (conflict((*cos.dims)[i], (*sin.dims)[i]))
        return "input 'sin_cache' " + dims_text(*sin.dims) + " does not match cos_cache " + dims_text(*cos.dims);
  if (string e = want_rank(pos, "position_ids", 2); !e.empty()) return e;
  if (pos.dims && conflict((*pos.dims)[0], p.batch))
    return dim_error("position_ids", pos, 0, to_string(p.batch) + " (batch)");
  if (pos.dims && conflict((*pos.dims)[1], p.seq))
    return dim_error("position_ids", pos, 1, to_string(p.seq) + " (sequence)");
  return "";
}

string tensor_scatter_plan(const ir::Node& node, Arg past, Arg update, Arg idx, ScatterPlan& p) {
  const string mode = node.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular")
    return "attribute 'mode' must be 'linear' or 'circular', got '" + mode + "'";
  p.circular = mode == "circular";
  p.axis = -1;
  if (string e = want_rank(idx, "write_indices", 1); !e.empty()) return e;
  const Dims* pd = past.dims ? past.dims : update.dims;
  if (!pd) return "";
  const auto r = static_cast<int64_t>(pd->size());
  const int64_t a = node.attr_int("axis", -2);
  if (a < -r || a >= r)
    return "attribute 'axis' = " + to_string(a) + " is out of range for past_cache " + dims_text(*pd);
  p.axis = a < 0 ? a + r : a;
  if (p.axis == 0) return "attribute 'axis' = " + to_string(a) + " must not be the batch axis 0";
  if (past.dims && update.dims) {
    const Dims &pc = *past.dims, &up = *update.dims;
    if (up.size() != pc.size())
      return "input 'update' " + dims_text(up) + " must have the rank of past_cache " + dims_text(pc);
    for (size_t i = 0; i < pc.size(); ++i) {
      const bool seq = static_cast<int64_t>(i) == p.axis;
      if (seq ? (pc[i] >= 0 && up[i] > pc[i]) : conflict(pc[i], up[i]))
        return "input 'update' " + dims_text(up) + " does not fit past_cache " + dims_text(pc) + " (axis " +
               to_string(p.axis) + (seq ? " is longer)" : ", dim " + to_string(i) + " differs)");
    }
  }
  if (idx.dims && conflict((*idx.dims)[0], (*pd)[0]))
    return dim_error("write_indices", idx, 0, to_string((*pd)[0]) + " (batch of past_cache)");
  return "";
}

string linear_attention_plan(const ir::Node& node, Arg q, Arg k, Arg v, Arg past, Arg decay, Arg beta,
                             LinearAttentionPlan& p) {
  p = LinearAttentionPlan{};
  if (string e = linear_attention_rule(node, decay, beta, p); !e.empty()) return e;
  if (string e = linear_attention_qkv(q, k, v, p); !e.empty()) return e;
  if (string e = linear_attention_gates(decay, beta, p); !e.empty()) return e;
  if (string e = linear_attention_state(past, p); !e.empty()) return e;
  const float scale = node.attr_float("scale", 0.f);
  p.scale = scale != 0.f ? scale : (p.dk >= 0 ? 1.f / std::sqrt(static_cast<float>(p.dk)) : 0.f);
  return "";
}

string causal_conv_plan(const ir::Node& node, Arg x, Arg w, Arg bias, Arg past, CausalConvPlan& p) {
  p = CausalConvPlan{};
  const string act = node.attr_string("activation", "none");
  if (act != "none" && act != "silu" && act != "swish")
    return "attribute 'activation' = '" + act + "' is not one of none, silu, swish";
  p.silu = act != "none";
  const std::pair<Arg, const char*> ins[] = {{x, "input"}, {w, "weight"}, {past, "past_state"}};
  for (const auto& [a, name] : ins)
    if (string e = want_rank(a, name, 3); !e.empty()) return e;
  if (string e = want_rank(bias, "bias", 1); !e.empty()) return e;
  p.batch = dim_at(x, 0);
  p.channels = dim_at(x, 1);
  p.length = dim_at(x, 2);
  if (string e = merge_dim(p.channels, w, 0, "weight", "channels"); !e.empty()) return e;
  if (conflict(dim_at(w, 1), 1)) return dim_error("weight", w, 1, "1 (depthwise: channels, 1, k)");
  p.kernel = dim_at(w, 2);
  if (w.dims && p.kernel == 0) return "input 'weight' " + dims_text(*w.dims) + " has kernel size 0, expected >= 1";
  if (string e = merge_dim(p.channels, bias, 0, "bias", "channels"); !e.empty()) return e;
  if (string e = merge_dim(p.batch, past, 0, "past_state", "batch"); !e.empty()) return e;
  if (string e = merge_dim(p.channels, past, 1, "past_state", "channels"); !e.empty()) return e;
  const int64_t carry = dim_at(past, 2);
  if (conflict(carry, p.kernel < 0 ? -1 : p.kernel - 1))
    return dim_error("past_state", past, 2, to_string(p.kernel - 1) + " (kernel size - 1)");
  if (p.kernel < 0 && carry >= 0) p.kernel = carry + 1;
  return "";
}

}  // namespace ms::ops::llm
