#include "engine/frontend/nn/tape.h"

#include "engine/frontend/nn/context.h"

namespace ms::autodiff {
namespace {
thread_local Tape* t_tape = nullptr;
}  // namespace

Tape* active_tape() { return t_tape; }

TapeGuard::TapeGuard(Tape* t) : saved_(t_tape) { t_tape = t; }
TapeGuard::~TapeGuard() { t_tape = saved_; }

void Tape::record(const std::string& op_type, const std::string& domain, const nn::Vars& inputs,
                  const nn::F::Attrs& attrs, const nn::Vars& outputs) {
  for (const nn::Var& o : outputs)
    if (!o.ok()) return;  // a failed op: the error travels in its outputs, nothing to differentiate
  TapeEntry e;
  e.node.op_type = op_type;
  e.node.domain = domain;
  e.node.attrs = attrs;
  e.node.name = nn::current_path();
  e.inputs = inputs;
  e.outputs = outputs;
  entries_.push_back(std::move(e));
}

}  // namespace ms::autodiff
