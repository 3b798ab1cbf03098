// A run's outputs may outlive the observer that watched the run (a profiler recorder is often
// destroyed before the caller drops the outputs): their release must not call into a dead observer.
#include <gtest/gtest.h>

#include <memory>

#include "engine/backends/select.h"
#include "engine/runtime/executor.h"

namespace ms::runtime {
namespace {

using backends::create_backend;
using backends::create_cpu_backend;

class FreeCounter : public RunObserver {
 public:
  explicit FreeCounter(int* frees) : frees_(frees) {}
  void on_free(const MemoryEvent&) override { ++*frees_; }

 private:
  int* frees_;
};

TEST(ObserverLifetime, OutputsOutliveTheObserver) {
  auto be = create_cpu_backend(1);
  ir::Graph g;
  g.inputs.push_back("x");
  g.add_value(ir::Value{"x", ir::ValueType{DType::F32, std::vector<int64_t>{4}, {""}}, {}, std::nullopt});
  ir::Node n;
  n.op_type = "Relu";
  n.inputs = {"x"};
  n.outputs = {"y"};
  g.add_node(n);
  g.outputs = {"y"};
  EagerExecutor eager(g, *be);
  int frees = 0;
  std::vector<Tensor> outputs;
  {
    auto observer = std::make_unique<FreeCounter>(&frees);
    RunOptions opts;
    opts.observer = observer.get();
    auto out = eager.run({{"x", Tensor::from_vector<float>({-1, 2, -3, 4}, {4})}}, opts);
    ASSERT_TRUE(out) << out.status().message();
    outputs = std::move(*out);
  }
  const int frees_while_observed = frees;
  EXPECT_FLOAT_EQ(outputs[0].data<float>()[1], 2.0f);
  outputs.clear();  // released after the observer is gone: no call into it (ASan would report one)
  EXPECT_EQ(frees, frees_while_observed);
}

}  // namespace
}  // namespace ms::runtime
