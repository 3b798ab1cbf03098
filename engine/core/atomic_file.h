// Writes that cannot lose data: every file the app and the CLI write goes through here. The bytes go
// to a temporary file in the same folder, every write is checked, the file is fsynced and then renamed
// over the target, so a full disk, a denied permission or an I/O error leaves the old file as it was
// and no temporary file behind. Errors name the file: "<path>: <what> (<strerror>)".
//
// Fault injection for tests: set_write_fault() (or the environment variable
// MODESCOPE_WRITE_FAULT=STEP:N:ERRNO, e.g. "write:1:ENOSPC", read once, for child processes such as
// the CLI) fails the Nth open, write, fsync or rename with the given errno. Off, it costs one relaxed
// atomic load per system call.
#pragma once

#include <cerrno>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>

#include "engine/core/status.h"

namespace ms {

// Replaces `path` with `bytes`, atomically.
Status write_file_atomic(const std::string& path, std::string_view bytes);

// Streaming writer: write() or stream() the contents, then commit(). Errors are sticky and reported
// by commit(); without a successful commit() the temporary file is removed and the target is left
// untouched. A target that exists and is not a regular file (/dev/stdout, a pipe) is written in
// place, as there is nothing to replace atomically.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view bytes);
  std::ostream& stream();  // buffered; its state turns bad on the first error
  Status commit();
  bool ok() const;
  const std::string& path() const { return path_; }

 private:
  struct Impl;
  void write_raw(std::string_view bytes);
  void fail(const char* what, int err);
  void discard();

  std::string path_;
  std::unique_ptr<Impl> impl_;
};

enum class WriteStep : uint8_t { Open, Write, Fsync, Rename };

struct WriteFault {
  WriteStep step = WriteStep::Write;
  int nth = 1;         // fail the Nth call of `step` counted from when the fault is set (1 = the next)
  int error = ENOSPC;  // errno reported (EACCES and EIO are the other usual ones)
};

// One fault at a time; setting one replaces the previous. Thread-safe.
void set_write_fault(const WriteFault& fault);
void clear_write_fault();
int write_fault_hits();  // how many calls the current fault failed (0 or 1)

class ScopedWriteFault {
 public:
  explicit ScopedWriteFault(const WriteFault& fault) { set_write_fault(fault); }
  ~ScopedWriteFault() { clear_write_fault(); }
  ScopedWriteFault(const ScopedWriteFault&) = delete;
  ScopedWriteFault& operator=(const ScopedWriteFault&) = delete;
};

}  // namespace ms
