#include "engine/runtime/packed_release.h"

#include <algorithm>
#include <unordered_map>

namespace ms::runtime {

namespace {

// The buffer holding a constant tensor's bytes, or null (not a constant, a sequence); whether it may
// be released (frozen host bytes of a plain type) is the caller's to check.
const std::shared_ptr<Buffer>* constant_buffer(const ir::Value* v) {
  if (!v || !v->constant || !v->constant->is_tensor() || !v->constant->buffer()) return nullptr;
  return &v->constant->buffer();
}

}  // namespace

PackedRelease::PackedRelease(const Program& p, const ir::Graph& g) {
  for (const auto& n : g.nodes())
    if (n.has_subgraph()) return;
  std::unordered_map<const Buffer*, Group*> by_buffer;
  std::vector<Group*> slot_group(p.slot_names.size(), nullptr);
  auto group_of = [&](const std::shared_ptr<Buffer>& b) {
    auto [it, fresh] = by_buffer.emplace(b.get(), nullptr);
    if (fresh) {
      groups_.push_back(std::make_unique<Group>());
      groups_.back()->buffer = b;
      it->second = groups_.back().get();
    }
    return it->second;
  };
  for (int s : p.constant_slots) {
    const ir::Value* v = g.value(p.slot_names[static_cast<size_t>(s)]);
    const auto* b = constant_buffer(v);
    if (!b) continue;
    Group* gr = group_of(*b);
    slot_group[static_cast<size_t>(s)] = gr;
    const Tensor& t = *v->constant;
    if (!(*b)->frozen() || !(*b)->device().is_cpu() || t.dtype() == DType::String) gr->keep = true;
  }
  // Read other than by a step's kernel: a graph output, or a graph input that defaults to its
  // initializer (bound from the constant when the caller gives none).
  for (int s : p.output_slots)
    if (Group* gr = slot_group[static_cast<size_t>(s)]) gr->keep = true;
  for (const auto& name : g.inputs)
    if (const auto* b = constant_buffer(g.value(name))) group_of(*b)->keep = true;
  // Buffers whose bytes overlap another's (a borrowed view of a weight) are kept, both of them.
  std::vector<Group*> by_address;
  for (auto& gr : groups_) by_address.push_back(gr.get());
  std::sort(by_address.begin(), by_address.end(), [](const Group* a, const Group* b) {
    return std::less<const void*>()(a->buffer->data(), b->buffer->data());
  });
  uintptr_t end = 0;
  Group* last = nullptr;
  for (Group* gr : by_address) {
    const auto begin = reinterpret_cast<uintptr_t>(gr->buffer->data());
    if (last && begin < end) gr->keep = last->keep = true;
    if (begin + gr->buffer->bytes() > end) {
      end = begin + gr->buffer->bytes();
      last = gr;
    }
  }
  step_groups_.resize(p.steps.size());
  for (size_t si = 0; si < p.steps.size(); ++si) {
    const Step& st = p.steps[si];
    step_groups_[si].assign(st.inputs.size(), nullptr);
    for (size_t i = 0; i < st.inputs.size(); ++i)
      if (st.inputs[i] >= 0)
        if (Group* gr = slot_group[static_cast<size_t>(st.inputs[i])]) {
          // Only the first 32 inputs can say they are packed.
          if (i >= 32) gr->keep = true;
          step_groups_[si][i] = gr;
          ++gr->reads;
        }
  }
  for (auto& gr : groups_)
    if (gr->keep || gr->reads == 0)
      gr->closed = true;
    else
      open_.fetch_add(1, std::memory_order_relaxed);
}

void PackedRelease::begin_run() {
  for (auto& gr : groups_)
    if (!gr->closed.load(std::memory_order_relaxed)) gr->left.store(gr->reads, std::memory_order_relaxed);
}

void PackedRelease::close(Group& g, bool released) {
  g.closed.store(true, std::memory_order_relaxed);
  open_.fetch_sub(1, std::memory_order_relaxed);
  if (released) released_.fetch_add(g.buffer->bytes(), std::memory_order_relaxed);
}

void PackedRelease::after_step(size_t si, uint32_t packed) {
  const auto& reads = step_groups_[si];
  for (size_t i = 0; i < reads.size(); ++i) {
    Group* gr = reads[i];
    if (!gr || gr->closed.load(std::memory_order_relaxed)) continue;
    if (!((packed >> i) & 1u)) gr->keep.store(true, std::memory_order_relaxed);
    // The last read of the run sees every keep stored before the others' decrements.
    if (gr->left.fetch_sub(1, std::memory_order_acq_rel) != 1) continue;
    if (gr->keep.load(std::memory_order_relaxed))
      close(*gr, false);
    else
      close(*gr, gr->buffer->release_storage());
  }
}

}  // namespace ms::runtime
