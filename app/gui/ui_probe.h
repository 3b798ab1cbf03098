// Measures how long the UI thread goes without serving its event loop: a 5 ms timer notes the
// largest gap between its ticks. A gap well over 5 ms means the thread was blocked that long.
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

namespace ms::app {

class UiLatencyProbe : public QObject {
  Q_OBJECT
 public:
  explicit UiLatencyProbe(QObject* parent = nullptr) : QObject(parent) {
    timer_.setInterval(5);
    timer_.setTimerType(Qt::PreciseTimer);
    connect(&timer_, &QTimer::timeout, this, [this] {
      const double now = static_cast<double>(clock_.nsecsElapsed()) / 1e6;
      if (last_ >= 0) worst_ = std::max(worst_, now - last_ - 5.0);
      last_ = now;
      ++ticks_;
    });
  }
  void start() {
    clock_.start();
    last_ = -1;
    worst_ = 0;
    ticks_ = 0;
    timer_.start();
  }
  void stop() { timer_.stop(); }
  double worst_block_ms() const { return std::max(0.0, worst_); }
  int ticks() const { return ticks_; }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  double last_ = -1, worst_ = 0;
  int ticks_ = 0;
};

}  // namespace ms::app
