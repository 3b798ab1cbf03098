// The blocked activation layout Graph mode's convs leave between them (the O2 conv-layout pass:
// dst_blocked on the producing node, nChw<layout_block>c). Its channels are padded up to a multiple
// of the block with zeros, as oneDNN's blocked layouts are, so such a value takes more bytes than
// its shape says where the channel count is not a multiple of the block (MobileNetV2's 24 channels
// in nChw16c: 32 channels' bytes).
// layout_block 0: the block is all the channels, nChw<C>c, which is NHWC, never padded. A device
// backend's channels-last pass marks it (cuDNN's tensor-core layout); on a CPU with AMX the conv-layout
// pass takes it for a bf16 graph (oneDNN's AMX convolutions take NHWC only).
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/graph.h"

namespace ms::ops {

// layout_block 0: channels-last (NHWC).
inline bool channels_last(const ir::Node& n) {
  return n.attr_int("layout_block", 16) == 0 &&
         (n.attr_int("src_blocked", 0) || n.attr_int("dst_blocked", 0) || n.attr_int("residual_blocked", 0));
}

// The channel block of output `output` of `producer` where it leaves it blocked, else 0 (channels-last:
// the channel count, dims[1]).
inline int64_t blocked_output_block(const ir::Node& producer, size_t output, const std::vector<int64_t>& dims) {
  if (output != 0 || dims.size() != 4 || producer.attr_int("dst_blocked", 0) == 0) return 0;
  const int64_t block = producer.attr_int("layout_block", 16);
  if (block == 0) return dims[1] > 0 ? dims[1] : 0;
  return block > 0 ? block : 0;
}

// Channels as laid out: `c` rounded up to the block (0: plain, `c` itself).
inline int64_t padded_channels(int64_t c, int64_t block) { return block > 0 ? (c + block - 1) / block * block : c; }

// Bytes of output `output` of `producer` with these dims as it lies in memory.
inline uint64_t value_bytes_in_memory(const ir::Node& producer, size_t output, const std::vector<int64_t>& dims,
                                      size_t elem_bytes) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  const int64_t block = blocked_output_block(producer, output, dims);
  if (block > 0 && dims[1] > 0) n = n / dims[1] * padded_channels(dims[1], block);
  return static_cast<uint64_t>(n) * elem_bytes;
}

}  // namespace ms::ops
