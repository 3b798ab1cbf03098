// Two-operand Einsum that is a batched matrix product ("bij,bjk->bik", "bhqd,bhkd->bhqk", "i,i", ...):
// operands are permuted into [batch, M, K] x [batch, K, N] and multiplied with Eigen's GEMM, then
// the [batch, M, N] result is permuted into the output order. Anything else takes the index loop.
#include <omp.h>

#include <Eigen/Core>
#include <algorithm>

#include "engine/backends/cpu/reduce_internal.h"
#include "engine/ops/reduce_internal.h"

namespace ms::cpu::reduce {
namespace {

// Where each label sits in one operand (-1: absent); false when an operand repeats a label
// (a diagonal) or broadcasts a size-1 dim, which the product form cannot express.
bool label_dims(const std::vector<int>& labels, const Shape& shape, const std::vector<int64_t>& size,
                std::vector<int>& dim_of) {
  dim_of.assign(size.size(), -1);
  for (size_t d = 0; d < labels.size(); ++d) {
    const size_t l = static_cast<size_t>(labels[d]);
    if (dim_of[l] != -1 || shape[d] != size[l]) return false;
    dim_of[l] = static_cast<int>(d);
  }
  return true;
}

// Operand data in the wanted dim order: the input itself when already so, else a permuted copy.
Expected<const void*> arranged(runtime::KernelContext& ctx, const Tensor& t, const std::vector<int>& perm,
                               Tensor& holder) {
  bool identity = true;
  for (size_t j = 0; j < perm.size(); ++j) identity &= perm[j] == static_cast<int>(j);
  if (identity) return static_cast<const void*>(t.raw());
  Shape s;
  for (int p : perm) s.push_back(t.shape()[static_cast<size_t>(p)]);
  MS_ASSIGN_OR_RETURN(holder, ctx.scratch(t.dtype(), s));
  permute_copy(t.raw(), holder.raw(), dtype_size(t.dtype()), t.shape(), perm);
  return static_cast<const void*>(holder.raw());
}

template <class T> void batched_gemm(const T* a, const T* b, T* c, int64_t batch, int64_t m, int64_t k, int64_t n) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  // Many small products: one per thread. Few large ones: Eigen spreads each over the threads
  // (inside a parallel region it runs single-threaded, so the two never nest).
#pragma omp parallel for schedule(static) if (batch >= omp_get_max_threads() && batch * m * n * k >= kParallelWork)
  for (int64_t i = 0; i < batch; ++i) {
    Eigen::Map<const Mat> A(a + i * m * k, m, k);
    Eigen::Map<const Mat> B(b + i * k * n, k, n);
    Eigen::Map<Mat> C(c + i * m * n, m, n);
    if (k == 0)
      C.setZero();
    else
      C.noalias() = A * B;
  }
}

}  // namespace

Expected<bool> einsum_gemm(runtime::KernelContext& ctx, const ops::reduce::EinsumBinding& b,
                           const std::vector<const Tensor*>& ins, Tensor& y) {
  const DType dt = y.dtype();
  if (ins.size() != 2 || (dt != DType::F32 && dt != DType::F64)) return false;
  std::vector<int> da, db;
  if (!label_dims(b.operand_labels[0], ins[0]->shape(), b.size, da) ||
      !label_dims(b.operand_labels[1], ins[1]->shape(), b.size, db))
    return false;
  std::vector<bool> in_out(b.size.size(), false);
  for (int l : b.output_labels) in_out[static_cast<size_t>(l)] = true;
  std::vector<int> batch, ms, ns, ks;  // labels by role; batch/M/N in output order
  for (int l : b.output_labels) {
    const bool ina = da[static_cast<size_t>(l)] >= 0, inb = db[static_cast<size_t>(l)] >= 0;
    if (ina && inb)
      batch.push_back(l);
    else if (ina)
      ms.push_back(l);
    else if (inb)
      ns.push_back(l);
    else
      return false;
  }
  for (int l : b.operand_labels[0])
    if (!in_out[static_cast<size_t>(l)]) {
      if (db[static_cast<size_t>(l)] < 0) return false;  // summed within A alone
      ks.push_back(l);
    }
  for (int l : b.operand_labels[1])
    if (!in_out[static_cast<size_t>(l)] && da[static_cast<size_t>(l)] < 0) return false;  // summed within B alone

  auto extent = [&](const std::vector<int>& ls) {
    int64_t n = 1;
    for (int l : ls) n *= b.size[static_cast<size_t>(l)];
    return n;
  };
  const int64_t nb = extent(batch), m = extent(ms), n = extent(ns), k = extent(ks);
  std::vector<int> pa, pb;
  for (int l : batch) pa.push_back(da[static_cast<size_t>(l)]);
  for (int l : ms) pa.push_back(da[static_cast<size_t>(l)]);
  for (int l : ks) pa.push_back(da[static_cast<size_t>(l)]);
  for (int l : batch) pb.push_back(db[static_cast<size_t>(l)]);
  for (int l : ks) pb.push_back(db[static_cast<size_t>(l)]);
  for (int l : ns) pb.push_back(db[static_cast<size_t>(l)]);
  Tensor ha, hb, hc;
  MS_ASSIGN_OR_RETURN(const void* pa_data, arranged(ctx, *ins[0], pa, ha));
  MS_ASSIGN_OR_RETURN(const void* pb_data, arranged(ctx, *ins[1], pb, hb));

  // The product comes out as [batch..., M..., N...]; the output may want another order.
  std::vector<int> c_labels = batch;
  c_labels.insert(c_labels.end(), ms.begin(), ms.end());
  c_labels.insert(c_labels.end(), ns.begin(), ns.end());
  std::vector<int> pc;  // output dim j = product dim pc[j]
  for (int l : b.output_labels)
    pc.push_back(static_cast<int>(std::find(c_labels.begin(), c_labels.end(), l) - c_labels.begin()));
  bool c_identity = true;
  for (size_t j = 0; j < pc.size(); ++j) c_identity &= pc[j] == static_cast<int>(j);
  Shape c_shape;
  for (int l : c_labels) c_shape.push_back(b.size[static_cast<size_t>(l)]);
  if (!c_identity) {
    MS_ASSIGN_OR_RETURN(hc, ctx.scratch(dt, c_shape));
  }
  void* c_data = c_identity ? y.raw() : hc.raw();

  if (dt == DType::F32)
    batched_gemm(static_cast<const float*>(pa_data), static_cast<const float*>(pb_data), static_cast<float*>(c_data),
                 nb, m, k, n);
  else
    batched_gemm(static_cast<const double*>(pa_data), static_cast<const double*>(pb_data), static_cast<double*>(c_data),
                 nb, m, k, n);
  if (!c_identity) permute_copy(hc.raw(), y.raw(), dtype_size(dt), c_shape, pc);
  return true;
}

}  // namespace ms::cpu::reduce
