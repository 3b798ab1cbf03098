// Conv layout (O2): 2-D f32 convolutions run with their activations in the layout the oneDNN
// primitive prefers (blocked nChw8c/16c for the jit direct convolutions instead of the gemm-based
// convolution over plain nchw). Plain Convs become FusedConv (no post-ops) so one kernel carries the
// choice. Then the layout propagates: a value made by such a conv and read only by such convs (as
// the activation or the residual) stays blocked in the arena, so the reorders happen only at the
// region's boundaries (eager mode must reorder around every conv). The block is the one oneDNN's jit
// convs take on this CPU (layout_block: 16 with AVX-512, nChw16c; 8 with AVX2 or less, nChw8c; a
// fixed nChw16c sent every AVX2 conv of a region to oneDNN's reference conv, MobileNetV2 at 19 s a
// run). A blocked value whose channels are not a multiple of the block (between convs only) has its
// channels padded to the block, and its buffer the padded size; blocked values are never graph
// outputs nor read by subgraphs.
// On a CPU whose bf16 products run on matrix units (AMX), a graph with bf16 convs (an AMP graph's) is
// laid out channels-last instead (layout_block 0: NHWC, never padded): oneDNN's AMX convolutions
// (brgconv) take only NHWC, and on the blocked layouts it runs its AVX-512-BF16 direct convs, 15-20x
// slower there (64->64 3x3 at 56x56, 2 threads: 4.0 TFLOP/s against 0.21). The f32 convs of such a
// graph (the layer that reads the input) join the region (oneDNN's brgconv f32 kernels take NHWC).
// Squeeze-excite blocks index whole channel blocks and stay outside such a region.
// Pools between convs (a ResNet stem's MaxPool, the GlobalAveragePool after the last block) become
// FusedPool so the region does not end there: the pool reads and writes the blocked layout, and a
// FusedPool left with no blocked operand goes back to the plain op. A FusedSqueezeExcite (the
// fuse-squeeze-excite pass's) between a depthwise conv and a 1x1 conv keeps the region going too.
#include "engine/compiler/passes/passes.h"
#include "engine/compiler/rewrite.h"
#include "engine/compiler/work.h"
#include "engine/ops/fused.h"

#include <cctype>
#include <cstdlib>
#include <string>
#include <unordered_map>

namespace ms::compiler {
namespace {

// The channel block of oneDNN's jit convs on this CPU: 16 where it runs its AVX-512 kernels
// (avx512_core: F, BW, VL, DQ), 8 on AVX2 and below, or where ONEDNN_MAX_CPU_ISA (DNNL_MAX_CPU_ISA)
// caps it below AVX-512.
int64_t onednn_channel_block() {
#if defined(__x86_64__) || defined(__i386__)
  const bool avx512_core = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  if (!avx512_core) return 8;
  for (const char* var : {"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    std::string isa(v);
    for (char& ch : isa) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    const bool wide = isa == "ALL" || isa.rfind("AVX512", 0) == 0 || isa.rfind("AMX", 0) == 0;
    return wide ? 16 : 8;
  }
  return 16;
#else
  return 16;
#endif
}

// MODESCOPE_CHANNELS_LAST=all: f32 graphs channels-last too (oneDNN's brgconv f32 kernels), to
// measure against the blocked layouts.
bool channels_last_f32() {
  static const bool all = [] {
    const char* v = std::getenv("MODESCOPE_CHANNELS_LAST");
    return v && std::string(v) == "all";
  }();
  return all;
}

class ConvLayout final : public Pass {
 public:
  ConvLayout(bool bf16_convs, bool bf16_channels_last)
      : bf16_convs_(bf16_convs), bf16_channels_last_(bf16_channels_last) {}
  std::string name() const override { return "ConvLayout"; }
  std::string argument() const override { return "conv-layout"; }
  std::string description() const override {
    return "2-D f32 convs (and bf16 ones where the CPU computes bf16) run on oneDNN's preferred (blocked) "
           "activation layout, reordered at the op; channels-last (NHWC) where bf16 convs run on AMX";
  }
  bool runs_on_subgraphs() const override { return true; }
  Status run(ir::Graph& g) override {
    bool any = false;
    bool spent = false;                            // take_rewrite() said no: no more layout choices in this pass
    int64_t bf16_convs = 0, f32_convs = 0;         // the convs chosen, by type
    work().nodes_visited += 3 * g.nodes().size();  // the conv, pool and ConvTranspose scans
    std::set<uint64_t> from_plain;                 // plain Convs made FusedConv here (no post-ops, no residual)
    for (auto& n : g.nodes()) {
      const bool plain_conv = n.domain.empty() && n.op_type == "Conv";
      const bool fused_conv = n.domain == ops::kFusedDomain && n.op_type == "FusedConv";
      if (!(plain_conv || fused_conv) || n.inputs.empty() || n.outputs.size() != 1) continue;
      const ir::Value* x = g.value(n.inputs[0]);
      const ir::Value* y = g.value(n.outputs[0]);
      const bool dtype_ok = x && (x->type.dtype == DType::F32 || (bf16_convs_ && x->type.dtype == DType::BF16));
      if (!dtype_ok || !y || !x->type.is_static() || x->type.dims->size() != 4 || !y->type.is_static()) continue;
      if (!take(spent)) break;
      if (plain_conv) {
        n.op_type = "FusedConv";
        n.domain = ops::kFusedDomain;
        from_plain.insert(n.id.value);
      }
      n.attrs["activation_layout"] = ir::Attribute(std::string("blocked"));
      ++(x->type.dtype == DType::BF16 ? bf16_convs : f32_convs);
      any = true;
    }
    // Pool candidates: single-output f32 (or bf16 where bf16 convs block) 4-D static pools (MaxPool
    // without Indices).
    for (auto& n : g.nodes()) {
      if (!n.domain.empty() || n.outputs.size() != 1 || n.inputs.size() != 1 ||
          (n.op_type != "MaxPool" && n.op_type != "GlobalAveragePool" && n.op_type != "GlobalMaxPool"))
        continue;
      const ir::Value* x = g.value(n.inputs[0]);
      const ir::Value* y = g.value(n.outputs[0]);
      const bool pool_dtype_ok = x && (x->type.dtype == DType::F32 || (bf16_convs_ && x->type.dtype == DType::BF16));
      if (!pool_dtype_ok || !y || !x->type.is_static() || x->type.dims->size() != 4 || !y->type.is_static() ||
          (n.op_type == "MaxPool" && n.attr_int("storage_order", 0) != 0))
        continue;
      if (!take(spent)) break;
      n.attrs["pool"] = ir::Attribute(n.op_type);
      n.op_type = "FusedPool";
      n.domain = ops::kFusedDomain;
      any = true;
    }
    if (any) fold_casts_into_pools(g, spent);
    if (any && !g.opsets.count(ops::kFusedDomain)) g.opsets[ops::kFusedDomain] = 1;
    // The region marks follow from the convs and pools chosen above (not rewrites of their own).
    const bool nhwc = (bf16_channels_last_ && bf16_convs > f32_convs) || channels_last_f32();
    const int64_t block = nhwc ? 0 : onednn_channel_block();
    if (any) propagate(g, block);
    if (any && unblock_small_lone(g, spent)) propagate(g, block);
    if (any) unblock_lone_pointwise(g, from_plain, spent);
    any = block_transposed(g, spent) || any;
    return Status::ok();
  }

 private:
  bool bf16_convs_;          // bf16 convs may be blocked too (oneDNN has native bf16 convs on this backend)
  bool bf16_channels_last_;  // bf16 products on matrix units: a graph with bf16 convs goes channels-last

  // One rewrite from take_rewrite(); once refused (`spent`), none for the rest of the pass.
  static bool take(bool& spent) {
    if (!spent && !take_rewrite()) spent = true;
    return !spent;
  }

  static bool is_blocked_conv(const ir::Node& n) {
    return n.domain == ops::kFusedDomain && n.op_type == "FusedConv" &&
           n.attr_string("activation_layout", "") == "blocked";
  }

  static bool is_fused_pool(const ir::Node& n) { return n.domain == ops::kFusedDomain && n.op_type == "FusedPool"; }

  // FusedSqueezeExcite reads and writes either layout (its kernel's passes index both).
  static bool is_squeeze_excite(const ir::Node& n) {
    return n.domain == ops::kFusedDomain && n.op_type == "FusedSqueezeExcite";
  }

  // May read input i / write its output in the blocked layout (block 0: channels-last, which the
  // squeeze-excite kernel does not take).
  static bool takes_blocked(const ir::Node& n, size_t i, int64_t block) {
    return (is_blocked_conv(n) && (i == 0 || i == 3)) ||
           ((is_fused_pool(n) || (block != 0 && is_squeeze_excite(n))) && i == 0);
  }

  // A Cast to bf16 that alone reads a pool's f32 result folds into the pool (`to`): in a bf16 graph the
  // layer that reads the input stays f32 and so does the MaxPool after it (amp-cast: pooling commutes
  // with rounding), and the Cast after them would end the blocked region where the bf16 convs start
  // (a ResNet-50 stem's result reordered to plain, cast, and reordered back by both of the two convs
  // that read it). The pool rounds its result as the Cast did, in the layout its readers want.
  static void fold_casts_into_pools(ir::Graph& g, bool& spent) {
    const Uses uses = compute_uses(g);
    const auto prod = producer_index(g);
    std::set<uint64_t> dead;
    for (auto& c : g.nodes()) {
      // Rounding to nearest as the pool's reorder does: a pass's Cast (round_mode "nearest") or any
      // from opset 19 on (before it ONNX's f32 -> bf16 Cast drops the low bits).
      const auto opset = g.opsets.find("");
      const bool nearest =
          c.attr_string("round_mode", "") == "nearest" || (opset != g.opsets.end() && opset->second >= 19);
      if (!c.domain.empty() || c.op_type != "Cast" || !c.has_input(0) || c.outputs.size() != 1 ||
          c.attr_int("to", 0) != dtype_to_onnx(DType::BF16) || !nearest)
        continue;
      const std::string pooled = c.inputs[0];
      auto p = prod.find(pooled);
      if (p == prod.end() || uses.of(pooled) != 1 || !uses.only_plain(pooled)) continue;
      ir::Node& pool = g.nodes()[p->second];
      const ir::Value* v = g.value(pooled);
      if (!is_fused_pool(pool) || pool.attrs.count("to") || !v || v->type.dtype != DType::F32) continue;
      if (!take(spent)) break;
      pool.attrs["to"] = ir::Attribute(static_cast<int64_t>(dtype_to_onnx(DType::BF16)));
      pool.outputs[0] = c.outputs[0];
      g.value(c.outputs[0])->producer = pool.id;
      g.erase_value(pooled);
      dead.insert(c.id.value);
    }
    erase_nodes(g, dead);
  }

  // A conv (not grouped) of less than 5 MFLOPs that shares its blocked region with no other conv
  // (alone between reorders, or with pools only): oneDNN's direct conv on channels padded to 16, with
  // its setup and the reorders, is slower than the gemm-based one over plain nchw. Measured on single
  // convs + ReLU at batch 1 (2 cores): 1->6 5x5 at 32x32 30 us plain against 35 blocked, 6->16 5x5
  // at 14x14 24 against 28, 16->32 3x3 at 16x16 51 against 59, 32->32 3x3 at 16x16 70 against 89
  // (3->16 3x3 at 32x32, 28 against 23, is the exception); from about 14 MFLOPs on blocked wins
  // (64->64 3x3 at 14x14: 120 against 102 us). LeNet-5's convs are such: its Graph-mode run went
  // from 92 to 45 us. In a region with other convs the reorders are shared and it stays blocked
  // (MobileNetV2 at 64x64: its small 1x1 convs plain cost 1.4x -> 1.2x over PyNative).
  static bool unblock_small_lone(ir::Graph& g, bool& spent) {
    std::unordered_map<std::string, size_t> producer;
    std::unordered_map<std::string, std::vector<size_t>> readers;
    auto& nodes = g.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (const auto& o : nodes[i].outputs) producer[o] = i;
      for (const auto& in : nodes[i].inputs)
        if (!in.empty()) readers[in].push_back(i);
    }
    auto blocked_in = [](const ir::Node& n, size_t i) {
      return (i == 0 && n.attr_int("src_blocked", 0)) || (i == 3 && n.attr_int("residual_blocked", 0));
    };
    std::vector<size_t> flip;
    for (size_t s = 0; s < nodes.size(); ++s) {
      const ir::Node& n = nodes[s];
      if (!is_blocked_conv(n) || n.inputs.size() < 2 || n.outputs.size() != 1) continue;
      const ir::Value* w = g.value(n.inputs[1]);
      const ir::Value* y = g.value(n.outputs[0]);
      if (!w || !y || !w->type.is_static() || !y->type.is_static() ||
          !ops::small_dense_conv(n.attr_int("group", 1), *w->type.dims, numel(*y->type.dims)))
        continue;
      // Its region: nodes joined by blocked values, through pools.
      std::set<size_t> seen{s};
      std::vector<size_t> todo{s};
      bool other_conv = false;
      while (!todo.empty() && !other_conv) {
        const size_t c = todo.back();
        todo.pop_back();
        const ir::Node& cn = nodes[c];
        std::vector<size_t> next;
        for (size_t i = 0; i < cn.inputs.size(); ++i)
          if (blocked_in(cn, i) && producer.count(cn.inputs[i])) next.push_back(producer[cn.inputs[i]]);
        if (cn.attr_int("dst_blocked", 0))
          for (size_t r : readers[cn.outputs[0]]) next.push_back(r);
        for (size_t x : next) {
          if (!seen.insert(x).second) continue;
          if (is_blocked_conv(nodes[x])) other_conv = true;
          todo.push_back(x);
        }
      }
      if (!other_conv) {
        if (!take(spent)) break;
        flip.push_back(s);
      }
    }
    for (size_t s : flip) {
      nodes[s].attrs["activation_layout"] = ir::Attribute(std::string("plain"));
      for (const char* a : {"src_blocked", "dst_blocked", "residual_blocked", "layout_block"}) nodes[s].attrs.erase(a);
    }
    return !flip.empty();
  }

  // A plain 1x1 conv (no post-ops) with no blocked operand or result would reorder its input and its
  // output for a kernel no faster than the gemm-based one over plain nchw: it keeps the plain layout.
  // Measured on a ResNet-50 batch-8 training step (2 cores), where BatchNorm in training mode
  // separates every conv: 36 such 1x1 convs 197 ms plain against 263 ms blocked; the 3x3 ones
  // 181 ms against 146 ms.
  static void unblock_lone_pointwise(ir::Graph& g, const std::set<uint64_t>& from_plain, bool& spent) {
    for (auto& n : g.nodes()) {
      if (!from_plain.count(n.id.value) || !is_blocked_conv(n) || n.attrs.count("src_blocked") ||
          n.attrs.count("dst_blocked") || n.attrs.count("residual_blocked") || n.inputs.size() < 2)
        continue;
      const ir::Value* w = g.value(n.inputs[1]);
      if (!w || !w->type.is_static() || w->type.dims->size() != 4 || (*w->type.dims)[2] != 1 || (*w->type.dims)[3] != 1)
        continue;
      if (!take(spent)) break;
      n.attrs["activation_layout"] = ir::Attribute(std::string("plain"));
    }
  }

  // A ConvTranspose (in a training step: the input gradient of a conv) with a kernel wider than 1x1
  // runs oneDNN's direct kernel on the blocked layout, reordered at the op: over plain nchw it takes
  // the gemm-based one. ResNet-50 batch-8 training step: its 16 3x3 ones 200 -> 132 ms; the 1x1
  // ones stay plain (149 ms, 167 ms blocked).
  static bool block_transposed(ir::Graph& g, bool& spent) {
    bool any = false;
    for (auto& n : g.nodes()) {
      if (!n.domain.empty() || n.op_type != "ConvTranspose" || n.inputs.size() < 2 || n.outputs.size() != 1) continue;
      const ir::Value* x = g.value(n.inputs[0]);
      const ir::Value* w = g.value(n.inputs[1]);
      if (!x || !w || x->type.dtype != DType::F32 || !x->type.is_static() || x->type.dims->size() != 4 ||
          !w->type.is_static() || w->type.dims->size() != 4 || ((*w->type.dims)[2] == 1 && (*w->type.dims)[3] == 1))
        continue;
      if (!take(spent)) break;
      n.attrs["activation_layout"] = ir::Attribute(std::string("blocked"));
      any = true;
    }
    return any;
  }

  // oneDNN's jit grouped (depthwise) convs take one layout on both sides: a blocked input with a
  // plain result (or the reverse) falls to its reference conv (EfficientNet's depthwise convs, whose
  // results go to the squeeze-excite pool and Mul, ran at 0.3 GFLOP/s). Such a conv keeps its input
  // and its result blocked together or neither; dropping one may leave another grouped conv with
  // one side blocked, hence the fixpoint (each round removes a value, so it ends).
  static void keep_grouped_alike(const ir::Graph& g, std::set<std::string>& blocked) {
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& n : g.nodes()) {
        if (!is_blocked_conv(n) || n.attr_int("group", 1) == 1 || n.inputs.empty()) continue;
        const bool in = blocked.count(n.inputs[0]) > 0, out = blocked.count(n.outputs[0]) > 0;
        if (in == out) continue;
        blocked.erase(in ? n.inputs[0] : n.outputs[0]);
        changed = true;
      }
    }
  }

  static void propagate(ir::Graph& g, int64_t block) {
    const Uses uses = compute_uses(g);
    // For each value: can it stay blocked as far as its readers go (readers_ok), and are those readers
    // all blocked convs, as their activation or residual (conv_readers: then its channels need not be
    // a multiple of the block)?
    std::unordered_map<std::string, bool> readers_ok, conv_readers;
    auto all_of = [](std::unordered_map<std::string, bool>& m, const std::string& v, bool ok) {
      auto [it, fresh] = m.emplace(v, ok);
      if (!fresh) it->second = it->second && ok;
    };
    for (const auto& n : g.nodes()) {
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const std::string& v = n.inputs[i];
        if (v.empty()) continue;
        all_of(readers_ok, v, takes_blocked(n, i, block));
        all_of(conv_readers, v, is_blocked_conv(n) && (i == 0 || i == 3));
      }
    }
    std::set<std::string> blocked;
    for (const auto& n : g.nodes()) {
      if (!(is_blocked_conv(n) || is_fused_pool(n) || (block != 0 && is_squeeze_excite(n))) || n.outputs.size() != 1)
        continue;
      const std::string& v = n.outputs[0];
      const ir::Value* val = g.value(v);
      auto it = readers_ok.find(v);
      if (!val || !val->type.is_static() || val->type.dims->size() != 4 || it == readers_ok.end() || !it->second ||
          !uses.only_plain(v))
        continue;
      // Channels not a multiple of the block: oneDNN's blocked layout pads them with zeros (the value
      // takes the padded bytes in the arena: ops::value_bytes_in_memory). Between convs only: the pool
      // and squeeze-excite kernels index whole blocks. MobileNetV2's and EfficientNet-B0's 24- and
      // 40-channel stages reordered to plain and back around every block before.
      if (block != 0 && (*val->type.dims)[1] % block != 0 && !(is_blocked_conv(n) && conv_readers[v])) continue;
      blocked.insert(v);
    }
    keep_grouped_alike(g, blocked);
    for (auto& n : g.nodes()) {
      const bool pool = is_fused_pool(n), conv = is_blocked_conv(n);
      if (!conv && !pool && !is_squeeze_excite(n)) continue;
      auto mark = [&](const char* attr, bool on) {
        if (on)
          n.attrs[attr] = ir::Attribute(int64_t{1});
        else
          n.attrs.erase(attr);
      };
      mark("src_blocked", !n.inputs.empty() && blocked.count(n.inputs[0]));
      if (conv) mark("residual_blocked", n.inputs.size() > 3 && blocked.count(n.inputs[3]));
      mark("dst_blocked", blocked.count(n.outputs[0]) > 0);
      const bool any_blocked =
          n.attrs.count("src_blocked") || n.attrs.count("dst_blocked") || n.attrs.count("residual_blocked");
      if (any_blocked)
        n.attrs["layout_block"] = ir::Attribute(block);
      else
        n.attrs.erase("layout_block");
      if (pool && !n.attrs.count("src_blocked") && !n.attrs.count("dst_blocked") && !n.attrs.count("to")) {
        // Nothing blocked around it: the plain op (same id, so the pass did not change it).
        n.op_type = n.attr_string("pool", "");
        n.domain.clear();
        n.attrs.erase("pool");
      }
    }
  }
};

}  // namespace

PassPtr make_conv_layout_pass(bool bf16_convs, bool bf16_channels_last) {
  return std::make_unique<ConvLayout>(bf16_convs, bf16_channels_last);
}

}  // namespace ms::compiler
