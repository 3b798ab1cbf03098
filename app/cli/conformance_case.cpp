#include "app/cli/conformance_case.h"
#include "app/cli/output_compare.h"
#include "engine/backends/select.h"
#include "engine/compiler/compile.h"
#include "engine/compiler/pipeline.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/strings.h"
#include "engine/frontend/onnx/onnx_io.h"
#include "engine/runtime/backend.h"
#include "engine/runtime/executor.h"

namespace fs = std::filesystem;

namespace ms::cli {

const char* case_status_name(CaseStatus s) {
  switch (s) {
    case CaseStatus::Passed: return "passed";
    case CaseStatus::Failed: return "failed";
    case CaseStatus::Skipped: return "skipped";
    case CaseStatus::Crashed: return "crashed";
    case CaseStatus::Timeout: return "timeout";
  }
  return "failed";
}

namespace {

// input_10.pb sorts after input_9.pb: order by the number, not the text.
std::vector<fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<long, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || entry.path().extension() != ".pb") continue;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - 3);
    if (digits.empty() ||
        !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
      continue;
    found.emplace_back(std::stol(digits), entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

std::vector<fs::path> data_sets(const fs::path& case_dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(case_dir, ec)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The op a status is about: the node it names, else the "(Op #12)" of a node label in the
// message, else the only op type of the graph.
std::string op_of(const Status& st, const ir::Graph* g) {
  if (g != nullptr && st.node_id() != 0) {
    if (const ir::Node* n = g->find_node(ir::NodeId{st.node_id()})) return n->op_type;
  }
  // The importer lists every missing op: "unsupported ops: Foo (node 'a', opset 13), Bar (...)".
  static const std::regex missing_re(R"(([A-Za-z_][A-Za-z0-9_.]*) \(node ')");
  if (st.message().find("unsupported ops: ") != std::string::npos) {
    std::string ops;
    for (auto it = std::sregex_iterator(st.message().begin(), st.message().end(), missing_re);
         it != std::sregex_iterator(); ++it) {
      ops += (ops.empty() ? "" : ", ") + (*it)[1].str();
    }
    if (!ops.empty()) return ops;
  }
  static const std::regex label_re(R"(\(([A-Za-z_][A-Za-z0-9_]*) #[0-9]+\))");
  static const std::regex op_re(R"(\bop '?([A-Z][A-Za-z0-9_]*)'?)");
  std::smatch m;
  if (std::regex_search(st.message(), m, label_re) || std::regex_search(st.message(), m, op_re)) return m[1];
  if (g != nullptr) {
    std::set<std::string> ops;
    for (const auto& n : g->nodes()) ops.insert(n.op_type);
    if (ops.size() == 1) return *ops.begin();
  }
  return "";
}

CaseResult from_status(const Status& st, const ir::Graph* g, const std::string& context) {
  CaseResult r;
  r.status = st.code() == ErrorCode::Unsupported ? CaseStatus::Skipped : CaseStatus::Failed;
  r.message = context + error_code_name(st.code()) + ": " + st.message();
  r.op = op_of(st, g);
  return r;
}

// numpy has no bfloat16, so ONNX stores bf16 test data as uint16 bit patterns. Read them as the
// bf16 the graph declares (same bits).
ir::ValueType declared_type(const ir::Graph& graph, const std::string& value_name) {
  const ir::Value* v = graph.value(value_name);
  return v ? v->type : ir::ValueType{};
}

Tensor as_declared(const Tensor& t, const ir::Graph& graph, const std::string& value_name) {
  const ir::Value* v = graph.value(value_name);
  if (v != nullptr && v->type.dtype == DType::BF16 && t.dtype() == DType::U16)
    return Tensor(t.buffer(), DType::BF16, t.shape(), t.byte_offset());
  return t;
}

// Runs one data set; the result is Passed or the first problem.
CaseResult run_data_set(const ir::Graph& graph, runtime::Backend& backend, const fs::path& set_dir,
                        const CaseOptions& opt) {
  const std::string where = set_dir.filename().string() + ": ";
  runtime::TensorMap inputs;
  std::map<std::string, ir::ValueType> signature;
  const auto input_files = numbered_files(set_dir, "input_");
  if (input_files.size() > graph.inputs.size()) {
    return {CaseStatus::Failed,
            where + std::to_string(input_files.size()) + " input files for " + std::to_string(graph.inputs.size()) +
                " graph inputs",
            ""};
  }
  for (size_t i = 0; i < input_files.size(); ++i) {
    auto t = onnx_io::load_value_pb(input_files[i].string(), declared_type(graph, graph.inputs[i]));
    if (!t) return from_status(t.status(), &graph, where + input_files[i].filename().string() + ": ");
    *t = as_declared(*t, graph, graph.inputs[i]);
    signature[graph.inputs[i]] = ir::type_of(*t);
    inputs[graph.inputs[i]] = std::move(*t);
  }
  std::vector<Tensor> expected;
  for (const auto& f : numbered_files(set_dir, "output_")) {
    const size_t i = expected.size();
    auto t = onnx_io::load_value_pb(
        f.string(), i < graph.outputs.size() ? declared_type(graph, graph.outputs[i]) : ir::ValueType{});
    if (!t) return from_status(t.status(), &graph, where + f.filename().string() + ": ");
    expected.push_back(i < graph.outputs.size() ? as_declared(*t, graph, graph.outputs[i]) : std::move(*t));
  }

  Expected<std::vector<Tensor>> got = std::vector<Tensor>{};
  if (opt.mode == "graph") {
    compiler::CompileOptions copts;
    if (auto level = compiler::parse_jit_level(opt.jit_level)) copts.jit_level = *level;
    copts.disabled_passes = opt.disabled_passes;
    copts.verify_passes = true;  // a pass that breaks the graph fails the case by name
    auto exe = compiler::compile_executor(graph, backend, signature, copts);
    if (!exe) return from_status(exe.status(), &graph, where + "compile: ");
    got = (*exe)->run(inputs);
  } else {
    runtime::EagerExecutor exe(graph, backend);
    got = exe.run(inputs);
  }
  if (!got) return from_status(got.status(), &graph, where + "run: ");
  if (got->size() != expected.size()) {
    return {CaseStatus::Failed,
            where + std::to_string(got->size()) + " outputs, expected " + std::to_string(expected.size()), ""};
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    Tensor out = (*got)[i];
    if (out.defined() && out.is_tensor() && !out.device().is_cpu()) {
      Tensor host = Tensor::empty(out.dtype(), out.shape());
      if (Status st = backend.copy_to_host(out, host); !st) return from_status(st, &graph, where + "copy: ");
      out = host;
    }
    const std::string name = i < graph.outputs.size() ? graph.outputs[i] : std::to_string(i);
    if (!out.defined()) return {CaseStatus::Failed, where + "output '" + name + "' was not produced", ""};
    if (std::string diff = compare_value(out, expected[i], opt.rtol, opt.atol); !diff.empty())
      return {CaseStatus::Failed, where + "output '" + name + "': " + diff, ""};
  }
  return {CaseStatus::Passed, "", ""};
}

}  // namespace

CaseResult run_conformance_case(const std::string& case_dir, const CaseOptions& options) {
  const fs::path dir(case_dir);
  auto graph = onnx_io::load_model((dir / "model.onnx").string());
  if (!graph) return from_status(graph.status(), nullptr, "load: ");
  const auto sets = data_sets(dir);
  if (sets.empty()) return {CaseStatus::Failed, "no test_data_set_* folder", ""};
  auto choice = backends::create_backend(options.device, options.threads);
  if (!choice) return from_status(choice.status(), nullptr, "backend: ");
  // Asked for CUDA and got the CPU: results would not be about the device.
  if (!choice->note.empty()) return {CaseStatus::Skipped, choice->note, ""};
  auto backend = std::move(choice->backend);
  runtime::FallbackLog fallbacks;
  runtime::FallbackScope noting(fallbacks);
  runtime::find_fallbacks(*graph, *backend, fallbacks);
  CaseResult r{CaseStatus::Passed, "", ""};
  for (const auto& set : sets) {
    r = run_data_set(*graph, *backend, set, options);
    if (r.status != CaseStatus::Passed) break;
  }
  r.fallbacks = fallbacks.list();
  return r;
}

}  // namespace ms::cli
