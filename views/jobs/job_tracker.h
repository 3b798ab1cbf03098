// One tracker for all long work (load, layout, compile, run): each job gets an id, runs on a worker
// thread, can be cancelled, reports throttled progress, and delivers its result queued on the UI
// thread to a QPointer'd receiver. A result is dropped when the receiver is gone, the job was
// cancelled, or a newer job of the same kind started since (stale).
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>

class QThreadPool;

#include <atomic>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <type_traits>

#include "engine/core/status.h"

namespace ms::views {

using JobId = quint64;

// Handed to the work function on the worker thread.
class JobTracker;

class JobContext {
 public:
  bool cancelled() const { return cancelled_->load(std::memory_order_relaxed); }
  std::function<bool()> cancel_predicate() const {
    auto flag = cancelled_;
    return [flag] { return flag->load(std::memory_order_relaxed); };
  }
  // Fraction in [0, 1], or < 0 for "busy". Throttled to ~20 updates a second.
  void progress(double fraction, const QString& text = {});

 private:
  friend class JobTracker;
  JobId id_ = 0;
  std::shared_ptr<std::atomic<bool>> cancelled_;
  std::shared_ptr<QString> error_;  // set when the work threw and its result type cannot carry it
  JobTracker* tracker_ = nullptr;
  std::shared_ptr<std::atomic<qint64>> last_progress_ms_;
};

class JobTracker : public QObject {
  Q_OBJECT

 public:
  explicit JobTracker(QObject* parent = nullptr);
  ~JobTracker() override;

  // Starts `work(JobContext&) -> R` on a worker; `done(R)` runs on this object's thread if the result
  // is still wanted. `kind` groups jobs whose results supersede each other ("load", "layout").
  template <class Work, class Done>
  JobId start(const QString& kind, const QString& title, QObject* receiver, Work work, Done done) {
    using R = std::invoke_result_t<Work, JobContext&>;
    auto slot = std::make_shared<std::shared_ptr<R>>();
    return launch(
        kind, title, receiver,
        [work = std::move(work), slot](JobContext& ctx) mutable {
          // Nothing a job throws may reach the worker thread (that ends the app): a result type
          // that carries a Status (Expected<T>) gets the message, any other fails the job.
          try {
            *slot = std::make_shared<R>(work(ctx));
          } catch (...) {
            const std::string message = exception_message(std::current_exception());
            if constexpr (std::is_constructible_v<R, ms::Status>)
              *slot = std::make_shared<R>(ms::Status::error(exception_code(std::current_exception()), message));
            else
              *ctx.error_ = QString::fromStdString(message);
          }
        },
        [done = std::move(done), slot]() mutable {
          if (*slot) done(std::move(**slot));
        });
  }

  // The one-line message for an exception a job threw: bad_alloc says how much was asked for and
  // for what where the engine knows (ms::AllocationFailed).
  static std::string exception_message(std::exception_ptr e);
  static ms::ErrorCode exception_code(std::exception_ptr e);

  void cancel(JobId id);
  void cancel_all();
  bool running(JobId id) const;
  int active_count() const;
  // Waits for every worker to finish (tests, shutdown).
  void wait_all();

 Q_SIGNALS:
  void started(ms::views::JobId id, const QString& title);
  void progressed(ms::views::JobId id, double fraction, const QString& text);
  // delivered: the result reached its receiver; otherwise it was cancelled, stale or orphaned.
  void finished(ms::views::JobId id, bool delivered);
  // The job threw and its result could not carry the error: `message` says what (finished follows).
  void failed(ms::views::JobId id, const QString& title, const QString& message);

 private:
  friend class JobContext;
  struct Job;
  JobId launch(const QString& kind, const QString& title, QObject* receiver, std::function<void(JobContext&)> work,
               std::function<void()> deliver);
  void complete(JobId id);

  mutable std::mutex mutex_;
  std::map<JobId, std::shared_ptr<Job>> jobs_;
  std::map<QString, JobId> latest_;
  std::atomic<JobId> next_{0};
  QThreadPool* pool_;
};

}  // namespace ms::views
