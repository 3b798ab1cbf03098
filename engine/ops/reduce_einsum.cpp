// Einsum (equation parsing and binding, shared with the CPU kernel) and Det.
#include <algorithm>
#include <array>
#include <cctype>

#include "engine/ops/reduce_internal.h"

namespace ms::ops::reduce {
namespace {

constexpr int kLetters = 52;

int label_of(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}
char char_of(int label) { return label < 26 ? static_cast<char>('a' + label) : static_cast<char>('A' + label - 26); }

bool parse_term(std::string_view term, std::vector<int>& out, std::string& err) {
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c == '.') {
      if (term.substr(i, 3) != "..." || ellipsis) {
        err = "malformed ellipsis in term '" + std::string(term) + "'";
        return false;
      }
      ellipsis = true;
      out.push_back(EinsumEquation::kEllipsis);
      i += 2;
      continue;
    }
    const int l = label_of(c);
    if (l < 0) {
      err = "unexpected character '" + std::string(1, c) + "' in term '" + std::string(term) + "'";
      return false;
    }
    out.push_back(l);
  }
  return true;
}

}  // namespace

bool parse_einsum(std::string_view equation, size_t num_inputs, EinsumEquation& eq, std::string& err) {
  std::string s;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c))) s.push_back(c);
  eq = EinsumEquation{};
  const size_t arrow = s.find("->");
  const std::string lhs = s.substr(0, arrow);
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    eq.inputs.emplace_back();
    if (!parse_term(std::string_view(lhs).substr(start, comma - start), eq.inputs.back(), err)) return false;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (eq.inputs.size() != num_inputs) {
    err = "equation '" + std::string(equation) + "' has " + std::to_string(eq.inputs.size()) + " operand terms but " +
          std::to_string(num_inputs) + " inputs are given";
    return false;
  }
  std::array<int, kLetters> count{};
  bool any_ellipsis = false;
  for (const auto& term : eq.inputs)
    for (int l : term) {
      if (l == EinsumEquation::kEllipsis)
        any_ellipsis = true;
      else
        ++count[static_cast<size_t>(l)];
    }
  if (arrow != std::string::npos) {
    const std::string rhs = s.substr(arrow + 2);
    if (rhs.find("->") != std::string::npos || rhs.find(',') != std::string::npos) {
      err = "equation '" + std::string(equation) + "' has more than one output term";
      return false;
    }
    if (!parse_term(rhs, eq.output, err)) return false;
    std::array<bool, kLetters> seen{};
    for (int l : eq.output) {
      if (l == EinsumEquation::kEllipsis) continue;
      if (count[static_cast<size_t>(l)] == 0 || seen[static_cast<size_t>(l)]) {
        err = std::string("output subscript '") + char_of(l) +
              (seen[static_cast<size_t>(l)] ? "' appears twice" : "' does not appear in any input");
        return false;
      }
      seen[static_cast<size_t>(l)] = true;
    }
    return true;
  }
  // Implicit output (numpy): the broadcast dims, then the labels used once, in ASCII order.
  if (any_ellipsis) eq.output.push_back(EinsumEquation::kEllipsis);
  std::vector<int> once;
  for (int l = 0; l < kLetters; ++l)
    if (count[static_cast<size_t>(l)] == 1) once.push_back(l);
  std::sort(once.begin(), once.end(), [](int a, int b) { return char_of(a) < char_of(b); });
  eq.output.insert(eq.output.end(), once.begin(), once.end());
  return true;
}

bool bind_einsum(const EinsumEquation& eq, const std::vector<std::vector<int64_t>>& shapes, EinsumBinding& b,
                 std::string& err) {
  // Width of the broadcast ("...") block: the widest operand's.
  size_t width = 0;
  std::vector<size_t> ell(eq.inputs.size(), 0);
  for (size_t k = 0; k < eq.inputs.size(); ++k) {
    const auto& term = eq.inputs[k];
    const bool has_ell = std::count(term.begin(), term.end(), EinsumEquation::kEllipsis) > 0;
    const size_t letters = term.size() - (has_ell ? 1 : 0);
    const size_t rank = shapes[k].size();
    if (has_ell ? rank < letters : rank != letters) {
      err = "operand " + std::to_string(k) + " has shape " + shape_to_string(shapes[k]) + " but its term names " +
            std::to_string(letters) + " dims";
      return false;
    }
    ell[k] = rank - letters;
    width = std::max(width, ell[k]);
  }
  if (width > 0 && std::count(eq.output.begin(), eq.output.end(), EinsumEquation::kEllipsis) == 0) {
    // As numpy: broadcast dims must be named in the output (implicit outputs always keep them).
    err = "the inputs have " + std::to_string(width) + " broadcast dims but the output has no '...'";
    return false;
  }
  const size_t num_labels = kLetters + width;
  // Per label: the size other than 1 seen (-2: none), whether a 1 or an unknown size was seen.
  std::vector<int64_t> big(num_labels, -2);
  std::vector<bool> one(num_labels, false), unknown(num_labels, false);
  b = EinsumBinding{};
  b.operand_labels.resize(eq.inputs.size());
  for (size_t k = 0; k < eq.inputs.size(); ++k) {
    auto& labels = b.operand_labels[k];
    for (int l : eq.inputs[k]) {
      if (l != EinsumEquation::kEllipsis) {
        labels.push_back(l);
        continue;
      }
      // Right-aligned against the widest block, as broadcasting aligns trailing dims.
      for (size_t j = 0; j < ell[k]; ++j) labels.push_back(static_cast<int>(kLetters + width - ell[k] + j));
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      const size_t l = static_cast<size_t>(labels[d]);
      const int64_t n = shapes[k][d];
      if (n < 0)
        unknown[l] = true;
      else if (n == 1)
        one[l] = true;
      else if (big[l] == -2)
        big[l] = n;
      else if (big[l] != n) {
        const std::string name =
            l < kLetters ? "subscript '" + std::string(1, char_of(static_cast<int>(l))) + "'" : "broadcast dim";
        err = name + " has sizes " + std::to_string(big[l]) + " and " + std::to_string(n) + " (operand " +
              std::to_string(k) + " has shape " + shape_to_string(shapes[k]) + ")";
        return false;
      }
    }
  }
  b.size.assign(num_labels, 1);
  for (size_t l = 0; l < num_labels; ++l) b.size[l] = big[l] != -2 ? big[l] : (unknown[l] ? -1 : 1);
  for (int l : eq.output) {
    if (l != EinsumEquation::kEllipsis) {
      b.output_labels.push_back(l);
      continue;
    }
    for (size_t j = 0; j < width; ++j) b.output_labels.push_back(static_cast<int>(kLetters + j));
  }
  return true;
}

namespace {

Status infer_einsum(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.fail("input " + std::to_string(i) + " is missing");
    if (!is_numeric(ctx.in(i).dtype) || ctx.in(i).dtype != dt)
      return ctx.fail("Einsum inputs must share one numeric dtype, input " + std::to_string(i) + " is " +
                      std::string(dtype_name(ctx.in(i).dtype)));
  }
  if (!ctx.node.has_attr("equation")) return ctx.fail("Einsum needs the 'equation' attribute");
  const std::string text = ctx.node.attr_string("equation", "");
  EinsumEquation eq;
  std::string err;
  if (!parse_einsum(text, ctx.num_inputs(), eq, err)) return ctx.fail("equation '" + text + "': " + err);
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.dims(i)) {
      // Without every rank, the width of "..." is unknown; without "..." the output rank is not.
      const bool has_ell = std::count(eq.output.begin(), eq.output.end(), EinsumEquation::kEllipsis) > 0;
      if (has_ell)
        ctx.set_output_rank_unknown(0, dt);
      else
        ctx.set_output(0, dt, std::vector<int64_t>(eq.output.size(), -1));
      return Status::ok();
    }
    shapes.push_back(*ctx.dims(i));
  }
  EinsumBinding b;
  if (!bind_einsum(eq, shapes, b, err)) return ctx.fail("equation '" + text + "': " + err);
  std::vector<int64_t> out;
  for (int l : b.output_labels) out.push_back(b.size[static_cast<size_t>(l)]);
  ctx.set_output(0, dt, out);
  return Status::ok();
}

Cost einsum_cost(const CostContext& c) {
  // One multiply-add per point of the full index space; fall back to the reduction estimate.
  Cost cost = reduction_cost(c);
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& t : c.inputs) {
    if (!t.is_static()) return cost;
    shapes.push_back(*t.dims);
  }
  EinsumEquation eq;
  EinsumBinding b;
  std::string err;
  if (!parse_einsum(c.node.attr_string("equation", ""), shapes.size(), eq, err) || !bind_einsum(eq, shapes, b, err))
    return cost;
  std::vector<bool> used(b.size.size(), false);
  for (const auto& ls : b.operand_labels)
    for (int l : ls) used[static_cast<size_t>(l)] = true;
  double points = 1;
  for (size_t l = 0; l < b.size.size(); ++l)
    if (used[l]) points *= static_cast<double>(b.size[l]);
  cost.flops = points * static_cast<double>(shapes.size());
  return cost;
}

Status infer_det(InferContext& ctx) {
  const DType dt = ctx.in(0).dtype;
  if (!is_float(dt)) return ctx.fail("Det needs a floating-point input, got " + std::string(dtype_name(dt)));
  const auto* d = ctx.dims(0);
  if (!d) {
    ctx.set_output_rank_unknown(0, dt);
    return Status::ok();
  }
  const size_t r = d->size();
  if (r < 2) return ctx.fail("Det needs rank >= 2, got shape " + shape_to_string(*d));
  if ((*d)[r - 1] >= 0 && (*d)[r - 2] >= 0 && (*d)[r - 1] != (*d)[r - 2])
    return ctx.fail("Det needs square matrices, got shape " + shape_to_string(*d));
  ctx.set_output(0, dt, std::vector<int64_t>(d->begin(), d->end() - 2));
  return Status::ok();
}

}  // namespace

void register_einsum_ops(Registry& r) {
  OpSchema e;
  e.op_type = "Einsum";
  e.since_version = 12;
  e.min_inputs = 1;
  e.max_inputs = -1;
  e.category = OpCategory::Reduction;
  e.infer = infer_einsum;
  e.cost = einsum_cost;
  r.add(std::move(e));

  OpSchema d;
  d.op_type = "Det";
  d.since_version = 11;
  d.min_inputs = 1;
  d.max_inputs = 1;
  d.category = OpCategory::Reduction;
  d.infer = infer_det;
  d.cost = reduction_cost;
  r.add(std::move(d));
}

}  // namespace ms::ops::reduce
