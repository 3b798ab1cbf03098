// ResNet-18 and ResNet-50 with torchvision's module names (conv1, bn1, layer1.0.conv1,
// layer1.0.downsample.0, fc, ...). BatchNorm runs in inference mode with running mean 0 / var 1.
#include "engine/frontend/zoo/zoo_internal.h"

namespace ms::zoo::detail {
namespace {

using namespace ms::nn;

std::shared_ptr<Sequential> downsample(int64_t in, int64_t out, int64_t stride) {
  auto d = std::make_shared<Sequential>();
  d->add(std::make_shared<Conv2d>(in, out, 1, stride, 0, 1, false));
  d->add(std::make_shared<BatchNorm2d>(out));
  return d;
}

class BasicBlock : public Module {
 public:
  static constexpr int64_t kExpansion = 1;
  BasicBlock(int64_t in, int64_t planes, int64_t stride) {
    conv1_ = register_module("conv1", std::make_shared<Conv2d>(in, planes, 3, stride, 1, 1, false));
    bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(planes));
    relu_ = register_module("relu", std::make_shared<ReLU>());
    conv2_ = register_module("conv2", std::make_shared<Conv2d>(planes, planes, 3, 1, 1, 1, false));
    bn2_ = register_module("bn2", std::make_shared<BatchNorm2d>(planes));
    if (stride != 1 || in != planes) down_ = register_module("downsample", downsample(in, planes, stride));
  }
  Var forward(const Var& x) override {
    Var y = (*relu_)((*bn1_)((*conv1_)(x)));
    y = (*bn2_)((*conv2_)(y));
    return (*relu_)(F::add(y, down_ ? (*down_)(x) : x));
  }
  std::string type_name() const override { return "BasicBlock"; }

 private:
  std::shared_ptr<Module> conv1_, bn1_, relu_, conv2_, bn2_, down_;
};

class Bottleneck : public Module {
 public:
  static constexpr int64_t kExpansion = 4;
  Bottleneck(int64_t in, int64_t planes, int64_t stride) {
    conv1_ = register_module("conv1", std::make_shared<Conv2d>(in, planes, 1, 1, 0, 1, false));
    bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(planes));
    conv2_ = register_module("conv2", std::make_shared<Conv2d>(planes, planes, 3, stride, 1, 1, false));
    bn2_ = register_module("bn2", std::make_shared<BatchNorm2d>(planes));
    conv3_ = register_module("conv3", std::make_shared<Conv2d>(planes, planes * 4, 1, 1, 0, 1, false));
    bn3_ = register_module("bn3", std::make_shared<BatchNorm2d>(planes * 4));
    relu_ = register_module("relu", std::make_shared<ReLU>());
    if (stride != 1 || in != planes * 4) down_ = register_module("downsample", downsample(in, planes * 4, stride));
  }
  Var forward(const Var& x) override {
    Var y = (*relu_)((*bn1_)((*conv1_)(x)));
    y = (*relu_)((*bn2_)((*conv2_)(y)));
    y = (*bn3_)((*conv3_)(y));
    return (*relu_)(F::add(y, down_ ? (*down_)(x) : x));
  }
  std::string type_name() const override { return "Bottleneck"; }

 private:
  std::shared_ptr<Module> conv1_, bn1_, conv2_, bn2_, conv3_, bn3_, relu_, down_;
};

template <class Block> class ResNet : public Module {
 public:
  ResNet(std::vector<int64_t> blocks, int64_t width, int64_t classes) {
    int64_t in = width;
    conv1_ = register_module("conv1", std::make_shared<Conv2d>(3, width, 7, 2, 3, 1, false));
    bn1_ = register_module("bn1", std::make_shared<BatchNorm2d>(width));
    relu_ = register_module("relu", std::make_shared<ReLU>());
    maxpool_ = register_module("maxpool", std::make_shared<MaxPool2d>(3, 2, 1));
    for (size_t l = 0; l < 4; ++l) {
      const int64_t planes = width << l;
      auto layer = std::make_shared<Sequential>();
      for (int64_t b = 0; b < blocks[l]; ++b) {
        const int64_t stride = (l > 0 && b == 0) ? 2 : 1;
        layer->add(std::make_shared<Block>(in, planes, stride));
        in = planes * Block::kExpansion;
      }
      layers_.push_back(register_module("layer" + std::to_string(l + 1), layer));
    }
    avgpool_ = register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
    flatten_ = register_module("flatten", std::make_shared<Flatten>());
    fc_ = register_module("fc", std::make_shared<Dense>(in, classes));
  }
  Var forward(const Var& x) override {
    Var y = (*maxpool_)((*relu_)((*bn1_)((*conv1_)(x))));
    for (auto& l : layers_) y = (*l)(y);
    return (*fc_)((*flatten_)((*avgpool_)(y)));
  }
  std::string type_name() const override { return "ResNet"; }

 private:
  std::shared_ptr<Module> conv1_, bn1_, relu_, maxpool_, avgpool_, flatten_, fc_;
  std::vector<std::shared_ptr<Module>> layers_;
};

std::vector<ParamSpec> resnet_params() {
  return {batch_param(1),
          size_param(224, 32, "image height/width (input [batch,3,size,size])"),
          classes_param(1000),
          {"width", 64, 1, 1024, "channels of the stem (64 in the paper); stages use 1,2,4,8x"},
          seed_param()};
}

}  // namespace

void add_resnet_templates(std::vector<Template>& out) {
  out.push_back({"resnet18", "ResNet-18 (BasicBlock x [2,2,2,2]), torchvision module names", resnet_params(),
                 [](const Params& p) -> Expected<Model> {
                   auto m = std::make_shared<ResNet<BasicBlock>>(std::vector<int64_t>{2, 2, 2, 2}, p.at("width"),
                                                                 p.at("classes"));
                   return image_model("resnet18", m, p.at("batch"), 3, p.at("size"));
                 }});
  out.push_back({"resnet50", "ResNet-50 (Bottleneck x [3,4,6,3]), torchvision module names", resnet_params(),
                 [](const Params& p) -> Expected<Model> {
                   auto m = std::make_shared<ResNet<Bottleneck>>(std::vector<int64_t>{3, 4, 6, 3}, p.at("width"),
                                                                 p.at("classes"));
                   return image_model("resnet50", m, p.at("batch"), 3, p.at("size"));
                 }});
}

}  // namespace ms::zoo::detail
