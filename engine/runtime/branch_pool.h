// Worker threads for a graph executor's concurrent branches: run(n, body) calls body(0) on the
// calling thread and body(1) .. body(n-1) on workers started once and kept for later runs, and
// returns when all have returned. One run at a time (the executor runs one graph at a time).
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ms::runtime {

class BranchPool {
 public:
  BranchPool() = default;
  BranchPool(const BranchPool&) = delete;
  BranchPool& operator=(const BranchPool&) = delete;
  ~BranchPool();
  void run(int n, const std::function<void(int)>& body);

 private:
  void loop(int index);
  std::mutex mu_;
  std::condition_variable wake_, finished_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* body_ = nullptr;
  int active_ = 0;   // workers taking part in this run
  int pending_ = 0;  // of those, not yet returned
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace ms::runtime
