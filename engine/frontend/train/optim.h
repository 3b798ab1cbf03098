// Optimizers as UpdateRules (train/step.h): SGD (momentum, Nesterov, weight decay), Adam and AdamW
// (bias correction), per-parameter hyperparameters from parameter groups, and learning-rate
// schedules. Updates are F:: ops on Vars, so one rule runs eagerly and inside a traced training
// step alike. The learning rate and the 1-based step count arrive as scalar Vars (graph inputs in
// Graph mode): a schedule changes the lr every step without a re-trace, and Adam's bias
// correction 1 - beta^t is computed from the step Var as 1 - exp(t * ln beta).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/frontend/train/step.h"

namespace ms::nn::train {

// What a parameter group sets for each of its parameters.
struct Hyper {
  double lr_scale = 1.0;  // the group's lr = scheduled lr * lr_scale
  double weight_decay = 0.0;
};

// A group takes the parameters `match` accepts (first matching group wins; the rest get the
// optimizer's defaults). Example: no decay for biases and norm parameters.
struct ParamGroup {
  std::string name;
  std::function<bool(const std::string& param_name, const Shape& shape)> match;
  Hyper hyper;
};
// Parameters of rank <= 1 (biases, BatchNorm/LayerNorm scale and shift): lr as the default, no decay.
ParamGroup no_decay_group(double lr_scale = 1.0);

enum class OptimizerKind { SGD, Adam, AdamW };
Expected<OptimizerKind> optimizer_kind(std::string_view name);  // "sgd" | "adam" | "adamw"
const char* optimizer_name(OptimizerKind k);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::SGD;
  double momentum = 0.9;                          // SGD
  bool nesterov = false;                          // SGD
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam, AdamW
  double weight_decay = 0.0;  // default group: L2 added to the gradient (SGD, Adam), decoupled (AdamW)
  std::vector<ParamGroup> groups;
};

// The hyperparameters of each parameter, in the order of `names` / `shapes` (the order the rule
// will receive the parameters in).
std::vector<Hyper> resolve_groups(const OptimizerConfig& cfg, const std::vector<std::string>& names,
                                  const std::vector<Shape>& shapes);

// `per_param` empty: every parameter takes {1, cfg.weight_decay}. Otherwise its size must equal the
// parameter count at every call (a mismatch gives failed Vars naming both counts).
// State layout: SGD with momentum: one buffer per parameter (none without momentum); Adam/AdamW:
// the first moments of all parameters, then the second moments.
UpdateRule make_update_rule(const OptimizerConfig& cfg, std::vector<Hyper> per_param = {});
Status validate(const OptimizerConfig& cfg);

// Learning rate per 1-based step, computed on the host.
//   constant: base
//   step:     base * gamma^floor((t - warmup - 1) / step_size)
//   cosine:   min + (base - min) * (1 + cos(pi * (t - warmup - 1) / (total - warmup - 1))) / 2,
//             reaching min at t = total and staying there
// With warmup W > 0 the first W steps ramp linearly: base * t / W.
struct LrSchedule {
  enum class Kind { Constant, Step, Cosine };
  Kind kind = Kind::Constant;
  double base_lr = 0.01;
  int64_t warmup_steps = 0;
  int64_t step_size = 100;
  double gamma = 0.1;
  int64_t total_steps = 1000;
  double min_lr = 0.0;
  double at(int64_t step) const;
};
Expected<LrSchedule::Kind> schedule_kind(std::string_view name);  // "constant" | "step" | "cosine"

}  // namespace ms::nn::train
