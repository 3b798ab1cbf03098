#include "engine/core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ms {

MappedFile::~MappedFile() {
  if (base_ && size_) ::munmap(base_, static_cast<size_t>(size_));
}

Expected<std::shared_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(ErrorCode::Io, "cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::error(ErrorCode::Io, "cannot stat '" + path + "': " + std::strerror(err));
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  void* base = nullptr;
  if (size > 0) {
    base = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (base == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return Status::error(ErrorCode::Io, "cannot map '" + path + "': " + std::strerror(err));
    }
    ::madvise(base, static_cast<size_t>(size), MADV_RANDOM);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  return std::shared_ptr<MappedFile>(new MappedFile(path, base, size));
}

std::shared_ptr<Buffer> MappedFile::view(uint64_t offset, uint64_t bytes) {
  auto keep = shared_from_this();
  char* at = static_cast<char*>(base_) + offset;
  return std::make_shared<Buffer>(at, static_cast<size_t>(bytes), Device{}, [keep](void*, size_t) {});
}

void advise_will_read(const void* p, size_t bytes) {
  if (!p || bytes == 0) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t from = reinterpret_cast<uintptr_t>(p) / page * page;
  const uintptr_t to = reinterpret_cast<uintptr_t>(p) + bytes;
  (void)::madvise(reinterpret_cast<void*>(from), to - from, MADV_WILLNEED);
}

ProcessMemory process_memory() {
  ProcessMemory m;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) {
      std::istringstream in(line.substr(6));
      int64_t kib = 0;
      if (in >> kib) m.resident_bytes = kib * 1024;
    }
  std::ifstream io("/proc/self/io");
  for (std::string line; std::getline(io, line);)
    if (line.rfind("read_bytes:", 0) == 0) {
      std::istringstream in(line.substr(11));
      int64_t b = 0;
      if (in >> b) m.read_bytes = b;
    }
  return m;
}

int64_t available_memory() {
  int64_t available = -1;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);)
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream in(line.substr(13));
      int64_t kib = 0;
      if (in >> kib) available = kib * 1024;
    }
  if (const char* limit = std::getenv("MODESCOPE_MEMORY_LIMIT"); limit && *limit) {
    char* end = nullptr;
    const long long v = std::strtoll(limit, &end, 10);
    if (end && *end == '\0' && v >= 0) available = available < 0 ? v : std::min<int64_t>(available, v);
  }
  return available;
}

}  // namespace ms
