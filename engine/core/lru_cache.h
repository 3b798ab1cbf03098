// A map that keeps at most `capacity` entries, the least recently used going first: for caches keyed
// by shapes (oneDNN primitives, cuDNN's algorithm for a conv, cuBLASLt's plan for a GEMM), which a
// long-lived process meets without end (a decode loop's growing lengths, a shape sweep, model after
// model in one app). Not thread-safe: its owner locks.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <utility>

namespace ms {

template <class Key, class Value, class Compare = std::less<Key>> class LruCache {
 public:
  explicit LruCache(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  // The key's value, which becomes the most recently used; null when the key is not cached. The
  // pointer holds until the next put.
  Value* find(const Key& key) {
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second.second);
    return &it->second.first;
  }

  // Stores the key's value (replacing one cached) as the most recently used, then drops the least
  // recently used beyond the capacity. The reference holds until the next put.
  Value& put(const Key& key, Value value) {
    auto it = map_.find(key);
    if (it != map_.end()) {
      it->second.first = std::move(value);
      order_.splice(order_.begin(), order_, it->second.second);
      return it->second.first;
    }
    order_.push_front(key);
    it = map_.emplace(key, std::make_pair(std::move(value), order_.begin())).first;
    while (map_.size() > capacity_) {
      map_.erase(order_.back());
      order_.pop_back();
    }
    return it->second.first;
  }

  size_t size() const { return map_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  std::list<Key> order_;  // the keys, most recently used first
  std::map<Key, std::pair<Value, typename std::list<Key>::iterator>, Compare> map_;
};

}  // namespace ms
