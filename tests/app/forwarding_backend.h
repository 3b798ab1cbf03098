// For tests that need a backend differing from the CPU's in one respect (its name, one kernel, a
// capability): every call goes to a 1-thread CPU backend unless a subclass overrides it.
#pragma once

#include <memory>
#include <string>

#include "engine/backends/select.h"
#include "engine/runtime/backend.h"

namespace ms::testing {

class ForwardingBackend : public runtime::Backend {
 public:
  ForwardingBackend() : cpu_(backends::create_cpu_backend(1)) {}
  std::string name() const override { return cpu_->name(); }
  Device device() const override { return cpu_->device(); }
  runtime::Allocator& allocator() override { return cpu_->allocator(); }
  runtime::Allocator& arena_allocator() override { return cpu_->arena_allocator(); }
  runtime::KernelFn find_kernel(const ir::Node& node) const override { return cpu_->find_kernel(node); }
  void set_threads(int n) override { cpu_->set_threads(n); }
  int threads() const override { return cpu_->threads(); }
  Status copy_to_host(const Tensor& src, Tensor& dst) override { return cpu_->copy_to_host(src, dst); }
  Status copy_from_host(const Tensor& src, Tensor& dst) override { return cpu_->copy_from_host(src, dst); }

 protected:
  runtime::Backend& cpu() const { return *cpu_; }

 private:
  std::unique_ptr<runtime::Backend> cpu_;
};

}  // namespace ms::testing
