// What a kernel derives once from frozen weights (a compiled graph's constants) and keeps across
// runs and backends: oneDNN's packed sgemm panels, Winograd-transformed conv weights. Entries are
// found by a key naming the weights buffer and the problem; making a new one first drops those whose
// weights are gone (a closed model's), so they live about as long as their model. An Entry has
// `std::weak_ptr<Buffer> source` (the weights it was made from) and its own lock for the making.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace ms::cpu {

template <class Entry> class WeightsRegistry {
 public:
  // The one registry of this kind, never destroyed: kernels may run during exit.
  static WeightsRegistry& instance() {
    static WeightsRegistry* r = new WeightsRegistry;
    return *r;
  }

  std::shared_ptr<Entry> entry(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) return it->second;
    for (auto e = entries_.begin(); e != entries_.end();)
      e = e->second->source.expired() && e->second.use_count() == 1 ? entries_.erase(e) : std::next(e);
    return entries_.emplace(key, std::make_shared<Entry>()).first->second;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries_;
};

}  // namespace ms::cpu
