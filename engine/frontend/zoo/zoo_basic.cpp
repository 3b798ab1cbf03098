// Small templates: mnist_mlp, dense_chain (two layers) and dense_chain_seq (the same with
// Sequential), dynamic_net (data-dependent depth through cond), lenet5.
#include "engine/frontend/zoo/zoo_internal.h"

namespace ms::zoo::detail {
namespace {

using namespace ms::nn;

class MnistMlp : public Module {
 public:
  MnistMlp(int64_t in, int64_t hidden, int64_t classes) {
    flatten_ = register_module("flatten", std::make_shared<Flatten>());
    fc1_ = register_module("fc1", std::make_shared<Dense>(in, hidden));
    relu1_ = register_module("relu1", std::make_shared<ReLU>());
    fc2_ = register_module("fc2", std::make_shared<Dense>(hidden, hidden));
    relu2_ = register_module("relu2", std::make_shared<ReLU>());
    fc3_ = register_module("fc3", std::make_shared<Dense>(hidden, classes));
  }
  Var forward(const Var& x) override { return (*fc3_)((*relu2_)((*fc2_)((*relu1_)((*fc1_)((*flatten_)(x)))))); }
  std::string type_name() const override { return "MnistMlp"; }

 private:
  std::shared_ptr<Module> flatten_, fc1_, relu1_, fc2_, relu2_, fc3_;
};

class DenseChain : public Module {
 public:
  DenseChain(int64_t in, int64_t hidden, int64_t out) {
    d1_ = register_module("dense1", std::make_shared<Dense>(in, hidden));
    d2_ = register_module("dense2", std::make_shared<Dense>(hidden, out));
  }
  Var forward(const Var& x) override { return (*d2_)((*d1_)(x)); }
  std::string type_name() const override { return "DenseChain"; }

 private:
  std::shared_ptr<Module> d1_, d2_;
};

// Ten Dense(size, size) layers; a positive input sum runs 8 of them, otherwise 5.
class DynamicNet : public Module {
 public:
  DynamicNet(int64_t size, int64_t layers, int64_t deep, int64_t shallow, int64_t classes)
      : deep_(deep), shallow_(shallow) {
    layers_ = register_module("layers", std::make_shared<ModuleList>());
    for (int64_t i = 0; i < layers; ++i) layers_->push_back(std::make_shared<Dense>(size, size));
    relu_ = register_module("relu", std::make_shared<ReLU>());
    head_ = register_module("head", std::make_shared<Dense>(size, classes));
  }
  Var run_layers(Var x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x = (*relu_)((*layers_)[static_cast<size_t>(i)](x));
    return x;
  }
  Var forward(const Var& x) override {
    Var y = cond(F::reduce_sum(x) > 0.0, std::function<Var()>([&] { return run_layers(x, deep_); }),
                 std::function<Var()>([&] { return run_layers(x, shallow_); }));
    return (*head_)(y);
  }
  std::string type_name() const override { return "DynamicNet"; }

 private:
  int64_t deep_, shallow_;
  std::shared_ptr<ModuleList> layers_;
  std::shared_ptr<Module> relu_, head_;
};

class LeNet5 : public Module {
 public:
  LeNet5(int64_t size, int64_t classes) {
    const int64_t s1 = (size - 4) / 2, s2 = (s1 - 4) / 2;
    conv1_ = register_module("conv1", std::make_shared<Conv2d>(1, 6, 5));
    relu1_ = register_module("relu1", std::make_shared<ReLU>());
    pool1_ = register_module("pool1", std::make_shared<MaxPool2d>(2));
    conv2_ = register_module("conv2", std::make_shared<Conv2d>(6, 16, 5));
    relu2_ = register_module("relu2", std::make_shared<ReLU>());
    pool2_ = register_module("pool2", std::make_shared<MaxPool2d>(2));
    flatten_ = register_module("flatten", std::make_shared<Flatten>());
    fc1_ = register_module("fc1", std::make_shared<Dense>(16 * s2 * s2, 120));
    relu3_ = register_module("relu3", std::make_shared<ReLU>());
    fc2_ = register_module("fc2", std::make_shared<Dense>(120, 84));
    relu4_ = register_module("relu4", std::make_shared<ReLU>());
    fc3_ = register_module("fc3", std::make_shared<Dense>(84, classes));
  }
  Var forward(const Var& x) override {
    Var y = (*pool1_)((*relu1_)((*conv1_)(x)));
    y = (*pool2_)((*relu2_)((*conv2_)(y)));
    y = (*relu3_)((*fc1_)((*flatten_)(y)));
    return (*fc3_)((*relu4_)((*fc2_)(y)));
  }
  std::string type_name() const override { return "LeNet5"; }

 private:
  std::shared_ptr<Module> conv1_, relu1_, pool1_, conv2_, relu2_, pool2_, flatten_, fc1_, relu3_, fc2_, relu4_, fc3_;
};

}  // namespace

void add_basic_templates(std::vector<Template>& out) {
  out.push_back({"mnist_mlp",
                 "MNIST MLP: Flatten, Dense 784->512, ReLU, Dense 512->512, ReLU, Dense 512->10",
                 {batch_param(64),
                  size_param(28, 1, "image height/width (input [batch,1,size,size])"),
                  classes_param(10),
                  {"hidden", 512, 1, 65536, "hidden width"},
                  seed_param()},
                 [](const Params& p) -> Expected<Model> {
                   const int64_t s = p.at("size");
                   return image_model("mnist_mlp", std::make_shared<MnistMlp>(s * s, p.at("hidden"), p.at("classes")),
                                      p.at("batch"), 1, s);
                 }});
  auto chain_params = std::vector<ParamSpec>{batch_param(64),
                                             {"size", 1024, 1, 65536, "input features"},
                                             {"hidden", 2048, 1, 65536, "features between the two layers"},
                                             {"classes", 1024, 1, 65536, "output features"},
                                             seed_param()};
  out.push_back({"dense_chain", "Dense size->hidden then hidden->classes, as two separately named layers", chain_params,
                 [](const Params& p) -> Expected<Model> {
                   auto m = std::make_shared<DenseChain>(p.at("size"), p.at("hidden"), p.at("classes"));
                   return Model{"dense_chain", m, {"input"}, {static_type(DType::F32, {p.at("batch"), p.at("size")})}};
                 }});
  out.push_back(
      {"dense_chain_seq", "dense_chain built with Sequential (same outputs for the same seed)", chain_params,
       [](const Params& p) -> Expected<Model> {
         auto m = std::make_shared<Sequential>();
         m->add(std::make_shared<Dense>(p.at("size"), p.at("hidden")));
         m->add(std::make_shared<Dense>(p.at("hidden"), p.at("classes")));
         return Model{"dense_chain_seq", m, {"input"}, {static_type(DType::F32, {p.at("batch"), p.at("size")})}};
       }});
  out.push_back({"dynamic_net",
                 "Dense(size,size) layers with ReLU; uses 8 of them when sum(x) > 0, else 5 (cond -> If), then a head",
                 {batch_param(1),
                  {"size", 256, 1, 65536, "features"},
                  classes_param(10),
                  {"layers", 10, 8, 1000, "Dense layers owned (8 used on the positive branch, 5 on the other)"},
                  seed_param()},
                 [](const Params& p) -> Expected<Model> {
                   auto m = std::make_shared<DynamicNet>(p.at("size"), p.at("layers"), 8, 5, p.at("classes"));
                   return Model{"dynamic_net", m, {"input"}, {static_type(DType::F32, {p.at("batch"), p.at("size")})}};
                 }});
  out.push_back({"lenet5",
                 "LeNet-5: two conv+pool stages, three Dense layers (input [batch,1,size,size])",
                 {batch_param(1), size_param(32, 16, "image height/width"), classes_param(10), seed_param()},
                 [](const Params& p) -> Expected<Model> {
                   return image_model("lenet5", std::make_shared<LeNet5>(p.at("size"), p.at("classes")), p.at("batch"),
                                      1, p.at("size"));
                 }});
}

}  // namespace ms::zoo::detail
