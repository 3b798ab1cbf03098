#include "engine/runtime/custom_kernels.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace ms::runtime {
namespace {

struct CustomTable {
  std::atomic<bool> any{false};  // lookups of built-in misses stay lock-free until an op is added
  std::shared_mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const CustomKernels>> ops;  // "domain:op_type"
};

CustomTable& custom_table() {
  static auto* t = new CustomTable();  // never destroyed: kernels may run during static destruction
  return *t;
}

std::string custom_key(std::string_view domain, std::string_view op_type) {
  std::string key;
  key.append(domain == "ai.onnx" ? std::string_view() : domain).append(":").append(op_type);
  return key;
}

std::shared_ptr<const CustomKernels> custom_entry(std::string_view domain, std::string_view op_type) {
  CustomTable& t = custom_table();
  if (!t.any.load(std::memory_order_acquire)) return nullptr;
  std::shared_lock lock(t.mutex);
  auto it = t.ops.find(custom_key(domain, op_type));
  return it == t.ops.end() ? nullptr : it->second;
}

// One trampoline per device: the KernelFn seam is a plain function, so the node names the entry.
Status run_custom(KernelContext& ctx, DeviceType device) {
  auto entry = custom_entry(ctx.node().domain, ctx.node().op_type);
  if (!entry) return ctx.unsupported_case("custom op '" + ctx.node().op_type + "' is no longer registered");
  const CustomKernelFn& fn = device == DeviceType::CUDA ? entry->cuda : entry->cpu;
  return fn(ctx);
}

Status run_custom_cpu(KernelContext& ctx) { return run_custom(ctx, DeviceType::CPU); }
Status run_custom_cuda(KernelContext& ctx) { return run_custom(ctx, DeviceType::CUDA); }

}  // namespace

void set_custom_kernels(const std::string& domain, const std::string& op_type, CustomKernels kernels) {
  auto entry = std::make_shared<const CustomKernels>(std::move(kernels));
  CustomTable& t = custom_table();
  std::unique_lock lock(t.mutex);
  t.ops[custom_key(domain, op_type)] = std::move(entry);
  t.any.store(true, std::memory_order_release);
}

bool has_custom_kernels(const std::string& domain, const std::string& op_type) {
  return custom_entry(domain, op_type) != nullptr;
}

KernelFn find_custom_kernel(std::string_view op_type, std::string_view domain, DeviceType device) {
  auto entry = custom_entry(domain, op_type);
  if (!entry) return nullptr;
  if (device == DeviceType::CUDA) return entry->cuda ? &run_custom_cuda : nullptr;
  return entry->cpu ? &run_custom_cpu : nullptr;
}

}  // namespace ms::runtime
