// CPU reduction kernels: registration entry point and helpers the family shares.
#include <cstring>

#include "engine/backends/cpu/reduce_internal.h"

namespace ms::cpu {

void register_reduce_kernels(runtime::KernelRegistry& r) {
  reduce::register_reduce_family_kernels(r);
  reduce::register_index_kernels(r);
  reduce::register_einsum_kernels(r);
}

namespace reduce {
namespace {

template <size_t N> struct Elem { unsigned char b[N]; };

template <class E> void permute_typed(const E* src, E* dst, const Shape& src_shape, const std::vector<int>& perm) {
  const size_t rank = perm.size();
  const Shape src_strides = contiguous_strides(src_shape);
  Shape dims(rank), strides(rank);
  for (size_t j = 0; j < rank; ++j) {
    dims[j] = src_shape[static_cast<size_t>(perm[j])];
    strides[j] = src_strides[static_cast<size_t>(perm[j])];
  }
  const int64_t total = numel(dims);
  if (total == 0) return;
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  // Walk dst in order; the innermost dst dim is a strided run through src.
  const int64_t inner = dims[rank - 1], inner_stride = strides[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t src_off = 0;
  for (int64_t out = 0; out < total; out += inner) {
    const E* s = src + src_off;
    E* d = dst + out;
    for (int64_t i = 0; i < inner; ++i) d[i] = s[i * inner_stride];
    for (size_t j = rank - 1; j-- > 0;) {
      src_off += strides[j];
      if (++idx[j] < dims[j]) break;
      src_off -= strides[j] * dims[j];
      idx[j] = 0;
    }
  }
}

}  // namespace

void permute_copy(const void* src, void* dst, size_t elem_size, const Shape& src_shape, const std::vector<int>& perm) {
  switch (elem_size) {
    case 1: permute_typed(static_cast<const Elem<1>*>(src), static_cast<Elem<1>*>(dst), src_shape, perm); break;
    case 2: permute_typed(static_cast<const Elem<2>*>(src), static_cast<Elem<2>*>(dst), src_shape, perm); break;
    case 4: permute_typed(static_cast<const Elem<4>*>(src), static_cast<Elem<4>*>(dst), src_shape, perm); break;
    default: permute_typed(static_cast<const Elem<8>*>(src), static_cast<Elem<8>*>(dst), src_shape, perm); break;
  }
}

bool scalar_int_input(const Tensor& t, int64_t& v) {
  if (!is_integer(t.dtype()) || t.numel() != 1 || t.rank() > 1) return false;
  v = t.at_int(0);
  return true;
}

}  // namespace reduce
}  // namespace ms::cpu
