// Template lists per family (zoo/*.cpp) and helpers they share.
#pragma once

#include <vector>

#include "engine/frontend/nn/nn.h"
#include "engine/frontend/zoo/zoo.h"

namespace ms::zoo::detail {

void add_basic_templates(std::vector<Template>& out);        // zoo_basic.cpp
void add_cnn_templates(std::vector<Template>& out);          // zoo_cnn.cpp
void add_resnet_templates(std::vector<Template>& out);       // zoo_resnet.cpp
void add_transformer_templates(std::vector<Template>& out);  // zoo_transformer.cpp

inline ParamSpec batch_param(int64_t def) { return {"batch", def, 1, 4096, "batch size (first input dim)"}; }
inline ParamSpec size_param(int64_t def, int64_t min, const char* what) { return {"size", def, min, 4096, what}; }
inline ParamSpec classes_param(int64_t def) { return {"classes", def, 1, 100000, "number of output classes"}; }
inline ParamSpec seed_param() { return {"seed", 0, 0, 2147483647, "init seed (same seed, same weights)"}; }

inline Model image_model(const std::string& name, std::shared_ptr<nn::Module> m, int64_t batch, int64_t channels,
                         int64_t size) {
  return Model{name, std::move(m), {"input"}, {nn::static_type(DType::F32, {batch, channels, size, size})}};
}

}  // namespace ms::zoo::detail
