// Views' exports go through the atomic write helper: an export that fails (disk full, permission
// denied at the rename) returns false and leaves the previous file byte for byte, with no temporary
// file beside it; a successful one replaces it.
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include "engine/core/atomic_file.h"
#include "profiler/analysis/compare.h"
#include "tests/views/result_traces.h"
#include "tests/views/test_graphs.h"
#include "views/common/save_file.h"
#include "views/compare/compare_view.h"

namespace ms::views {
namespace {

QByteArray read_all(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

TEST(ExportWriteFault, FailedCsvAndPngExportsKeepTheOldFiles) {
  test::qt_app();
  CompareView v;
  v.resize(800, 400);
  v.set_comparison(prof::compare_runs(*test::generated_trace(false), *test::generated_trace(true)));
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  const QString csv = dir.filePath(QStringLiteral("c.csv")), png = dir.filePath(QStringLiteral("c.png"));
  for (const QString& p : {csv, png}) {
    QFile f(p);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write("old");
  }
  {
    ScopedWriteFault fault({WriteStep::Write, 1, ENOSPC});
    EXPECT_FALSE(v.export_csv(csv));
  }
  {
    ScopedWriteFault fault({WriteStep::Rename, 1, EACCES});
    EXPECT_FALSE(v.export_png(png));
  }
  EXPECT_EQ(read_all(csv), QByteArray("old"));
  EXPECT_EQ(read_all(png), QByteArray("old"));
  EXPECT_EQ(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 2);
  // The error names the file and why.
  QString error;
  {
    ScopedWriteFault fault({WriteStep::Fsync, 1, EIO});
    EXPECT_FALSE(save_bytes(csv, "x", &error));
  }
  EXPECT_TRUE(error.startsWith(csv + QStringLiteral(": "))) << error.toStdString();
  EXPECT_TRUE(error.contains(QStringLiteral("Input/output error"))) << error.toStdString();
  // Without a fault both replace the old file.
  EXPECT_TRUE(v.export_csv(csv));
  EXPECT_TRUE(v.export_png(png));
  EXPECT_TRUE(read_all(csv).contains(','));
  EXPECT_TRUE(read_all(png).startsWith("\x89PNG"));
}

}  // namespace
}  // namespace ms::views
