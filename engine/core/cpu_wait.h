// How long this process's threads have waited for a CPU: the time they were ready to run while the
// scheduler ran something else (another process on the cores a run asked for). A run compares it
// before and after its timed iterations: threads that spin or compute never wait on an idle machine,
// and a share of waiting says the timings were inflated by the rest of the machine, not by the model.
#pragma once

#include <cstdint>

namespace ms {

// Sum over the process's threads of the run-queue wait in ns (/proc/self/task/*/schedstat, second
// field); -1 where the system does not say.
int64_t process_cpu_wait_ns();

}  // namespace ms
