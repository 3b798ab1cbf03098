// Where the build generated the ONNX node tests (tests/conformance/CMakeLists.txt); empty when the
// build had no Python with onnx, in which case the tests that read them skip and say so.
#pragma once

#include <filesystem>
#include <string>

namespace ms::testing {
inline std::filesystem::path node_tests_dir() {
#ifdef MODESCOPE_NODE_TESTS_DIR
  return MODESCOPE_NODE_TESTS_DIR;
#else
  return {};
#endif
}
inline std::string no_node_tests_reason() {
  return "no generated ONNX node tests (the build found no Python with onnx 1.12 to generate them)";
}
}  // namespace ms::testing
