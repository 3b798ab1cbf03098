// LruCache: at most `capacity` entries, the least recently used (found or put) going first.
#include "engine/core/lru_cache.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>
#include <tuple>

namespace ms {
namespace {

TEST(LruCache, KeepsTheCapacityDroppingTheLeastRecentlyUsed) {
  LruCache<int, std::string> c(3);
  c.put(1, "one");
  c.put(2, "two");
  c.put(3, "three");
  ASSERT_NE(c.find(1), nullptr);  // 1 is now the most recent: 2 is the least
  c.put(4, "four");
  EXPECT_EQ(c.size(), 3u);
  EXPECT_EQ(c.find(2), nullptr);
  ASSERT_NE(c.find(1), nullptr);
  EXPECT_EQ(*c.find(1), "one");
  EXPECT_EQ(*c.find(3), "three");
  EXPECT_EQ(*c.find(4), "four");
  // Order now 4, 3, 1 (most recent first): two new keys push out 1 and 3.
  c.put(5, "five");
  c.put(6, "six");
  EXPECT_EQ(c.find(1), nullptr);
  EXPECT_EQ(c.find(3), nullptr);
  EXPECT_NE(c.find(4), nullptr);
  EXPECT_EQ(c.size(), 3u);
}

TEST(LruCache, PutReplacesAndRefreshesAKey) {
  LruCache<std::string, int> c(2);
  c.put("a", 1);
  c.put("b", 2);
  EXPECT_EQ(c.put("a", 10), 10);  // replaced, and now the most recent
  c.put("c", 3);                  // pushes out b
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.find("b"), nullptr);
  ASSERT_NE(c.find("a"), nullptr);
  EXPECT_EQ(*c.find("a"), 10);
}

TEST(LruCache, WhatACallerHoldsOutlivesItsEntry) {
  LruCache<std::tuple<std::array<int64_t, 2>, int>, std::shared_ptr<const int>> c(1);
  const std::shared_ptr<const int> held = c.put({{1, 2}, 3}, std::make_shared<const int>(7));
  c.put({{1, 2}, 4}, std::make_shared<const int>(8));  // the first key goes
  EXPECT_EQ(c.find({{1, 2}, 3}), nullptr);
  EXPECT_EQ(*held, 7);
  EXPECT_EQ(held.use_count(), 1);  // the cache let go of it
  const LruCache<int, int> empty(0);
  EXPECT_EQ(empty.capacity(), 1u);  // at least one entry
}

}  // namespace
}  // namespace ms
