#include "engine/core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <streambuf>
#include <system_error>

namespace ms {

namespace {

// ---- fault injection ----

struct FaultState {
  std::mutex mu;
  WriteFault fault;
  int seen = 0;  // calls of fault.step since the fault was set
  int hits = 0;
};

std::atomic<bool> g_armed{false};

FaultState& fault_state() {
  static FaultState s;
  return s;
}

bool parse_step(std::string_view s, WriteStep& step) {
  if (s == "open")
    step = WriteStep::Open;
  else if (s == "write")
    step = WriteStep::Write;
  else if (s == "fsync")
    step = WriteStep::Fsync;
  else if (s == "rename")
    step = WriteStep::Rename;
  else
    return false;
  return true;
}

int parse_errno(const std::string& s) {
  if (s == "ENOSPC") return ENOSPC;
  if (s == "EACCES") return EACCES;
  if (s == "EIO") return EIO;
  if (s == "EDQUOT") return EDQUOT;
  if (s == "EROFS") return EROFS;
  return std::atoi(s.c_str());
}

// MODESCOPE_WRITE_FAULT=STEP:N:ERRNO, e.g. "rename:1:EACCES"; ignored when malformed.
void arm_from_env() {
  const char* env = std::getenv("MODESCOPE_WRITE_FAULT");
  if (env == nullptr || *env == '\0') return;
  const std::string s(env);
  const size_t a = s.find(':'), b = a == std::string::npos ? a : s.find(':', a + 1);
  if (b == std::string::npos) return;
  WriteFault f;
  if (!parse_step(std::string_view(s).substr(0, a), f.step)) return;
  f.nth = std::atoi(s.substr(a + 1, b - a - 1).c_str());
  f.error = parse_errno(s.substr(b + 1));
  if (f.nth < 1 || f.error <= 0) return;
  FaultState& st = fault_state();
  std::lock_guard lock(st.mu);
  st.fault = f;
  st.seen = st.hits = 0;
  g_armed.store(true);
}

void ensure_env_read() {
  static std::once_flag once;
  std::call_once(once, arm_from_env);
}

// The errno this call of `step` is to fail with, or 0.
int injected(WriteStep step) {
  if (!g_armed.load(std::memory_order_relaxed)) return 0;
  FaultState& st = fault_state();
  std::lock_guard lock(st.mu);
  if (!g_armed.load() || st.fault.step != step) return 0;
  if (++st.seen != st.fault.nth) return 0;
  ++st.hits;
  return st.fault.error;
}

// ---- small POSIX helpers ----

std::string describe(const std::string& path, const char* what, int err) {
  return path + ": " + what + " (" + std::generic_category().message(err) + ")";
}

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A symlink is followed, so the file it points to is replaced and the link stays.
std::string resolve_target(const std::string& path) {
  struct stat ls {};
  if (::lstat(path.c_str(), &ls) != 0 || !S_ISLNK(ls.st_mode)) return path;
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

void sync_folder(const std::string& dir) {
  // Best effort: the file's bytes are already on disk; this makes the new name durable too.
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

// The file the bytes go to first: a new temporary file beside the target, or the target itself when
// it is a device or a pipe (tmp empty). On failure fd is -1 and what/err say why.
struct Opened {
  std::string target, tmp;
  int fd = -1;
  const char* what = nullptr;
  int err = 0;
};

Opened open_for_write(const std::string& path) {
  Opened o;
  o.target = resolve_target(path);
  struct stat st {};
  const bool exists = ::stat(o.target.c_str(), &st) == 0;
  auto failed = [&o](const char* what, int err) {
    o.what = what;
    o.err = err;
    o.tmp.clear();
    return o;
  };
  if (exists && S_ISDIR(st.st_mode)) return failed("is a folder, not a file", EISDIR);
  if (int e = injected(WriteStep::Open)) return failed("cannot create the file", e);
  if (exists && !S_ISREG(st.st_mode)) {
    o.fd = ::open(o.target.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    return o.fd < 0 ? failed("cannot open for writing", errno) : o;
  }
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100 && o.fd < 0; ++attempt) {
    o.tmp = folder_of(o.target) + "/." + base_of(o.target) + ".tmp-" + std::to_string(::getpid()) + "-" +
            std::to_string(counter.fetch_add(1));
    o.fd = ::open(o.tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (o.fd < 0 && errno != EEXIST) return failed("cannot create the file", errno);
  }
  if (o.fd < 0) return failed("cannot create a temporary file", EEXIST);
  if (exists) (void)::fchmod(o.fd, st.st_mode & 07777);  // keep the old file's permissions
  return o;
}

}  // namespace

void set_write_fault(const WriteFault& fault) {
  ensure_env_read();
  FaultState& st = fault_state();
  std::lock_guard lock(st.mu);
  st.fault = fault;
  st.seen = st.hits = 0;
  g_armed.store(true);
}

void clear_write_fault() {
  ensure_env_read();
  FaultState& st = fault_state();
  std::lock_guard lock(st.mu);
  g_armed.store(false);
  st.seen = 0;
}

int write_fault_hits() {
  FaultState& st = fault_state();
  std::lock_guard lock(st.mu);
  return st.hits;
}

// ---- AtomicFile ----

// Named, not anonymous: AtomicFile::Impl (external linkage) holds one.
namespace atomic_file_detail {

class AtomicBuf : public std::streambuf {
 public:
  using Sink = void (*)(void*, std::string_view);
  AtomicBuf(Sink sink, void* ctx) : sink_(sink), ctx_(ctx) { setp(buf_, buf_ + sizeof buf_); }
  void drain() {
    const std::ptrdiff_t n = pptr() - pbase();
    setp(buf_, buf_ + sizeof buf_);
    if (n > 0) sink_(ctx_, std::string_view(buf_, static_cast<size_t>(n)));
  }
  bool failed = false;

 protected:
  int_type overflow(int_type c) override {
    drain();
    if (failed) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override {
    drain();
    return failed ? -1 : 0;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n < static_cast<std::streamsize>(sizeof buf_)) return std::streambuf::xsputn(s, n);
    drain();
    if (!failed) sink_(ctx_, std::string_view(s, static_cast<size_t>(n)));
    return failed ? 0 : n;
  }

 private:
  Sink sink_;
  void* ctx_;
  char buf_[1 << 16];
};

}  // namespace atomic_file_detail

struct AtomicFile::Impl {
  explicit Impl(AtomicFile* owner) : buf(&Impl::sink, owner), os(&buf) {}
  static void sink(void* owner, std::string_view bytes) { static_cast<AtomicFile*>(owner)->write_raw(bytes); }

  atomic_file_detail::AtomicBuf buf;
  std::ostream os;
  std::string target;  // the file replaced (the symlink's target when path is a link)
  std::string tmp;     // empty when writing in place
  int fd = -1;
  Status status;
  bool done = false;
};

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), impl_(std::make_unique<Impl>(this)) {
  ensure_env_read();
  Opened o = open_for_write(path_);
  impl_->target = std::move(o.target);
  impl_->tmp = std::move(o.tmp);
  impl_->fd = o.fd;
  if (o.what != nullptr) fail(o.what, o.err);
}

AtomicFile::~AtomicFile() { discard(); }

bool AtomicFile::ok() const { return impl_->status.is_ok(); }

void AtomicFile::fail(const char* what, int err) {
  if (impl_->status.is_ok()) impl_->status = io_error(describe(path_, what, err));
  impl_->buf.failed = true;
  impl_->os.setstate(std::ios::badbit);
}

void AtomicFile::discard() {
  Impl& m = *impl_;
  if (m.fd >= 0) ::close(m.fd);
  m.fd = -1;
  if (!m.tmp.empty()) ::unlink(m.tmp.c_str());
  m.tmp.clear();
}

void AtomicFile::write_raw(std::string_view bytes) {
  Impl& m = *impl_;
  while (!bytes.empty() && m.status.is_ok() && !m.done) {
    if (int e = injected(WriteStep::Write)) return fail("cannot write", e);
    const ssize_t n = ::write(m.fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot write", errno);
    if (n == 0) return fail("cannot write", ENOSPC);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

void AtomicFile::write(std::string_view bytes) {
  impl_->buf.drain();
  write_raw(bytes);
}

std::ostream& AtomicFile::stream() { return impl_->os; }

Status AtomicFile::commit() {
  Impl& m = *impl_;
  if (m.done) return m.status;
  m.buf.drain();
  m.done = true;
  auto bail = [&](const char* what, int err) {
    fail(what, err);
    discard();
    return m.status;
  };
  if (!m.status.is_ok()) return bail("", 0);
  const bool in_place = m.tmp.empty();
  if (!in_place) {
    const int e = injected(WriteStep::Fsync);
    if (e != 0 || ::fsync(m.fd) != 0) return bail("cannot flush to disk", e != 0 ? e : errno);
  }
  const int fd = m.fd;
  m.fd = -1;
  if (::close(fd) != 0 && errno != EINTR) return bail("cannot write", errno);
  if (in_place) return m.status;
  const int e = injected(WriteStep::Rename);
  if (e != 0 || ::rename(m.tmp.c_str(), m.target.c_str()) != 0)
    return bail("cannot replace the file", e != 0 ? e : errno);
  m.tmp.clear();
  sync_folder(folder_of(m.target));
  return m.status;
}

Status write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  return f.commit();
}

}  // namespace ms
