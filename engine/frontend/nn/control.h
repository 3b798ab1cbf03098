// Data-dependent control flow and printing that work in both modes.
//   cond(pred, then_fn, else_fn): PyNative runs one branch at once; traced, both branches are
//     traced into the two subgraphs of an If node (they must return the same number of values,
//     same dtypes).
//   fori_loop(lower, upper, body, init): PyNative runs the C++ loop; traced, the body becomes the
//     subgraph of a Loop node with upper - lower iterations; body(i, carried) -> carried.
//   ops::print(label, x): PyNative prints now; traced, a Print node (domain ai.modescope) that
//     prints whenever the compiled graph runs. x's handle is re-routed through the Print node so
//     later uses keep the node alive.
#pragma once

#include <functional>
#include <string>

#include "engine/frontend/nn/var.h"

namespace ms::nn {

using BranchFn = std::function<Vars()>;
Vars cond(const Var& pred, const BranchFn& then_fn, const BranchFn& else_fn);
Var cond(const Var& pred, const std::function<Var()>& then_fn, const std::function<Var()>& else_fn);

using LoopBody = std::function<Vars(const Var& i, const Vars& carried)>;
Vars fori_loop(int64_t lower, int64_t upper, const LoopBody& body, const Vars& init);

}  // namespace ms::nn

namespace ms::nn::ops {
Var print(const std::string& label, Var x);
inline Var print(const Var& x) { return print("", x); }
}  // namespace ms::nn::ops
