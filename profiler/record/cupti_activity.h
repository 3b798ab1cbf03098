// The CUPTI activity API side of GPU recording (built only with the CUDA toolkit).
//
// ActivityParser is the "buffer of activity records -> GpuActivity" step on its own, so tests feed
// it buffers of synthetic records without a GPU. The collector (cupti_activity.cpp) hands every
// completed CUPTI buffer to one parser: parse() only copies the fields it needs (kernel names are
// copied once per distinct name), and everything that needs all buffers (external correlation ->
// node, host-clock mapping of API and synchronization records, API names) waits for finish().
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/record/cupti_collector.h"

namespace ms::prof {

class ActivityParser {
 public:
  // Every record of a buffer as CUPTI fills it (records back to back, cuptiActivityGetNextRecord
  // walks them). Records of kinds we do not collect are counted and skipped.
  void parse_buffer(const uint8_t* buffer, size_t valid_bytes);
  void parse_record(const CUpti_Activity& r);

  // The collected activity: kernels/memcpys/memsets keep CUPTI timestamps (merge_gpu_activity maps
  // them through `clock`), API calls and synchronizations are mapped onto the host clock here, and
  // records whose correlation id has an external correlation record name that node.
  GpuActivity finish(const ClockCalibration& clock, uint64_t dropped);

  size_t records() const { return records_; }
  size_t skipped() const { return skipped_; }

 private:
  struct RawApi {
    uint32_t correlation, thread, cbid;
    uint64_t start, end;  // CUPTI clock
  };
  struct RawSync {
    uint32_t correlation, stream, type;
    uint64_t start, end;
  };
  const std::string& kernel_name(const char* name);

  GpuActivity out_;
  std::vector<RawApi> api_;
  std::vector<RawSync> sync_;
  std::unordered_map<uint32_t, uint64_t> external_;     // correlation id -> external id (NodeId)
  std::unordered_map<const char*, std::string> names_;  // CUPTI's name pointer -> mangled name
  size_t records_ = 0, skipped_ = 0;
};

// "cuptiActivityEnable(CONCURRENT_KERNEL): CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (...)" with a hint
// for the errors users can act on.
std::string cupti_error_text(const char* call, CUptiResult r);

// A runtime API callback name without its version suffix ("cudaLaunchKernel_v7000" ->
// "cudaLaunchKernel"); "cuda api <cbid>" when CUPTI does not know the id.
std::string runtime_api_name(uint32_t cbid);

// Itanium-demangled kernel name, or the name itself when it is not mangled.
std::string demangle_kernel_name(const std::string& name);

}  // namespace ms::prof
