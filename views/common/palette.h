// Colours every view shares, so an op has one colour in the graph, the timeline, the memory heatmap
// and the legends.
#pragma once

#include <QColor>
#include <QString>
#include <string>

namespace ms::views {

QColor category_color(int category);  // ops::OpCategory as int; -1 = unknown
QColor op_type_color(const QString& op_type);
// The op's category as int (ops::OpCategory); a fused op (FusedConv, FusedMatMul...) takes the
// category of the op it is built around; -1 when unknown.
int op_category(const std::string& op_type);

}  // namespace ms::views
