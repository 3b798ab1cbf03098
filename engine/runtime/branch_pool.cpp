#include "engine/runtime/branch_pool.h"

namespace ms::runtime {

BranchPool::~BranchPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void BranchPool::loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* body = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || (generation_ != seen && index < active_); });
      if (stop_) return;
      seen = generation_;
      body = body_;
    }
    (*body)(index + 1);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) finished_.notify_one();
    }
  }
}

void BranchPool::run(int n, const std::function<void(int)>& body) {
  const int extra = n > 1 ? n - 1 : 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (static_cast<int>(workers_.size()) < extra) {
      const int index = static_cast<int>(workers_.size());
      workers_.emplace_back([this, index] { loop(index); });
    }
    body_ = &body;
    active_ = extra;
    pending_ = extra;
    ++generation_;
  }
  wake_.notify_all();
  body(0);
  std::unique_lock<std::mutex> lock(mu_);
  finished_.wait(lock, [&] { return pending_ == 0; });
  body_ = nullptr;
}

}  // namespace ms::runtime
