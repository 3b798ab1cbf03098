// Issue 24: nothing a job throws ends the app. A result type that carries a Status gets the
// message; any other fails the job with the `failed` signal. bad_alloc says how much and for what.
#include <gtest/gtest.h>

#include <QCoreApplication>
#include <stdexcept>
#include <vector>

#include "engine/core/alloc_error.h"
#include "tests/views/test_graphs.h"
#include "views/jobs/job_tracker.h"

namespace ms::views {
namespace {

void settle(JobTracker& jobs) {
  jobs.wait_all();
  for (int i = 0; i < 3; ++i) QCoreApplication::processEvents();
}

TEST(JobTracker, AnExceptionBecomesTheJobsErrorMessage) {
  test::qt_app();
  JobTracker jobs;
  QObject receiver;
  std::string message;
  ms::ErrorCode code = ms::ErrorCode::Ok;
  jobs.start(
      QStringLiteral("t"), QStringLiteral("Allocating"), &receiver,
      [](JobContext&) -> ms::Expected<int> {
        throw ms::AllocationFailed(size_t{3} << 30, "a f32 [1,3,1024,262144] tensor");
      },
      [&](ms::Expected<int> r) {
        ASSERT_FALSE(r);
        message = r.status().message();
        code = r.status().code();
      });
  settle(jobs);
  EXPECT_EQ(message, "out of memory: 3.00 GiB asked for a f32 [1,3,1024,262144] tensor");
  EXPECT_EQ(code, ms::ErrorCode::OutOfMemory);
}

TEST(JobTracker, AJobWhoseResultCannotCarryAnErrorFails) {
  test::qt_app();
  JobTracker jobs;
  QObject receiver;
  QString failed_title, failed_message;
  bool delivered = true, done_called = false;
  QObject::connect(&jobs, &JobTracker::failed, [&](JobId, const QString& title, const QString& m) {
    failed_title = title;
    failed_message = m;
  });
  QObject::connect(&jobs, &JobTracker::finished, [&](JobId, bool d) { delivered = d; });
  jobs.start(
      QStringLiteral("t"), QStringLiteral("Training"), &receiver,
      [](JobContext&) -> std::vector<int> { throw std::runtime_error("boom"); },
      [&](std::vector<int>) { done_called = true; });
  settle(jobs);
  EXPECT_FALSE(done_called);
  EXPECT_FALSE(delivered);
  EXPECT_EQ(failed_title, QStringLiteral("Training"));
  EXPECT_EQ(failed_message, QStringLiteral("internal error: boom"));

  jobs.start(
      QStringLiteral("t"), QStringLiteral("Plain bad_alloc"), &receiver,
      [](JobContext&) -> std::vector<int> { throw std::bad_alloc(); }, [&](std::vector<int>) { done_called = true; });
  settle(jobs);
  EXPECT_FALSE(done_called);
  EXPECT_EQ(failed_message, QStringLiteral("out of memory (the size asked for is not known)"));
}

}  // namespace
}  // namespace ms::views
