// The graph view: a QGraphicsView over the laid-out graph with pan (drag), zoom (wheel, pinch,
// +/-), fit, a minimap, search (Ctrl+F), selection, colour overlays and group expand/collapse
// (double-click) with the layout rerun off the UI thread.
#pragma once

#include <QGraphicsView>
#include <QHash>
#include <QWidget>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "views/graph/graph_items.h"
#include "views/jobs/job_tracker.h"
#include "views/layout/pipeline.h"

namespace ms::views {

class Minimap;
class SearchBar;

// What ran on a fallback (runtime/fallback.h: a CPU detour from the device, another precision), as
// the graph view marks it: by node where the fallback names its nodes, by op type where it does not
// (a session written before fallbacks named nodes). Reasons of several runs are joined with "; ".
struct FallbackMarks {
  std::unordered_map<uint64_t, QString> nodes;  // NodeId value -> reason
  std::map<std::string, QString> ops;           // op type -> reason
  // Marks `ids` with `why`, and in `ran` (the graph the run ran, when not the input graph: the
  // compiled graph) the origins of those nodes, so a fused node that fell back is marked in the
  // snapshots before the fusion too.
  void add_nodes(const std::vector<uint64_t>& ids, const QString& why, const ir::Graph* ran = nullptr);
  void add_op(const std::string& op, const QString& why);
  bool empty() const { return nodes.empty() && ops.empty(); }
};

class GraphCanvas : public QGraphicsView {
  Q_OBJECT
 public:
  explicit GraphCanvas(QWidget* parent = nullptr);
  void zoom_by(double factor);
  // Keeps bands of `top` and `bottom` pixels outside the viewport (for the legends).
  void reserve_bands(int top, int bottom) { setViewportMargins(0, top, 0, bottom); }

 Q_SIGNALS:
  void item_double_clicked(QGraphicsItem* item, QPointF scene_pos);
  void item_clicked(QGraphicsItem* item);
  void viewport_changed();

 protected:
  void wheelEvent(QWheelEvent* e) override;
  bool viewportEvent(QEvent* e) override;
  void mouseDoubleClickEvent(QMouseEvent* e) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;
  void scrollContentsBy(int dx, int dy) override;
  void resizeEvent(QResizeEvent* e) override;
  void drawBackground(QPainter* p, const QRectF& rect) override;

 private:
  QPoint press_pos_;
};

class GraphView : public QWidget {
  Q_OBJECT
 public:
  explicit GraphView(JobTracker* jobs, QWidget* parent = nullptr);
  ~GraphView() override;

  // A model with its first layout already done (by the load job): shown at once.
  void show_prepared(std::shared_ptr<const GraphModel> model, PreparedView view);
  // A model without a layout: default collapse, layout in a job.
  void set_model(std::shared_ptr<const GraphModel> model);
  void clear();
  const GraphModel* model() const { return model_.get(); }
  const PreparedView* prepared() const { return view_ ? view_.get() : nullptr; }

  void toggle_group(int group);
  void set_collapsed(std::set<int> collapsed, int then_select = -1);
  // Expands the groups that hide `node`, then selects it and centres on it.
  void reveal_node(int node);
  void select_node(int node);
  int selected_node() const { return selected_; }

  void fit();
  // The opening view: the whole graph if it reads at that scale, else its top at a readable scale.
  void show_start();
  void zoom_in();
  void zoom_out();
  void show_search();
  void set_color_mode(ColorMode mode);
  // Pass stepper: nodes coloured by their change against the previous snapshot (NodeId value ->
  // mark; green added/fused, orange rewritten). Ghost: a node the pass removed, laid out in place
  // (the model is the union graph, views/layout/ghost_graph.h): dashed red, faded, not selectable,
  // its tooltip says "removed by <pass>". `removed` lists removed nodes the view cannot show in
  // place (in the legend). Cleared by show_prepared/clear; kept across expand/collapse.
  enum class DiffMark { Added, Fused, Rewritten, Removed, Ghost };  // Removed: the "before" side
  void set_diff(std::unordered_map<uint64_t, DiffMark> marks, QStringList removed, QString pass = {});
  const std::unordered_map<uint64_t, DiffMark>& diff() const { return diff_; }
  static QColor diff_color(DiffMark m);
  // The colour that ties a fused node to its origins (here and in the "before" view).
  static QColor link_color() { return QColor(0x8e, 0x44, 0xd0); }
  // Numerics: nodes filled by a colour each (NodeId value -> colour, e.g. the mode diff's error scale),
  // the others neutral grey, with `legend` (rich text) in the view's bottom-left corner; empty clears
  // (the pass or category colours come back). Applied over the diff colours (ghosts keep their look).
  // Kept across relayouts and new snapshots (show_prepared, set_model: nodes absent from the map are
  // grey); cleared by clear().
  void set_heat(std::unordered_map<uint64_t, QColor> fills, QString legend);
  const std::unordered_map<uint64_t, QColor>& heat() const { return heat_; }
  QString heat_legend() const { return heat_legend_; }
  // Outlines the nodes (NodeId values) in the link colour; empty clears. Kept across relayouts.
  void set_linked(std::vector<uint64_t> nodes);
  // Nodes that ran on a fallback get a badge and the reason in their tooltip, in this snapshot and
  // every later one (graph_fallbacks.cpp): a node marked by its id, a node that stands for a marked
  // one (a marked id among its origins: rewritten or fused from it), and where `marks.ops` names
  // its op type, any node of that type. Empty clears.
  void set_fallbacks(FallbackMarks marks);
  const FallbackMarks& fallbacks() const { return fallbacks_; }
  // The reason node `node` (index into the model) ran on a fallback; empty when it did not.
  QString fallback_reason(int node) const;
  int badged_nodes() const;
  const std::vector<uint64_t>& linked() const { return linked_; }
  // Centres the view on the linked nodes.
  void focus_linked();
  // Number of ghost boxes on the scene (tests, status line).
  int ghost_count() const;
  ColorMode color_mode() const { return color_mode_; }
  void set_highlight(const std::vector<int>& nodes);

  bool export_svg(const QString& path) const;
  bool export_png(const QString& path, double max_pixels = 12000.0) const;
  QString dot_text() const;
  bool layout_busy() const { return layout_job_ != 0; }
  // For layout checks, in this widget's coordinates: each drawn node's box where the viewport shows
  // it (clipped to the viewport; boxes out of sight left out), and the legends shown.
  QList<QRect> visible_node_rects() const;
  QList<QRect> legend_rects() const;
  // Where node `node` (model index) is drawn, in this widget's coordinates; empty when not drawn.
  QRect node_rect(int node) const;
  // Takes the application palette's colours (after a theme change) and draws the scene again.
  void refresh_theme();
  GraphCanvas* canvas() const { return canvas_; }
  Minimap* minimap() const { return minimap_; }
  SearchBar* search_bar() const { return search_; }

 Q_SIGNALS:
  void node_selected(int node);  // -1: nothing
  void layout_started();
  void layout_finished(int items, double layout_ms);
  void layout_failed(const QString& message);
  // After the first frame that shows a new model has been painted.
  void first_paint();

 protected:
  bool eventFilter(QObject* obj, QEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;

 private:
  void apply(PreparedView view, int then_select);
  void reset_scene();  // clear() but the heat
  void on_clicked(QGraphicsItem* item);
  void on_double_clicked(QGraphicsItem* item, QPointF pos);
  void place_overlays();
  void update_minimap();

  JobTracker* jobs_;
  GraphCanvas* canvas_;
  QGraphicsScene* scene_;
  Minimap* minimap_;
  SearchBar* search_;
  GraphTheme theme_;
  std::shared_ptr<const GraphModel> model_;
  std::unique_ptr<PreparedView> view_;
  QHash<QString, BoxItem*> boxes_;
  std::map<std::set<int>, std::shared_ptr<const PreparedView>> cache_;  // layouts by collapsed set
  std::vector<int> highlighted_;
  ColorMode color_mode_ = ColorMode::Category;
  void apply_diff();
  std::unordered_map<uint64_t, DiffMark> diff_;
  QStringList removed_;
  QString diff_pass_;
  std::vector<uint64_t> linked_;
  void apply_linked();
  QWidget* ghosts_ = nullptr;  // the diff legend and removed nodes, in a band above the viewport
  void apply_heat();
  void apply_fallbacks();
  FallbackMarks fallbacks_;
  void place_legends();
  std::unordered_map<uint64_t, QColor> heat_;
  QString heat_legend_;
  QWidget* heat_label_ = nullptr;  // the heat legend, in a band below the viewport
  JobId layout_job_ = 0;
  int selected_ = -1;
  bool awaiting_first_paint_ = false;
};

}  // namespace ms::views
