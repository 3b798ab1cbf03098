#include <gtest/gtest.h>

#include <set>

#include "profiler/io/chrome_trace.h"
#include "test_util.h"

namespace ms::prof {
namespace {

std::string data(const std::string& rel) { return std::string(MODESCOPE_SOURCE_DIR) + "/tests/data/traces/" + rel; }

TEST(ChromeExport, RecordedTracesHaveTheFieldsEachPhaseNeeds) {
  for (auto mode : {runtime::ExecMode::PyNative, runtime::ExecMode::Graph}) {
    TracePtr t = test::record(mode, 2);
    ASSERT_TRUE(t);
    const std::string text = to_chrome_json(*t);
    SCOPED_TRACE(runtime::exec_mode_name(mode));
    test::check_chrome_structure(text);
    const auto j = nlohmann::json::parse(text);
    // Perfetto metadata: process and thread names with sort indices.
    size_t names = 0, sorts = 0;
    for (const auto& e : j["traceEvents"]) {
      if (e["ph"] != "M") continue;
      names += e["name"] == "thread_name";
      sorts += e["name"] == "thread_sort_index";
    }
    EXPECT_GE(names, 2u);
    EXPECT_EQ(names, sorts);
    EXPECT_EQ(j["modescope"]["metadata"]["model"], "small_net");
  }
}

TEST(ChromeExport, OwnTracesRoundTripByteForByte) {
  for (auto mode : {runtime::ExecMode::PyNative, runtime::ExecMode::Graph}) {
    TracePtr t = test::record(mode, 2);
    ASSERT_TRUE(t);
    const std::string first = to_chrome_json(*t);
    auto back = import_chrome_trace_string(first);
    ASSERT_TRUE(back) << back.status().message();
    EXPECT_FALSE(back->truncated);
    EXPECT_TRUE(back->warnings.empty()) << back->warnings.front();
    const Trace& u = *back->trace;
    EXPECT_FALSE(u.foreign);
    EXPECT_EQ(u.events.size(), t->events.size());
    EXPECT_EQ(u.flows.size(), t->flows.size());
    EXPECT_EQ(u.blocks.size(), t->blocks.size());
    EXPECT_EQ(u.nodes.size(), t->nodes.size());
    EXPECT_EQ(u.metadata, t->metadata);
    for (size_t i = 0; i < u.events.size(); ++i) {
      EXPECT_EQ(u.events[i].ts_ns, t->events[i].ts_ns);
      EXPECT_EQ(u.events[i].dur_ns, t->events[i].dur_ns);
      EXPECT_EQ(u.events[i].kind, t->events[i].kind);
      EXPECT_EQ(u.str(u.events[i].impl), t->str(t->events[i].impl));
    }
    EXPECT_EQ(to_chrome_json(u), first);
  }
}

TEST(ChromeImport, PyTorchProfilerOutputLoadsAsForeignTrace) {
  auto r = import_chrome_trace_file(data("foreign/pytorch_cpu_small.json"));
  ASSERT_TRUE(r) << r.status().message();
  const Trace& t = *r->trace;
  EXPECT_TRUE(t.foreign);
  EXPECT_EQ(t.events.size(), 91u);
  bool conv = false;
  for (const Event& e : t.events) {
    EXPECT_EQ(e.kind, EventKind::Foreign);
    conv |= t.str(e.name) == "aten::conv2d";
  }
  EXPECT_TRUE(conv);
  // Foreign traces survive our own export and import unchanged.
  const std::string once = to_chrome_json(t);
  test::check_chrome_structure(once);
  auto again = import_chrome_trace_string(once);
  ASSERT_TRUE(again) << again.status().message();
  EXPECT_TRUE(again->trace->foreign);
  EXPECT_EQ(to_chrome_json(*again->trace), once);
}

TEST(ChromeImport, KinetoStyleTraceKeepsFlowsSlicesCountersAndNames) {
  auto r = import_chrome_trace_file(data("foreign/kineto_style.json"));
  ASSERT_TRUE(r) << r.status().message();
  const Trace& t = *r->trace;
  ASSERT_EQ(t.flows.size(), 1u);
  EXPECT_EQ(t.str(t.events[t.flows[0].from].name), "cudaLaunchKernel");
  EXPECT_EQ(t.str(t.events[t.flows[0].to].name), "implicit_convolve_sgemm");
  bool forward = false, step = false;
  for (const Event& e : t.events) {
    if (t.str(e.name) == "forward") {
      forward = true;
      EXPECT_EQ(e.dur_ns, 210000);
    }
    step |= t.str(e.name) == "step" && e.dur_ns == 0;
  }
  EXPECT_TRUE(forward);
  EXPECT_TRUE(step);
  std::set<std::string> series;
  for (const auto& c : t.counters) series.insert(std::string(t.str(c.name)));
  EXPECT_EQ(series, (std::set<std::string>{"GPU Memory.allocated", "GPU Memory.reserved"}));
  bool gpu = false, named = false;
  for (const Track& tr : t.tracks) {
    gpu |= tr.kind == TrackKind::GpuStream && tr.name == "stream 7" && tr.process_name == "GPU 0";
    named |= tr.name == "python3 main" && tr.kind == TrackKind::HostThread;
  }
  EXPECT_TRUE(gpu);
  EXPECT_TRUE(named);
  std::string warnings;
  for (const auto& w : r->warnings) warnings += w + "\n";
  EXPECT_NE(warnings.find("phase 'b'"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("phase 'e'"), std::string::npos) << warnings;
  // Sub-microsecond timestamps survive (ns resolution).
  bool frac = false;
  for (const Event& e : t.events) frac |= t.str(e.name) == "aten::conv2d" && e.dur_ns == 80250;
  EXPECT_TRUE(frac);
}

TEST(ChromeImport, CutOffOwnTraceLoadsTheWholeEvents) {
  TracePtr t = test::record(runtime::ExecMode::PyNative, 2);
  ASSERT_TRUE(t);
  const std::string text = to_chrome_json(*t);
  const size_t events = text.find("\"traceEvents\"");
  ASSERT_NE(events, std::string::npos);
  const std::string cut = text.substr(0, events + (text.size() - events) / 2);
  auto r = import_chrome_trace_string(cut);
  ASSERT_TRUE(r) << r.status().message();
  EXPECT_TRUE(r->truncated);
  ASSERT_FALSE(r->warnings.empty());
  EXPECT_NE(r->warnings[0].find("truncated"), std::string::npos);
  EXPECT_GT(r->trace->events.size(), 0u);
  EXPECT_LT(r->trace->events.size(), t->events.size());
  EXPECT_EQ(r->trace->nodes.size(), t->nodes.size());
}

TEST(ChromeImport, OneHugeStringIsAnErrorNamingTheField) {
  std::string text = "[{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1,\"name\":\"";
  text.append(8u << 20, 'a');
  text += "\"}]";
  auto r = import_chrome_trace_string(text);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("traceEvents[0]: a string of 8388608 bytes in 'name'"), std::string::npos)
      << r.status().message();
}

TEST(ChromeImport, MissingFileIsAnIoError) {
  auto r = import_chrome_trace_file(data("does_not_exist.json"));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), ErrorCode::Io);
}

}  // namespace
}  // namespace ms::prof
