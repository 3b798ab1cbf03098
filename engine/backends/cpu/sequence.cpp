// CPU kernels over sequence and optional values. A tensor that goes into a container is copied
// (in Graph mode it may be an arena view whose bytes are reused after its last planned use); what
// comes out of one is handed over as is, or copied into a planned output.
#include <cstring>

#include "engine/backends/cpu/cpu_backend.h"
#include "engine/backends/cpu/output_value.h"

namespace ms::cpu {
namespace {

Status need_kind(const runtime::KernelContext& ctx, size_t i, ValueKind kind) {
  if (ctx.input(i).kind() != kind)
    return ctx.fail("input " + std::to_string(i) + " must be a " + value_kind_name(kind) + ", got a " +
                    value_kind_name(ctx.input(i).kind()));
  return Status::ok();
}

// Position input i (default `fallback` when left out), checked against [lo, hi] after adding n to a
// negative one.
Expected<int64_t> position(const runtime::KernelContext& ctx, size_t i, int64_t fallback, int64_t n, int64_t hi) {
  if (!ctx.has_input(i)) return fallback;
  const Tensor& p = ctx.input(i);
  if (!p.is_tensor() || p.numel() != 1) return ctx.fail("position must be a scalar");
  const int64_t raw = p.at_int(0);
  const int64_t pos = raw < 0 ? raw + n : raw;
  if (pos < 0 || pos > hi)
    return ctx.fail("position " + std::to_string(raw) + " is out of range for a sequence of " + std::to_string(n));
  return pos;
}

Status sequence_empty_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:sequence");
  auto dt = dtype_from_onnx(static_cast<int>(ctx.node().attr_int("dtype", dtype_to_onnx(DType::F32))));
  ctx.set_output(0, Tensor::sequence({}, dt ? *dt : DType::F32));
  return Status::ok();
}

Status sequence_construct_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:sequence");
  std::vector<Tensor> items;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    MS_RETURN_IF_ERROR(need_kind(ctx, i, ValueKind::Tensor));
    if (ctx.input(i).dtype() != ctx.input(0).dtype()) return ctx.fail("inputs must share one element type");
    items.push_back(ctx.input(i).clone());
  }
  ctx.set_output(0, Tensor::sequence(std::move(items), ctx.input(0).dtype()));
  return Status::ok();
}

Status sequence_insert_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:sequence");
  MS_RETURN_IF_ERROR(need_kind(ctx, 0, ValueKind::Sequence));
  MS_RETURN_IF_ERROR(need_kind(ctx, 1, ValueKind::Tensor));
  const ValueList& seq = *ctx.input(0).list();
  const Tensor& t = ctx.input(1);
  if (t.dtype() != seq.elem_dtype && !(seq.items.empty() && seq.elem_dtype == DType::Undefined))
    return ctx.fail("inserts a " + std::string(dtype_name(t.dtype())) + " tensor into a sequence of " +
                    std::string(dtype_name(seq.elem_dtype)));
  const auto n = static_cast<int64_t>(seq.items.size());
  MS_ASSIGN_OR_RETURN(int64_t pos, position(ctx, 2, n, n, n));
  std::vector<Tensor> items = seq.items;
  items.insert(items.begin() + pos, t.clone());
  ctx.set_output(0, Tensor::sequence(std::move(items), t.dtype()));
  return Status::ok();
}

Status sequence_erase_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:sequence");
  MS_RETURN_IF_ERROR(need_kind(ctx, 0, ValueKind::Sequence));
  const ValueList& seq = *ctx.input(0).list();
  const auto n = static_cast<int64_t>(seq.items.size());
  if (n == 0) return ctx.fail("cannot erase from an empty sequence");
  MS_ASSIGN_OR_RETURN(int64_t pos, position(ctx, 1, n - 1, n, n - 1));
  std::vector<Tensor> items = seq.items;
  items.erase(items.begin() + pos);
  ctx.set_output(0, Tensor::sequence(std::move(items), seq.elem_dtype));
  return Status::ok();
}

Status sequence_at_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:sequence");
  MS_RETURN_IF_ERROR(need_kind(ctx, 0, ValueKind::Sequence));
  const ValueList& seq = *ctx.input(0).list();
  const auto n = static_cast<int64_t>(seq.items.size());
  MS_ASSIGN_OR_RETURN(int64_t pos, position(ctx, 1, 0, n, n - 1));
  return put_output_value(ctx, 0, seq.items[static_cast<size_t>(pos)]);
}

Status sequence_length_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:sequence");
  MS_RETURN_IF_ERROR(need_kind(ctx, 0, ValueKind::Sequence));
  return put_output_value(ctx, 0, Tensor::scalar<int64_t>(static_cast<int64_t>(ctx.input(0).items().size())));
}

// Copies a [outer, len, inner] block of `src` (elements of `es` bytes) starting at `from` along the
// middle axis into `dst`, which holds [outer, count, inner].
void copy_block(const char* src, char* dst, int64_t outer, int64_t len, int64_t from, int64_t count, int64_t inner,
                size_t es) {
  const size_t row = static_cast<size_t>(count * inner) * es;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + static_cast<size_t>(o) * row, src + static_cast<size_t>((o * len + from) * inner) * es, row);
}

Expected<std::vector<int64_t>> split_lengths(const runtime::KernelContext& ctx, int64_t dim) {
  std::vector<int64_t> lengths;
  if (!ctx.has_input(1)) return std::vector<int64_t>(static_cast<size_t>(dim), 1);
  const Tensor& split = ctx.input(1);
  if (split.rank() == 0) {
    const int64_t step = split.at_int(0);
    if (step <= 0) return ctx.fail("split must be positive, got " + std::to_string(step));
    for (int64_t at = 0; at < dim; at += step) lengths.push_back(std::min(step, dim - at));
    return lengths;
  }
  lengths = split.to_int_vector();
  int64_t total = 0;
  for (int64_t l : lengths) {
    if (l < 0) return ctx.fail("split lengths must not be negative");
    total += l;
  }
  if (total != dim)
    return ctx.fail("split lengths sum to " + std::to_string(total) + ", the axis has " + std::to_string(dim));
  return lengths;
}

Status split_to_sequence_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:sequence");
  MS_RETURN_IF_ERROR(need_kind(ctx, 0, ValueKind::Tensor));
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < -rank || axis >= rank) return ctx.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  const bool drop_axis = !ctx.has_input(1) && ctx.node().attr_int("keepdims", 1) == 0;
  const int64_t dim = x.dim(axis);
  MS_ASSIGN_OR_RETURN(std::vector<int64_t> lengths, split_lengths(ctx, dim));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.dim(d);
  std::vector<Tensor> items;
  int64_t from = 0;
  for (int64_t len : lengths) {
    Shape shape = x.shape();
    shape[static_cast<size_t>(axis)] = len;
    Tensor piece = Tensor::empty(x.dtype(), shape);
    copy_block(static_cast<const char*>(x.raw()), static_cast<char*>(piece.raw()), outer, dim, from, len, inner,
               dtype_size(x.dtype()));
    if (drop_axis) shape.erase(shape.begin() + axis);
    items.push_back(piece.reshaped(shape));
    from += len;
  }
  ctx.set_output(0, Tensor::sequence(std::move(items), x.dtype()));
  return Status::ok();
}

Status concat_from_sequence_kernel(runtime::KernelContext& ctx) {
  ctx.set_impl("host:sequence");
  MS_RETURN_IF_ERROR(need_kind(ctx, 0, ValueKind::Sequence));
  const auto& items = ctx.input(0).items();
  if (items.empty()) return ctx.fail("cannot concatenate an empty sequence");
  const bool new_axis = ctx.node().attr_int("new_axis", 0) != 0;
  const int64_t rank = items[0].rank() + (new_axis ? 1 : 0);
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (axis < -rank || axis >= rank) return ctx.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  auto with_axis = [&](const Tensor& t) {
    Shape s = t.shape();
    if (new_axis) s.insert(s.begin() + axis, 1);
    return s;
  };
  Shape out_shape = with_axis(items[0]);
  out_shape[static_cast<size_t>(axis)] = 0;
  for (const Tensor& t : items) {
    Shape s = with_axis(t);
    if (t.dtype() != items[0].dtype() || static_cast<int64_t>(s.size()) != rank)
      return ctx.fail("elements differ in type or rank");
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && s[static_cast<size_t>(d)] != out_shape[static_cast<size_t>(d)])
        return ctx.fail("elements differ in dim " + std::to_string(d) + " outside the axis");
    out_shape[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  MS_ASSIGN_OR_RETURN(Tensor * out, ctx.allocate_output(0, items[0].dtype(), out_shape));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out_shape[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= out_shape[static_cast<size_t>(d)];
  const size_t es = dtype_size(items[0].dtype());
  const int64_t total = out_shape[static_cast<size_t>(axis)];
  int64_t at = 0;
  for (const Tensor& t : items) {
    const int64_t len = with_axis(t)[static_cast<size_t>(axis)];
    const size_t chunk = static_cast<size_t>(len * inner) * es;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(out->raw()) + static_cast<size_t>((o * total + at) * inner) * es,
                  static_cast<const char*>(t.raw()) + static_cast<size_t>(o) * chunk, chunk);
    at += len;
  }
  return Status::ok();
}

}  // namespace

void register_sequence_map_kernels(runtime::KernelRegistry& r);  // sequence_map.cpp

void register_sequence_kernels(runtime::KernelRegistry& r) {
  r.add("SequenceEmpty", sequence_empty_kernel);
  r.add("SequenceConstruct", sequence_construct_kernel);
  r.add("SequenceInsert", sequence_insert_kernel);
  r.add("SequenceErase", sequence_erase_kernel);
  r.add("SequenceAt", sequence_at_kernel);
  r.add("SequenceLength", sequence_length_kernel);
  r.add("SplitToSequence", split_to_sequence_kernel);
  r.add("ConcatFromSequence", concat_from_sequence_kernel);
  register_sequence_map_kernels(r);
}

}  // namespace ms::cpu
