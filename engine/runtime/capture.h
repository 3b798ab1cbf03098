// Whole-graph capture and replay (CUDA Graphs on the CUDA backend), and streams for concurrent
// branches. A backend that can record the device work of one run and launch it again as one unit
// implements GraphCapture beside Backend; the Graph-mode executor uses it at O2 when every step can
// be recorded (engine/runtime/graph_executor.cpp).
//
// What a recording fixes: every address it touched. The executor therefore records only once the
// memory plan is final (kernel scratch learned), with graph inputs staged in device buffers it owns,
// graph outputs in fixed buffers, and constants held on the device for the recording's lifetime.
#pragma once

#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/core/tensor.h"
#include "engine/ir/graph.h"

namespace ms::runtime {

// A recorded run: launching it enqueues all of its device work at once.
class CapturedRun {
 public:
  virtual ~CapturedRun() = default;
  virtual Status launch() = 0;
  virtual size_t nodes() const = 0;  // device operations recorded (kernels, copies, memsets)
};

class GraphCapture {
 public:
  virtual ~GraphCapture() = default;
  // Whether the node's kernel runs entirely on the device without host synchronisation ("" yes),
  // else why not, in a few words ("runs on the CPU", "checks indices on the host").
  virtual std::string why_not_capturable(const ir::Node& node) const = 0;
  // A device copy of a host tensor that stays valid while the returned tensor is held.
  virtual Expected<Tensor> resident(const Tensor& host) = 0;
  // Device work enqueued by this thread between begin and end is recorded, not run.
  virtual Status begin_capture() = 0;
  // Ends the recording; with `keep` false (a step failed while recording) it is discarded.
  virtual Expected<std::unique_ptr<CapturedRun>> end_capture(bool keep) = 0;

  // Streams for concurrent branches. Device work enqueued after use_stream(k) goes to stream k
  // (0 is the backend's own); stream_wait(w, p) makes later work on stream w wait for everything
  // enqueued on stream p so far. Recorded runs keep these as edges of the recorded graph.
  virtual int max_streams() const { return 1; }
  virtual Status use_stream(int) { return Status::ok(); }
  virtual Status stream_wait(int, int) { return Status::ok(); }
};

}  // namespace ms::runtime
