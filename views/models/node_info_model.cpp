#include "views/models/node_info_model.h"

#include <QFont>

#include <algorithm>
#include <cmath>

#include "engine/ops/schema.h"
#include "views/layout/graph_model.h"

namespace ms::views {

QString format_count(double v) {
  const char* units[] = {"", " K", " M", " G", " T"};
  int u = 0;
  while (std::fabs(v) >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? QString::number(v, 'g', 6) : QString::number(v, 'f', v < 10 ? 2 : 1) + units[u];
}

WeightStats weight_stats(const QString& name, const Tensor& t, int bins, int64_t max_samples) {
  WeightStats s;
  s.name = name;
  s.count = t.numel();
  if (s.count == 0 || t.dtype() == DType::Undefined) return s;
  const int64_t stride = std::max<int64_t>(1, s.count / std::max<int64_t>(1, max_samples));
  double mn = INFINITY, mx = -INFINITY, sum = 0, sq = 0;
  int64_t n = 0;
  for (int64_t i = 0; i < s.count; i += stride) {
    const double v = t.at_double(i);
    if (!std::isfinite(v)) continue;
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
    sq += v * v;
    ++n;
  }
  if (n == 0) return s;
  s.min = mn;
  s.max = mx;
  s.mean = sum / static_cast<double>(n);
  s.std = std::sqrt(std::max(0.0, sq / static_cast<double>(n) - s.mean * s.mean));
  s.histogram.assign(static_cast<size_t>(bins), 0);
  const double width = (mx - mn) / bins;
  for (int64_t i = 0; i < s.count; i += stride) {
    const double v = t.at_double(i);
    if (!std::isfinite(v)) continue;
    int b = width > 0 ? static_cast<int>((v - mn) / width) : 0;
    ++s.histogram[static_cast<size_t>(std::clamp(b, 0, bins - 1))];
  }
  return s;
}

NodeInfoModel::NodeInfoModel(QObject* parent)
    : QAbstractItemModel(parent), not_kept_why_(tr("over the snapshot budget")) {}

void NodeInfoModel::set_constants_not_kept(std::vector<Tensor> tensors, QString why) {
  not_kept_ = std::move(tensors);
  not_kept_buffers_.clear();
  for (const Tensor& t : not_kept_)
    if (t.buffer()) not_kept_buffers_.insert(t.buffer().get());
  not_kept_why_ = std::move(why);
}

bool NodeInfoModel::not_kept(const Tensor& t) const {
  return t.buffer() && not_kept_buffers_.count(t.buffer().get()) != 0;
}

QString NodeInfoModel::not_kept_text() const { return tr("not kept in the session file (%1)").arg(not_kept_why_); }

namespace {

QString attr_text(const ir::Attribute& a, const NodeInfoModel& info) {
  using K = ir::Attribute::Kind;
  auto join = [](const auto& v) {
    QStringList parts;
    for (const auto& x : v) parts << QString::number(x);
    if (parts.size() > 16) parts = parts.mid(0, 16) << QStringLiteral("…");
    return QStringLiteral("[") + parts.join(QStringLiteral(", ")) + QStringLiteral("]");
  };
  switch (a.kind()) {
    case K::Int: return QString::number(*a.get_if<int64_t>());
    case K::Float: return QString::number(static_cast<double>(*a.get_if<float>()));
    case K::String: return QString::fromStdString(*a.get_if<std::string>());
    case K::Ints: return join(*a.get_if<std::vector<int64_t>>());
    case K::Floats: return join(*a.get_if<std::vector<float>>());
    case K::Strings: {
      QStringList parts;
      for (const auto& s : *a.get_if<std::vector<std::string>>()) parts << QString::fromStdString(s);
      return parts.join(QStringLiteral(", "));
    }
    case K::Tensor: {
      const Tensor& t = *a.get_if<ms::Tensor>();
      return QStringLiteral("%1 %2%3")
          .arg(QString::fromStdString(std::string(dtype_name(t.dtype()))))
          .arg(QString::fromStdString(shape_to_string(t.shape())))
          .arg(info.not_kept(t) ? QStringLiteral("  — ") + info.not_kept_text() : QString());
    }
    case K::Graph:
      return QStringLiteral("subgraph (%1 nodes)").arg((*a.get_if<ir::Attribute::GraphPtr>())->nodes().size());
    case K::Graphs: return QStringLiteral("%1 subgraphs").arg(a.get_if<std::vector<ir::Attribute::GraphPtr>>()->size());
  }
  return {};
}

}  // namespace

int NodeInfoModel::section(const QString& key) const {
  for (int r : top_)
    if (rows_[static_cast<size_t>(r)].key == key) return r;
  return -1;
}

void NodeInfoModel::set_node(const GraphModel* m, int node) {
  beginResetModel();
  rows_.clear();
  top_.clear();
  weights_.clear();
  auto add = [&](int parent, QString key, QString value) {
    rows_.push_back({std::move(key), std::move(value), parent, {}});
    const int idx = static_cast<int>(rows_.size()) - 1;
    if (parent < 0)
      top_.push_back(idx);
    else
      rows_[static_cast<size_t>(parent)].children.push_back(idx);
    return idx;
  };
  if (m && node >= 0 && node < static_cast<int>(m->nodes.size())) {
    const ModelNode& mn = m->nodes[static_cast<size_t>(node)];
    const ir::Node& n = *mn.node;
    const int general = add(-1, tr("Node"), QString::fromStdString(n.op_type));
    add(general, tr("Name"), QString::fromStdString(n.name));
    add(general, tr("Id"), QString::number(n.id.value));
    if (!n.domain.empty()) add(general, tr("Domain"), QString::fromStdString(n.domain));
    const int cat = [&] {
      const ops::OpSchema* s = ops::Registry::instance().find(n.op_type, n.domain);
      return s ? static_cast<int>(s->category) : -1;
    }();
    add(general, tr("Category"),
        cat >= 0 ? QString(ops::category_name(static_cast<ops::OpCategory>(cat))) : tr("unknown op"));
    if (!n.attrs.empty()) {
      const int attrs = add(-1, tr("Attributes"), QString::number(n.attrs.size()));
      for (const auto& [k, a] : n.attrs) add(attrs, QString::fromStdString(k), attr_text(a, *this));
    }
    std::vector<ir::ValueType> in_types, out_types;
    auto type_of = [&](const std::string& v) {
      const ir::Value* val = m->value(mn, v);
      return val ? val->type : ir::ValueType{};
    };
    const int ins = add(-1, tr("Inputs"), QString::number(n.inputs.size()));
    int64_t params = 0;
    for (const auto& in : n.inputs) {
      in_types.push_back(in.empty() ? ir::ValueType{} : type_of(in));
      if (in.empty()) continue;
      const bool weight = std::find(mn.weights.begin(), mn.weights.end(), in) != mn.weights.end();
      add(ins, QString::fromStdString(in),
          QString::fromStdString(in_types.back().to_string()) + (weight ? tr("  (weight)") : QString()));
    }
    const int outs = add(-1, tr("Outputs"), QString::number(n.outputs.size()));
    for (const auto& out : n.outputs) {
      out_types.push_back(type_of(out));
      add(outs, QString::fromStdString(out), QString::fromStdString(out_types.back().to_string()));
    }
    if (!mn.weights.empty()) {
      const int ws = add(-1, tr("Weights"), QString());
      for (const auto& w : mn.weights) {
        const Tensor* t = m->constant(mn, w);
        if (!t) continue;
        params += t->numel();
        // A weight the session file did not keep holds zeros: its statistics would be made up.
        const bool lost = not_kept(*t);
        WeightStats st;
        if (lost) {
          st.name = QString::fromStdString(w);
          st.count = t->numel();
          st.not_kept = true;
        } else {
          st = weight_stats(QString::fromStdString(w), *t);
        }
        const int row = add(ws, st.name,
                            QStringLiteral("%1 %2%3")
                                .arg(QString::fromStdString(std::string(dtype_name(t->dtype()))))
                                .arg(QString::fromStdString(shape_to_string(t->shape())))
                                .arg(lost ? QStringLiteral("  — ") + not_kept_text() : QString()));
        add(row, tr("count"), format_count(static_cast<double>(st.count)));
        if (lost) {
          add(row, tr("values"), not_kept_text());
        } else {
          add(row, tr("min / max"), QStringLiteral("%1 / %2").arg(st.min, 0, 'g', 4).arg(st.max, 0, 'g', 4));
          add(row, tr("mean ± std"), QStringLiteral("%1 ± %2").arg(st.mean, 0, 'g', 4).arg(st.std, 0, 'g', 4));
        }
        weights_.push_back(std::move(st));
      }
      rows_[static_cast<size_t>(ws)].value = tr("%1 parameters").arg(format_count(static_cast<double>(params)));
    }
    // Unknown dims (a symbolic batch) count as 1, so a model opened with a free batch dim shows each
    // node's cost per item rather than nothing; the rows say so.
    bool unknown_dims = false;
    for (auto* types : {&in_types, &out_types})
      for (ir::ValueType& t : *types)
        if (t.dims)
          for (int64_t& d : *t.dims)
            if (d < 0) {
              d = 1;
              unknown_dims = true;
            }
    const ops::Cost c = ops::node_cost(n, in_types, out_types);
    const int cost = add(-1, tr("Cost"), unknown_dims ? tr("with ? = 1") : QString());
    add(cost, tr("FLOPs"), format_count(c.flops));
    add(cost, tr("Bytes moved"), format_count(c.bytes) + QStringLiteral("B"));
    add(cost, tr("Parameters"), format_count(static_cast<double>(params)));
    const int org = add(-1, tr("Origins"), QString::number(n.origins.size()));
    for (const auto& o : n.origins) {
      const int oi = m->index_of(o);
      add(org, QStringLiteral("#%1").arg(o.value),
          oi >= 0 ? QString::fromStdString(m->nodes[static_cast<size_t>(oi)].node->name) : QString());
    }
  }
  endResetModel();
}

QModelIndex NodeInfoModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column > 1) return {};
  const std::vector<int>& list = parent.isValid() ? rows_[static_cast<size_t>(parent.internalId())].children : top_;
  if (row >= static_cast<int>(list.size())) return {};
  return createIndex(row, column, static_cast<quintptr>(list[static_cast<size_t>(row)]));
}

QModelIndex NodeInfoModel::parent(const QModelIndex& child) const {
  if (!child.isValid()) return {};
  const int p = rows_[static_cast<size_t>(child.internalId())].parent;
  if (p < 0) return {};
  const int gp = rows_[static_cast<size_t>(p)].parent;
  const std::vector<int>& list = gp < 0 ? top_ : rows_[static_cast<size_t>(gp)].children;
  const int row = static_cast<int>(std::find(list.begin(), list.end(), p) - list.begin());
  return createIndex(row, 0, static_cast<quintptr>(p));
}

int NodeInfoModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return static_cast<int>(top_.size());
  if (parent.column() != 0) return 0;
  return static_cast<int>(rows_[static_cast<size_t>(parent.internalId())].children.size());
}

int NodeInfoModel::columnCount(const QModelIndex&) const { return 2; }

QVariant NodeInfoModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const Row& r = rows_[static_cast<size_t>(index.internalId())];
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return index.column() == 0 ? r.key : r.value;
  if (role == Qt::FontRole && r.parent < 0) {
    QFont f;
    f.setBold(true);
    return f;
  }
  return {};
}

QVariant NodeInfoModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o == Qt::Horizontal && role == Qt::DisplayRole) return section == 0 ? tr("Property") : tr("Value");
  return {};
}

}  // namespace ms::views
