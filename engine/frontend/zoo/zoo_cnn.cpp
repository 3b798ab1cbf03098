// Convolutional templates: mobilenet_v2 (torchvision layout: features.N, classifier.1),
// vgg11 (features / classifier; the classifier pools to 1x1 first), inception_block (a stem, one
// GoogLeNet-style block of four parallel branches joined by Concat, a classifier head).
#include <algorithm>

#include "engine/frontend/zoo/zoo_internal.h"

namespace ms::zoo::detail {
namespace {

using namespace ms::nn;

std::shared_ptr<Sequential> conv_bn_relu6(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t groups) {
  auto s = std::make_shared<Sequential>();
  s->add(std::make_shared<Conv2d>(in, out, k, stride, (k - 1) / 2, groups, false));
  s->add(std::make_shared<BatchNorm2d>(out));
  s->add(std::make_shared<ReLU6>());
  return s;
}

int64_t divisible8(double v) {
  int64_t r = std::max<int64_t>(8, (static_cast<int64_t>(v + 4) / 8) * 8);
  if (static_cast<double>(r) < 0.9 * v) r += 8;
  return r;
}

class InvertedResidual : public Module {
 public:
  InvertedResidual(int64_t in, int64_t out, int64_t stride, int64_t expand) : residual_(stride == 1 && in == out) {
    const int64_t hidden = in * expand;
    auto conv = std::make_shared<Sequential>();
    if (expand != 1) conv->add(conv_bn_relu6(in, hidden, 1, 1, 1));
    conv->add(conv_bn_relu6(hidden, hidden, 3, stride, hidden));
    conv->add(std::make_shared<Conv2d>(hidden, out, 1, 1, 0, 1, false));
    conv->add(std::make_shared<BatchNorm2d>(out));
    conv_ = register_module("conv", conv);
  }
  Var forward(const Var& x) override {
    Var y = (*conv_)(x);
    return residual_ ? F::add(x, y) : y;
  }
  std::string type_name() const override { return "InvertedResidual"; }

 private:
  bool residual_;
  std::shared_ptr<Module> conv_;
};

class MobileNetV2 : public Module {
 public:
  MobileNetV2(int64_t width, int64_t classes) {
    const double mult = static_cast<double>(width) / 32.0;
    auto features = std::make_shared<Sequential>();
    int64_t in = divisible8(32 * mult);
    const int64_t last = divisible8(1280 * std::max(1.0, mult));
    features->add(conv_bn_relu6(3, in, 3, 2, 1));
    const int64_t cfg[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                               {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    for (const auto& c : cfg) {
      const int64_t out = divisible8(static_cast<double>(c[1]) * mult);
      for (int64_t i = 0; i < c[2]; ++i) {
        features->add(std::make_shared<InvertedResidual>(in, out, i == 0 ? c[3] : 1, c[0]));
        in = out;
      }
    }
    features->add(conv_bn_relu6(in, last, 1, 1, 1));
    features_ = register_module("features", features);
    pool_ = register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
    flatten_ = register_module("flatten", std::make_shared<Flatten>());
    auto classifier = std::make_shared<Sequential>();
    classifier->add(std::make_shared<Dropout>(0.2f));
    classifier->add(std::make_shared<Dense>(last, classes));
    classifier_ = register_module("classifier", classifier);
  }
  Var forward(const Var& x) override { return (*classifier_)((*flatten_)((*pool_)((*features_)(x)))); }
  std::string type_name() const override { return "MobileNetV2"; }

 private:
  std::shared_ptr<Module> features_, pool_, flatten_, classifier_;
};

class Vgg11 : public Module {
 public:
  Vgg11(int64_t width, int64_t hidden, int64_t classes) {
    auto features = std::make_shared<Sequential>();
    const int64_t cfg[] = {1, 0, 2, 0, 4, 4, 0, 8, 8, 0, 8, 8, 0};  // multiples of width; 0 = max pool
    int64_t in = 3;
    for (int64_t c : cfg) {
      if (c == 0) {
        features->add(std::make_shared<MaxPool2d>(2, 2));
        continue;
      }
      features->add(std::make_shared<Conv2d>(in, c * width, 3, 1, 1));
      features->add(std::make_shared<ReLU>());
      in = c * width;
    }
    features_ = register_module("features", features);
    pool_ = register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
    flatten_ = register_module("flatten", std::make_shared<Flatten>());
    auto cls = std::make_shared<Sequential>();
    cls->add(std::make_shared<Dense>(in, hidden));
    cls->add(std::make_shared<ReLU>());
    cls->add(std::make_shared<Dropout>());
    cls->add(std::make_shared<Dense>(hidden, hidden));
    cls->add(std::make_shared<ReLU>());
    cls->add(std::make_shared<Dropout>());
    cls->add(std::make_shared<Dense>(hidden, classes));
    classifier_ = register_module("classifier", cls);
  }
  Var forward(const Var& x) override { return (*classifier_)((*flatten_)((*pool_)((*features_)(x)))); }
  std::string type_name() const override { return "VGG11"; }

 private:
  std::shared_ptr<Module> features_, pool_, flatten_, classifier_;
};

std::shared_ptr<Sequential> conv_relu(int64_t in, int64_t out, int64_t k) {
  auto s = std::make_shared<Sequential>();
  s->add(std::make_shared<Conv2d>(in, out, k, 1, (k - 1) / 2));
  s->add(std::make_shared<ReLU>());
  return s;
}

// GoogLeNet inception (3a) proportions, scaled by width/192.
class Inception : public Module {
 public:
  Inception(int64_t width, int64_t classes) {
    auto sc = [width](int64_t c) { return std::max<int64_t>(1, c * width / 192); };
    stem_ = register_module("stem", conv_relu(3, width, 3));
    b1_ = register_module("branch1", conv_relu(width, sc(64), 1));
    auto b2 = std::make_shared<Sequential>();
    b2->add(conv_relu(width, sc(96), 1));
    b2->add(conv_relu(sc(96), sc(128), 3));
    b2_ = register_module("branch2", b2);
    auto b3 = std::make_shared<Sequential>();
    b3->add(conv_relu(width, sc(16), 1));
    b3->add(conv_relu(sc(16), sc(32), 5));
    b3_ = register_module("branch3", b3);
    auto b4 = std::make_shared<Sequential>();
    b4->add(std::make_shared<MaxPool2d>(3, 1, 1));
    b4->add(conv_relu(width, sc(32), 1));
    b4_ = register_module("branch4", b4);
    pool_ = register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
    flatten_ = register_module("flatten", std::make_shared<Flatten>());
    fc_ = register_module("fc", std::make_shared<Dense>(sc(64) + sc(128) + sc(32) + sc(32), classes));
  }
  Var forward(const Var& x) override {
    Var s = (*stem_)(x);
    Var y = F::concat({(*b1_)(s), (*b2_)(s), (*b3_)(s), (*b4_)(s)}, 1);
    return (*fc_)((*flatten_)((*pool_)(y)));
  }
  std::string type_name() const override { return "InceptionBlock"; }

 private:
  std::shared_ptr<Module> stem_, b1_, b2_, b3_, b4_, pool_, flatten_, fc_;
};

}  // namespace

void add_cnn_templates(std::vector<Template>& out) {
  out.push_back({"mobilenet_v2",
                 "MobileNetV2: inverted residuals with depthwise convs and ReLU6",
                 {batch_param(1),
                  size_param(224, 32, "image height/width (input [batch,3,size,size])"),
                  classes_param(1000),
                  {"width", 32, 8, 1024, "stem channels (32 = width multiplier 1.0)"},
                  seed_param()},
                 [](const Params& p) -> Expected<Model> {
                   return image_model("mobilenet_v2", std::make_shared<MobileNetV2>(p.at("width"), p.at("classes")),
                                      p.at("batch"), 3, p.at("size"));
                 }});
  out.push_back({"vgg11",
                 "VGG-11: 8 conv3x3+ReLU layers, 5 max pools, 3 Dense layers after global pooling",
                 {batch_param(1),
                  size_param(224, 32, "image height/width (input [batch,3,size,size])"),
                  classes_param(1000),
                  {"width", 64, 1, 1024, "channels of the first conv (64 in the paper)"},
                  {"hidden", 4096, 1, 65536, "classifier width"},
                  seed_param()},
                 [](const Params& p) -> Expected<Model> {
                   return image_model("vgg11", std::make_shared<Vgg11>(p.at("width"), p.at("hidden"), p.at("classes")),
                                      p.at("batch"), 3, p.at("size"));
                 }});
  out.push_back({"inception_block",
                 "Stem conv, one inception block (1x1 | 1x1-3x3 | 1x1-5x5 | pool-1x1 in parallel, Concat), head",
                 {batch_param(1),
                  size_param(56, 8, "image height/width (input [batch,3,size,size])"),
                  classes_param(10),
                  {"width", 192, 8, 4096, "block input channels (192 as GoogLeNet 3a)"},
                  seed_param()},
                 [](const Params& p) -> Expected<Model> {
                   return image_model("inception_block", std::make_shared<Inception>(p.at("width"), p.at("classes")),
                                      p.at("batch"), 3, p.at("size"));
                 }});
}

}  // namespace ms::zoo::detail
