#include "views/jobs/job_tracker.h"

#include <QDateTime>
#include <QMetaObject>
#include <QRunnable>
#include <QThreadPool>

#include "engine/core/alloc_error.h"

namespace ms::views {

struct JobTracker::Job {
  JobId id = 0;
  QString kind, title;
  QPointer<QObject> receiver;
  std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
  std::shared_ptr<QString> error = std::make_shared<QString>();
  std::function<void()> deliver;
};

void JobContext::progress(double fraction, const QString& text) {
  const qint64 now = QDateTime::currentMSecsSinceEpoch();
  if (fraction < 1.0 && now - last_progress_ms_->load() < 50) return;
  last_progress_ms_->store(now);
  JobTracker* t = tracker_;
  const JobId id = id_;
  QMetaObject::invokeMethod(
      t, [t, id, fraction, text] { Q_EMIT t->progressed(id, fraction, text); }, Qt::QueuedConnection);
}

JobTracker::JobTracker(QObject* parent) : QObject(parent), pool_(new QThreadPool(this)) {
  qRegisterMetaType<ms::views::JobId>("ms::views::JobId");
  pool_->setMaxThreadCount(std::max(2, QThread::idealThreadCount()));
}

JobTracker::~JobTracker() {
  cancel_all();
  pool_->waitForDone();
}

JobId JobTracker::launch(const QString& kind, const QString& title, QObject* receiver,
                         std::function<void(JobContext&)> work, std::function<void()> deliver) {
  auto job = std::make_shared<Job>();
  job->id = ++next_;
  job->kind = kind;
  job->title = title;
  job->receiver = receiver;
  job->deliver = std::move(deliver);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_[job->id] = job;
    latest_[kind] = job->id;
  }
  Q_EMIT started(job->id, title);
  auto ctx = std::make_shared<JobContext>();
  ctx->id_ = job->id;
  ctx->cancelled_ = job->cancelled;
  ctx->error_ = job->error;
  ctx->tracker_ = this;
  ctx->last_progress_ms_ = std::make_shared<std::atomic<qint64>>(0);
  const JobId id = job->id;
  QPointer<JobTracker> self(this);
  pool_->start([this, self, ctx, work = std::move(work), id]() mutable {
    if (!ctx->cancelled()) {
      try {
        work(*ctx);
      } catch (...) {  // start() catches already; a launch() without it must not end the app either
        *ctx->error_ = QString::fromStdString(exception_message(std::current_exception()));
      }
    }
    // `this` outlives the pool (the destructor waits), so queueing to it is safe.
    QMetaObject::invokeMethod(
        this, [this, id] { complete(id); }, Qt::QueuedConnection);
  });
  return id;
}

void JobTracker::complete(JobId id) {
  std::shared_ptr<Job> job;
  bool current = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = jobs_.find(id);
    if (it == jobs_.end()) return;
    job = it->second;
    jobs_.erase(it);
    current = latest_[job->kind] == id;
  }
  if (!job->error->isEmpty()) {
    Q_EMIT failed(id, job->title, *job->error);
    Q_EMIT finished(id, false);
    return;
  }
  const bool deliver = current && !job->cancelled->load() && job->receiver;
  if (deliver) job->deliver();
  Q_EMIT finished(id, deliver);
}

std::string JobTracker::exception_message(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const ms::AllocationFailed& a) {
    return a.what();
  } catch (const std::bad_alloc&) {
    return "out of memory (the size asked for is not known)";
  } catch (const std::exception& x) {
    return std::string("internal error: ") + x.what();
  } catch (...) {
    return "internal error: an unknown exception";
  }
}

ms::ErrorCode JobTracker::exception_code(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_alloc&) {
    return ms::ErrorCode::OutOfMemory;
  } catch (...) {
    return ms::ErrorCode::Internal;
  }
}

void JobTracker::cancel(JobId id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = jobs_.find(id);
  if (it != jobs_.end()) it->second->cancelled->store(true);
}

void JobTracker::cancel_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [id, job] : jobs_) job->cancelled->store(true);
}

bool JobTracker::running(JobId id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return jobs_.count(id) != 0;
}

int JobTracker::active_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(jobs_.size());
}

void JobTracker::wait_all() { pool_->waitForDone(); }

}  // namespace ms::views
