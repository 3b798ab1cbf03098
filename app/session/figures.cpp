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

Deviation deviation(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  Deviation d;
  double abs_sum = 0, ref_sum = 0;
  for (size_t o = 0; o < got.size() && o < want.size(); ++o) {
    const Tensor &g = got[o], &w = want[o];
    if (!is_float(g.dtype()) || !is_float(w.dtype()) || g.shape() != w.shape() || w.numel() == 0) continue;
    double max_diff = 0, max_ref = 0;
    int64_t g_arg = 0, w_arg = 0;
    for (int64_t i = 0; i < w.numel(); ++i) {
      const double x = g.at_double(i), y = w.at_double(i), diff = std::fabs(x - y);
      max_diff = std::max(max_diff, std::isnan(diff) ? INFINITY : diff);
      max_ref = std::max(max_ref, std::fabs(y));
      abs_sum += diff;
      ref_sum += std::fabs(y);
      if (x > g.at_double(g_arg)) g_arg = i;
      if (y > w.at_double(w_arg)) w_arg = i;
    }
    d.max_rel = std::max(d.max_rel, max_ref > 0 ? max_diff / max_ref : max_diff);
    d.argmax_equal = d.argmax_equal && g_arg == w_arg;
    ++d.compared;
  }
  d.mean_rel = ref_sum > 0 ? abs_sum / ref_sum : abs_sum;
  return d;
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
