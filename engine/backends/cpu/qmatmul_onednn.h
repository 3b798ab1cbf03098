// The integer matmul of MatMulInteger and QLinearMatMul (and the folded QDQ matmuls) through oneDNN's
// int8 matmul, with results equal to the reference loops bit for bit.
//
// Without VNNI (AVX2, AVX-512 before Cascade Lake) oneDNN multiplies u8 x s8 with vpmaddubsw, which
// adds the two products of each pair of adjacent k into a saturating int16: |a0 b0 + a1 b1| can
// reach 255 * 256 > 32767, so the int32 sums come out wrong. There the weights are split once
// (cached by their buffer, like the f32 matmul's reordered weights): a part whose pairs of rows hold
// |b0| + |b1| <= 128 in every column (the most 255 * 128 = 32640 a pair can give: exact on every
// ISA), run by oneDNN, plus the rare excess entries, added by a loop over each row. Zero points are
// not handed to oneDNN (its zero-point paths are slow here and take no per-column weights zero
// points): (a - za)(b - zb) = ab - za colsum(b) - zb rowsum(a) + K za zb, in wrapping int32 as the
// reference loops compute. With VNNI or AMX (the primitive's implementation says which) the products
// cannot saturate and the weights run whole: the QDQ transformer encoder's int8 matmuls took two
// oneDNN matmuls each on a VNNI CPU before ("int8-split2"), one now ("int8-whole").
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/runtime/kernel.h"

namespace ms::cpu::quant {

// acc[rows, N] = (A - za[row % za.size()]) x (B - zb[col]), A uint8/int8 [rows, K] row-major, B a
// uint8/int8 2-D [K, N] (usually a constant: its split is cached), za holding 1 value or one per row
// of A's last matrix, zb 1 or N values. Unsupported when B is not 2-D 8-bit, K is 0 or oneDNN has no
// int8 matmul on this CPU: the caller runs its loops then.
Status int8_matmul_acc(runtime::KernelContext& ctx, const Tensor& a, int64_t rows, const Tensor& b,
                       const std::vector<int32_t>& za, const std::vector<int32_t>& zb, int32_t* acc);

// Tests: force the split (true) or whole weights (false) whatever the CPU, or give the choice back
// to the primitive (nullopt), so one machine runs both paths.
void force_int8_weight_split(std::optional<bool> split);

}  // namespace ms::cpu::quant
