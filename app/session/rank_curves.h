// The loss curves of a data-parallel training run, one per rank, as the Training tab draws them and
// a session keeps them (TrainingCurve, one per rank): each from that rank's train report (the
// `train --report` JSON: losses, step_ms_all, rank, world_size) or its trace. The CLI's `train
// --session` under mpirun, the app's Training tab with ranks > 1 and File > Open Ranks build them here.
#pragma once

#include <string>
#include <vector>

#include "app/session/session_file.h"
#include "engine/core/status.h"

namespace ms::session {

// "PyNative rank 1", "Graph rank 0": the curve's name for `mode` (pynative | graph).
std::string rank_curve_name(const std::string& mode, int rank);

// Rank r's curve from its report (JSON text); `lrs` (the schedule, the same on every rank) when the
// report has none. The curve's report is the rank's report with a "summary" line added. Errors
// name `what` (the file or the rank) and the field.
Expected<TrainingCurve> rank_curve_from_report(const std::string& report_json, const std::string& what,
                                               const std::vector<double>& lrs = {});

// Rank r's curve from what its trace recorded (File > Open Ranks: each step's loss, lr and time);
// its report holds the mode, rank, world size and summary.
TrainingCurve rank_curve(const std::string& mode, int rank, int world_size, std::vector<double> losses,
                         std::vector<double> lrs, std::vector<double> step_ms);

// The rank of a curve that rank_curve_from_report or rank_curve made (its report's "rank" with a "world_size"
// above 1), -1 for another curve.
int rank_of_curve(const TrainingCurve& c);

}  // namespace ms::session
