// The bad-trace corpus: every file gives its expected error (or loads what is whole and says so).
#include <gtest/gtest.h>

#include <fstream>

#include "profiler/io/chrome_trace.h"

namespace ms::prof {
namespace {

TEST(BadTraces, EachFileGivesItsExpectedError) {
  const std::string dir = std::string(MODESCOPE_SOURCE_DIR) + "/tests/data/traces/bad/";
  std::ifstream list(dir + "expected.txt");
  ASSERT_TRUE(list) << "no expected.txt";
  std::string line;
  int cases = 0;
  while (std::getline(list, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    const std::string file = line.substr(0, tab), expected = line.substr(tab + 1);
    SCOPED_TRACE(file);
    ++cases;
    auto r = import_chrome_trace_file(dir + file);
    if (expected.rfind("TRUNCATED ", 0) == 0) {
      ASSERT_TRUE(r) << r.status().message();
      EXPECT_TRUE(r->truncated);
      EXPECT_EQ(r->trace->events.size(), std::stoul(expected.substr(10)));
      ASSERT_FALSE(r->warnings.empty());
      EXPECT_NE(r->warnings[0].find("truncated"), std::string::npos);
      continue;
    }
    ASSERT_FALSE(r) << "loaded, expected: " << expected;
    EXPECT_NE(r.status().message().find(expected), std::string::npos)
        << "message: " << r.status().message() << "\nexpected: " << expected;
    EXPECT_NE(r.status().message().find(file), std::string::npos) << "the message names the file";
  }
  EXPECT_GE(cases, 30);
}

}  // namespace
}  // namespace ms::prof
