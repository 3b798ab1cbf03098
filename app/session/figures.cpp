#include "app/session/figures.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ms::session {

LatencySummary summarize(std::vector<double> ms) {
  LatencySummary s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.min = ms.front();
  s.median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  s.p90 = ms[std::min(ms.size() - 1, static_cast<size_t>(std::ceil(0.9 * static_cast<double>(ms.size()))) - 1)];
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean = sum / static_cast<double>(ms.size());
  return s;
}

std::string compare_tensors(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.dtype() != b.dtype())
    return "dtype " + std::string(dtype_name(a.dtype())) + " vs " + std::string(dtype_name(b.dtype()));
  if (a.shape() != b.shape()) return "shape " + shape_to_string(a.shape()) + " vs " + shape_to_string(b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.at_double(i), y = b.at_double(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;
    if (!(std::fabs(x - y) <= atol + rtol * std::fabs(y)))
      return "element " + std::to_string(i) + ": " + std::to_string(x) + " vs " + std::to_string(y);
  }
  return "";
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

}  // namespace ms::session
