// A file mapped into memory, read only where it is touched: a model's external weights stay on disk
// until a run (or the inspector's statistics) reads them. The mapping is private and copy-on-write,
// so a stray write changes this process's copy, never the file. Random access advice turns off
// read-ahead: touching one page of a tensor reads that page, not the next 128 KiB.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/core/tensor.h"

namespace ms {

class MappedFile : public std::enable_shared_from_this<MappedFile> {
 public:
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Maps the whole file; errors name the path.
  static Expected<std::shared_ptr<MappedFile>> open(const std::string& path);

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  // Bytes [offset, offset + bytes) as a host buffer that keeps the mapping alive. The range must lie
  // inside the file.
  std::shared_ptr<Buffer> view(uint64_t offset, uint64_t bytes);

 private:
  MappedFile(std::string path, void* base, uint64_t size) : path_(std::move(path)), base_(base), size_(size) {}
  std::string path_;
  void* base_;
  uint64_t size_;
};

// Advice that [p, p + bytes) is about to be read in full (madvise MADV_WILLNEED): where it is a
// mapped file, the kernel starts reading it from storage in large requests at once, instead of a
// page at a time as each page is first touched (the mapping's random-access advice, right for a
// lazy `check`, turns read-ahead off). Anonymous memory ignores it. Advice only; never fails.
void advise_will_read(const void* p, size_t bytes);

// This process's resident memory and the bytes it has read from storage (/proc/self/status VmRSS,
// /proc/self/io read_bytes); -1 where the system does not say.
struct ProcessMemory {
  int64_t resident_bytes = -1;
  int64_t read_bytes = -1;
};
ProcessMemory process_memory();

// Memory the system can give without swapping (/proc/meminfo MemAvailable), capped by the
// environment's MODESCOPE_MEMORY_LIMIT (bytes) when set; -1 where neither says.
int64_t available_memory();

}  // namespace ms
