#include "app/session/compile_cache.h"

#include <algorithm>
#include <vector>

namespace ms::session {

CompileCache::CompileCache(size_t max_graphs) : max_graphs_(std::max<size_t>(1, max_graphs)), limit_(max_graphs_) {}

CompileCache::~CompileCache() = default;

void CompileCache::set_model(std::shared_ptr<const ir::Graph> graph) {
  std::list<std::unique_ptr<Entry>> dropped;  // freed outside the lock
  std::lock_guard lock(mu_);
  if (graph == model_) return;
  model_ = std::move(graph);
  limit_ = max_graphs_;
  dropped.swap(entries_);
}

void CompileCache::reserve(size_t graphs) {
  std::lock_guard lock(mu_);
  const size_t most = std::max(max_graphs_, kMaxGraphs);
  limit_ = std::max(limit_, std::min(most, max_graphs_ + std::min(graphs, most)));
}

size_t CompileCache::max_graphs() const {
  std::lock_guard lock(mu_);
  return limit_;
}

std::shared_ptr<const ir::Graph> CompileCache::model_of(const ir::Graph& g) const {
  std::lock_guard lock(mu_);
  return model_.get() == &g ? model_ : nullptr;
}

std::unique_ptr<CompileCache::Entry> CompileCache::take(const std::string& key) {
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if ((*it)->key == key) {
      std::unique_ptr<Entry> e = std::move(*it);
      entries_.erase(it);
      return e;
    }
  return nullptr;
}

void CompileCache::give_back(std::unique_ptr<Entry> e) {
  std::vector<std::unique_ptr<Entry>> dropped;  // freed outside the lock
  std::lock_guard lock(mu_);
  if (!e || !e->executor || e->graph != model_) {
    dropped.push_back(std::move(e));
    return;
  }
  e->callbacks = nullptr;
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if ((*it)->key == e->key) {
      dropped.push_back(std::move(*it));
      entries_.erase(it);
      break;
    }
  entries_.push_front(std::move(e));
  while (entries_.size() > 1 && graphs_locked() > limit_) {
    dropped.push_back(std::move(entries_.back()));
    entries_.pop_back();
  }
}

size_t CompileCache::entries() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

size_t CompileCache::graphs() const {
  std::lock_guard lock(mu_);
  return graphs_locked();
}

size_t CompileCache::graphs_locked() const {
  size_t n = 0;
  for (const auto& e : entries_) n += e->executor->buckets().size();
  return n;
}

void CompileCache::clear() {
  std::list<std::unique_ptr<Entry>> dropped;
  std::lock_guard lock(mu_);
  dropped.swap(entries_);
}

}  // namespace ms::session
