// A failed allocation that says how much was asked for and for what: a std::bad_alloc, so every
// existing handler still catches it, whose what() is a one-line message for the user.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>

namespace ms {

class AllocationFailed : public std::bad_alloc {
 public:
  AllocationFailed(size_t bytes, std::string what_for);
  const char* what() const noexcept override { return message_.c_str(); }
  size_t bytes() const { return bytes_; }
  const std::string& what_for() const { return what_for_; }

 private:
  size_t bytes_;
  std::string what_for_;
  std::string message_;
};

// "3.73 GiB" (B, KiB, MiB, GiB, TiB).
std::string format_alloc_bytes(double bytes);

// Allocation fault injection, for the fault tests: the nth host allocation from now (1: the next)
// fails as though memory ran out, then allocations succeed again; 0 disarms. Counted where the
// engine allocates: Buffer::host (tensors), the runtime's host allocator (Graph-mode arenas) and
// every value a run allocates. Costs one relaxed atomic load per allocation when disarmed.
void arm_allocation_fault(int64_t nth);
// Whether the armed fault has fired since arm_allocation_fault.
bool allocation_fault_fired();
// For the allocators: true when this allocation must fail.
bool take_allocation_fault();

}  // namespace ms
