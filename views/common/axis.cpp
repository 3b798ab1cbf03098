#include "views/common/axis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ms::views {

double nice_step(double range, int n) {
  if (!(range > 0)) return 1;
  const double raw = range / std::max(1, n);
  const double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

std::vector<double> axis_ticks(double max, int n) {
  std::vector<double> ticks{0.0};
  if (!(max > 0) || !std::isfinite(max)) return ticks;
  const double step = nice_step(max, n);
  for (int k = 1; k <= std::max(1, n) && static_cast<double>(k) * step <= max * (1 + 1e-9); ++k)
    ticks.push_back(static_cast<double>(k) * step);
  return ticks;
}

double byte_step(double range, int n) {
  double unit = 1;
  while (range / unit >= 1024 && unit < 1024.0 * 1024 * 1024) unit *= 1024;
  const double raw = range / unit / std::max(1, n);
  const double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return std::max(1.0, m * p * unit);
  return 10 * p * unit;
}

std::string format_bytes(double b) {
  char buf[32];
  const char* unit[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (b >= 1024 && u < 3) {
    b /= 1024;
    ++u;
  }
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : (b < 10 ? "%.2f %s" : "%.1f %s"), b, unit[u]);
  return buf;
}

}  // namespace ms::views
