// Activity records -> GpuActivity. Record layouts are CUDA 13's (CUpti_ActivityKernel10,
// CUpti_ActivityMemcpy6, CUpti_ActivityMemset4, CUpti_ActivityAPI, CUpti_ActivitySynchronization2,
// CUpti_ActivityExternalCorrelation): CUPTI always writes the newest version of each record.
#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "profiler/record/cupti_activity.h"

namespace ms::prof {

namespace {

// The fields memcpy and memset records share (their CUPTI structs differ in type only).
template <class Cupti, class Record> void copy_transfer_fields(const Cupti& m, Record& o) {
  o.correlation = m.correlationId;
  o.device = m.deviceId;
  o.stream = m.streamId;
  o.start_gpu = m.start;
  o.end_gpu = m.end;
  o.bytes = m.bytes;
}

MemcpyKind memcpy_kind(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return MemcpyKind::HostToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return MemcpyKind::DeviceToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return MemcpyKind::DeviceToDevice;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return MemcpyKind::HostToHost;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return MemcpyKind::PeerToPeer;
    default: return MemcpyKind::Other;
  }
}

const char* sync_name(uint32_t type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "event synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "stream wait event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "stream synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "context synchronize";
    default: return "synchronize";
  }
}

uint32_t dim(int32_t v) { return v < 0 ? 0u : static_cast<uint32_t>(v); }

}  // namespace

const std::string& ActivityParser::kernel_name(const char* name) {
  static const std::string unnamed = "kernel";
  if (!name) return unnamed;
  // CUPTI shares one name string among all records of a kernel: copy it once per pointer, and
  // compare in case the storage was reused for another name.
  auto [it, fresh] = names_.try_emplace(name);
  if (fresh || it->second != name) it->second = name;
  return it->second;
}

void ActivityParser::parse_buffer(const uint8_t* buffer, size_t valid_bytes) {
  if (!buffer || valid_bytes == 0) return;
  CUpti_Activity* r = nullptr;
  // MAX_LIMIT_REACHED ends the buffer; any other error leaves the rest unreadable.
  while (cuptiActivityGetNextRecord(const_cast<uint8_t*>(buffer), valid_bytes, &r) == CUPTI_SUCCESS && r)
    parse_record(*r);
}

void ActivityParser::parse_record(const CUpti_Activity& r) {
  ++records_;
  switch (r.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = reinterpret_cast<const CUpti_ActivityKernel10&>(r);
      GpuKernelRecord o;
      o.correlation = k.correlationId;
      o.device = k.deviceId;
      o.context = k.contextId;
      o.stream = k.streamId;
      o.start_gpu = k.start;
      o.end_gpu = k.end;
      o.name = kernel_name(k.name);  // mangled; demangled once per name in finish()
      o.grid[0] = dim(k.gridX), o.grid[1] = dim(k.gridY), o.grid[2] = dim(k.gridZ);
      o.block[0] = dim(k.blockX), o.block[1] = dim(k.blockY), o.block[2] = dim(k.blockZ);
      o.registers_per_thread = k.registersPerThread;
      o.static_shared_bytes = dim(k.staticSharedMemory);
      o.dynamic_shared_bytes = dim(k.dynamicSharedMemory);
      out_.kernels.push_back(std::move(o));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemcpy6&>(r);
      GpuMemcpyRecord o;
      copy_transfer_fields(m, o);
      o.kind = memcpy_kind(m.copyKind);
      out_.memcpys.push_back(o);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemset4&>(r);
      GpuMemsetRecord o;
      copy_transfer_fields(m, o);
      o.value = m.value;
      out_.memsets.push_back(o);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
      const auto& a = reinterpret_cast<const CUpti_ActivityAPI&>(r);
      api_.push_back({a.correlationId, a.threadId, static_cast<uint32_t>(a.cbid), a.start, a.end});
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& s = reinterpret_cast<const CUpti_ActivitySynchronization2&>(r);
      sync_.push_back({s.correlationId, s.streamId, static_cast<uint32_t>(s.type), s.start, s.end});
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& e = reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(r);
      if (e.externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) external_[e.correlationId] = e.externalId;
      break;
    }
    default: ++skipped_; break;
  }
}

GpuActivity ActivityParser::finish(const ClockCalibration& clock, uint64_t dropped) {
  GpuActivity a = std::move(out_);
  out_ = {};
  a.clock = clock;
  a.dropped_records = dropped;
  auto node_of = [&](uint32_t corr) {
    auto it = external_.find(corr);
    return it == external_.end() ? uint64_t{0} : it->second;
  };
  std::unordered_map<std::string, std::string> demangled;
  for (auto& k : a.kernels) {
    k.node = node_of(k.correlation);
    auto [it, fresh] = demangled.try_emplace(k.name);
    if (fresh) it->second = demangle_kernel_name(k.name);
    k.name = it->second;
  }
  for (auto& m : a.memcpys) m.node = node_of(m.correlation);
  for (auto& m : a.memsets) m.node = node_of(m.correlation);
  std::unordered_map<uint32_t, std::string> api_names;
  a.api_calls.reserve(api_.size());
  for (const RawApi& r : api_) {
    auto [it, fresh] = api_names.try_emplace(r.cbid);
    if (fresh) it->second = runtime_api_name(r.cbid);
    a.api_calls.push_back(
        {r.correlation, r.thread, clock.to_host(r.start), clock.to_host(r.end), it->second, node_of(r.correlation)});
  }
  for (const RawSync& r : sync_)
    a.syncs.push_back({r.correlation, r.stream, clock.to_host(r.start), clock.to_host(r.end), sync_name(r.type),
                       node_of(r.correlation)});
  api_.clear();
  sync_.clear();
  external_.clear();
  return a;
}

std::string runtime_api_name(uint32_t cbid) {
  const char* name = nullptr;
  if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) != CUPTI_SUCCESS || !name)
    return "cuda api " + std::to_string(cbid);
  std::string s(name);
  // "cudaLaunchKernel_v7000": the suffix is the API version, not part of the name users know.
  const size_t v = s.rfind("_v");
  if (v != std::string::npos && v + 2 < s.size() && s.find_first_not_of("0123456789", v + 2) == std::string::npos)
    s.resize(v);
  return s;
}

std::string demangle_kernel_name(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status),
                                                &std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

std::string cupti_error_text(const char* call, CUptiResult r) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text) text = "unknown CUPTI error";
  std::string s = std::string(call) + ": " + text;
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      s += " (GPU profiling is restricted to administrators: run as root, or load the driver with "
           "NVreg_RestrictProfilingToAdminUsers=0)";
      break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      s += " (another profiler, such as Nsight Systems, is already attached to this process)";
      break;
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE:
      s += " (the CUDA driver is older than the CUPTI library this program was built with)";
      break;
    case CUPTI_ERROR_NOT_INITIALIZED:
    case CUPTI_ERROR_UNKNOWN: s += " (no usable CUDA driver or device)"; break;
    default: break;
  }
  return s;
}

}  // namespace ms::prof
