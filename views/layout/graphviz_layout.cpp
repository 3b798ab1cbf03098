#include "views/layout/graphviz_layout.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>

namespace ms::views {

namespace {

std::mutex& graphviz_mutex() {
  static std::mutex m;
  return m;
}

GVC_t* context() {
  static GVC_t* gvc = gvContext();  // lives for the process; Graphviz keeps global state anyway
  return gvc;
}

int number_after(const char* s, const char* prefix) {
  if (!s) return -1;
  const size_t n = std::char_traits<char>::length(prefix);
  if (std::char_traits<char>::compare(s, prefix, n) != 0) return -1;
  char* end = nullptr;
  const long v = std::strtol(s + n, &end, 10);
  return end && *end == '\0' ? static_cast<int>(v) : -1;
}

}  // namespace

Expected<Layout> layout_dot(const std::string& dot) {
  const auto t0 = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(graphviz_mutex());
  GVC_t* gvc = context();
  if (!gvc) return internal_error("Graphviz: no layout context");
  Agraph_t* g = agmemread(dot.c_str());
  if (!g) return invalid_argument("Graphviz could not read the DOT text");
  std::unique_ptr<Agraph_t, int (*)(Agraph_t*)> guard(g, agclose);
  if (gvLayout(gvc, g, "dot") != 0) return internal_error("Graphviz dot layout failed");

  Layout out;
  const boxf bb = GD_bb(g);
  const double top = bb.UR.y;
  auto flip = [&](pointf p) { return PointF{p.x - bb.LL.x, top - p.y}; };
  out.width = bb.UR.x - bb.LL.x;
  out.height = bb.UR.y - bb.LL.y;
  for (Agnode_t* n = agfstnode(g); n; n = agnxtnode(g, n)) {
    LayoutBox box;
    box.key = agnameof(n);
    const PointF c = flip(ND_coord(n));
    box.x = c.x;
    box.y = c.y;
    box.w = ND_width(n) * 72.0;
    box.h = ND_height(n) * 72.0;
    out.nodes.push_back(std::move(box));
    for (Agedge_t* e = agfstout(g, n); e; e = agnxtout(g, e)) {
      LayoutEdge le;
      le.index = number_after(agget(e, const_cast<char*>("id")), "e");
      const splines* spl = ED_spl(e);
      if (spl && spl->size > 0) {
        const bezier& bz = spl->list[0];
        for (int i = 0; i < bz.size; ++i) le.points.push_back(flip(bz.list[i]));
        if (bz.eflag) {
          le.has_arrow = true;
          le.arrow_tip = flip(bz.ep);
        }
      }
      if (const textlabel_t* lab = ED_label(e); lab && lab->set) {
        le.has_label = true;
        le.label_pos = flip(lab->pos);
      }
      out.edges.push_back(std::move(le));
    }
  }
  std::function<void(Agraph_t*)> clusters = [&](Agraph_t* sg) {
    for (Agraph_t* s = agfstsubg(sg); s; s = agnxtsubg(s)) {
      const int group = number_after(agnameof(s), "cluster_g");
      if (group >= 0) {
        const boxf b = GD_bb(s);
        const PointF a = flip(b.LL), c = flip(b.UR);
        out.clusters.push_back({group, a.x, c.y, c.x, a.y});
      }
      clusters(s);
    }
  };
  clusters(g);
  gvFreeLayout(gvc, g);
  out.layout_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace ms::views
