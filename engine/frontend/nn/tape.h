// The tape: while a Tape is active on this thread, every functional op (F::op_n) is recorded with
// its inputs, attributes and outputs, whether it ran eagerly (PyNative) or was appended to the
// active trace. Backward walks the entries in reverse (engine/frontend/nn/autograd.cpp).
#pragma once

#include <string>
#include <vector>

#include "engine/frontend/nn/functional.h"

namespace ms::autodiff {

struct TapeEntry {
  ir::Node node;  // op_type, domain, attrs; name = module path the op ran under
  nn::Vars inputs, outputs;
};

class Tape {
 public:
  void record(const std::string& op_type, const std::string& domain, const nn::Vars& inputs, const nn::F::Attrs& attrs,
              const nn::Vars& outputs);
  const std::vector<TapeEntry>& entries() const { return entries_; }
  void clear() { entries_.clear(); }

 private:
  std::vector<TapeEntry> entries_;
};

// The tape recording on this thread (nullptr: none).
Tape* active_tape();
// Makes `t` the recording tape for a scope (nullptr pauses recording, e.g. during backward).
class TapeGuard {
 public:
  explicit TapeGuard(Tape* t);
  ~TapeGuard();
  TapeGuard(const TapeGuard&) = delete;
  TapeGuard& operator=(const TapeGuard&) = delete;

 private:
  Tape* saved_;
};

}  // namespace ms::autodiff
