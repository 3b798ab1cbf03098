#include "engine/core/cpu_wait.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace ms {

int64_t process_cpu_wait_ns() {
  DIR* tasks = ::opendir("/proc/self/task");
  if (!tasks) return -1;
  int64_t total = 0;
  bool any = false;
  while (const dirent* e = ::readdir(tasks)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string path = std::string("/proc/self/task/") + e->d_name + "/schedstat";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // a thread that ended meanwhile
    char buf[128];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "<ns on the CPU> <ns waiting on a run queue> <time slices>"
    char* end = nullptr;
    std::strtoll(buf, &end, 10);
    if (end == buf) continue;
    const char* wait = end;
    const long long w = std::strtoll(wait, &end, 10);
    if (end == wait || w < 0) continue;
    total += w;
    any = true;
  }
  ::closedir(tasks);
  return any ? total : -1;
}

}  // namespace ms
