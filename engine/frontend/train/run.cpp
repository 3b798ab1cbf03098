#include "engine/frontend/train/run.h"
#include "engine/compiler/compile.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/dist/world.h"
#include "engine/frontend/nn/autocast.h"
#include "engine/frontend/nn/autograd.h"
#include "engine/frontend/train/data.h"
#include "engine/frontend/train/losses.h"
#include "engine/frontend/train/optim.h"
#include "engine/frontend/train/step.h"
#include "engine/frontend/zoo/zoo.h"

namespace ms::nn::train {

StepSummary summarize_steps(std::vector<double> ms) {
  StepSummary s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double q) {
    const double pos = q * static_cast<double>(ms.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, ms.size() - 1);
    return ms[lo] + (ms[hi] - ms[lo]) * (pos - static_cast<double>(lo));
  };
  s.min = ms.front();
  s.median = pct(0.5);
  s.p10 = pct(0.1);
  s.p90 = pct(0.9);
  double sum = 0;
  for (double v : ms) sum += v;
  s.mean = sum / static_cast<double>(ms.size());
  return s;
}

namespace {

bool has_param(const zoo::Template& t, const std::string& name) {
  return std::any_of(t.params.begin(), t.params.end(), [&](const zoo::ParamSpec& p) { return p.name == name; });
}

Status check_options(const RunOptions& o) {
  if (o.steps < 1) return invalid_argument("--steps must be >= 1");
  if (o.batch < 0) return invalid_argument("--batch must be >= 1");
  if (o.data != "digits" && o.data != "synthetic" && o.data != "auto")
    return invalid_argument("unknown data '" + o.data + "' (digits, synthetic, auto)");
  if (!(o.lr >= 0)) return invalid_argument("--lr must be >= 0");
  if (!zoo::is_zoo_uri(o.model))
    return unsupported(o.model +
                       ": training needs a zoo template (zoo:NAME?key=value&...); an .onnx file has no "
                       "trainable module");
  return Status::ok();
}

// Synthetic example count: enough batches to learn from, at most ~16M input elements in memory.
int64_t synthetic_examples(int64_t per_example, int64_t batch) {
  const int64_t cap = std::max<int64_t>(1, (int64_t{16} << 20) / std::max<int64_t>(per_example, 1));
  int64_t n = std::min<int64_t>(1280, cap);
  n = std::max(n, 2 * batch);
  return n;
}

// Forward over `ds` in chunks of `batch` (the last one shorter), counting correct predictions.
Expected<int64_t> evaluate(Module& m, const Dataset& ds, int64_t batch) {
  DataLoader loader(ds, batch, /*shuffle=*/false, 0, /*drop_last=*/false);
  MS_RETURN_IF_ERROR(loader.check());
  int64_t correct = 0;
  for (int64_t b = 0; b < loader.batches_per_epoch(); ++b) {
    Batch batch_data = loader.next();
    Var logits = m(Var(batch_data.x));
    MS_ASSIGN_OR_RETURN(Tensor t, logits.tensor());
    if (t.rank() != 2)
      return invalid_argument("evaluation: model output " + shape_to_string(t.shape()) + " is not [batch, classes]");
    MS_ASSIGN_OR_RETURN(int64_t c, count_correct(t, batch_data.y));
    correct += c;
  }
  return correct;
}

}  // namespace

namespace {

bool takes_digits(const zoo::Model& m) {
  return m.inputs.size() == 1 && m.inputs[0].dtype == DType::F32 && m.inputs[0].dims && m.inputs[0].dims->size() == 4 &&
         (*m.inputs[0].dims)[1] == 1 && (*m.inputs[0].dims)[2] == 8 && (*m.inputs[0].dims)[3] == 8;
}

// The URI for `data`; the built model when building was needed to decide.
Expected<zoo::Uri> adapted_uri(const RunOptions& o, const std::string& data) {
  MS_ASSIGN_OR_RETURN(zoo::Uri uri, zoo::parse_uri(o.model));
  const zoo::Template* t = zoo::find_template(uri.name);
  if (!t) return invalid_argument("no template '" + uri.name + "'");
  if (o.batch > 0 && has_param(*t, "batch")) uri.params["batch"] = o.batch;
  if (data == "digits") {
    if (has_param(*t, "size")) uri.params["size"] = 8;
    if (has_param(*t, "classes")) uri.params["classes"] = 10;
  }
  return uri;
}

}  // namespace

Expected<Adapted> adapt_model(const RunOptions& o) {
  MS_RETURN_IF_ERROR(check_options(o));
  if (o.data != "auto") {
    MS_ASSIGN_OR_RETURN(zoo::Uri uri, adapted_uri(o, o.data));
    const std::string text = zoo::to_uri(uri);
    auto checked = zoo::parse_uri(text);  // range checks of the adapted parameters
    if (!checked) {
      Status st = checked.status();
      if (o.data == "digits") st.prepend("the digits data are 8x8 images: ");
      return st;
    }
    return Adapted{text, o.data};
  }
  // auto: digits when the template, built for 8x8 images, takes f32 [batch,1,8,8].
  MS_ASSIGN_OR_RETURN(zoo::Uri plain, adapted_uri(o, "synthetic"));
  const zoo::Template* t = zoo::find_template(plain.name);
  bool digits = false;
  if (has_param(*t, "size") && has_param(*t, "classes")) {
    const auto size_spec =
        std::find_if(t->params.begin(), t->params.end(), [](const auto& p) { return p.name == "size"; });
    if (size_spec->min <= 8) {
      MS_ASSIGN_OR_RETURN(zoo::Uri d, adapted_uri(o, "digits"));
      d.params["batch"] = 1;
      auto m = zoo::build_model(d);
      digits = m && takes_digits(*m);
    }
  }
  if (!digits) return Adapted{zoo::to_uri(plain), "synthetic"};
  MS_ASSIGN_OR_RETURN(zoo::Uri d, adapted_uri(o, "digits"));
  return Adapted{zoo::to_uri(d), "digits"};
}

namespace {

// The model of the adapted URI, checked for what training needs: one statically shaped input and
// a classifier's 'classes' parameter.
Expected<zoo::Model> build_trainable_model(const zoo::Uri& uri, const std::string& uri_text, const std::string& data) {
  auto built = zoo::build_model(uri);
  if (!built) {
    Status st = built.status();
    if (data == "digits") st.prepend("the digits data are 8x8 images: ");
    return st;
  }
  zoo::Model model = std::move(*built);
  if (model.inputs.size() != 1 || !model.inputs[0].is_static())
    return unsupported(uri_text + ": training takes templates with one statically shaped input");
  const int64_t classes = uri.params.count("classes") ? uri.params.at("classes") : 0;
  if (classes < 2) return unsupported(uri_text + ": training needs a classifier template (a 'classes' parameter >= 2)");
  return model;
}

// Every example, train and test: the digits (checked against the model's input `in`), or synthetic
// examples of its shape and dtype.
Expected<Dataset> load_examples(const RunOptions& o, const std::string& data, const zoo::Uri& uri,
                                const std::string& uri_text, const ir::ValueType& in) {
  const Shape& in_dims = *in.dims;
  const Shape example(in_dims.begin() + 1, in_dims.end());
  const int64_t classes = uri.params.count("classes") ? uri.params.at("classes") : 0;
  if (data == "digits") {
    MS_ASSIGN_OR_RETURN(Dataset all, load_digits(o.data_dir));
    if (example != all.example_shape() || in.dtype != DType::F32)
      return invalid_argument(uri_text + " takes input " + std::string(dtype_name(in.dtype)) +
                              shape_to_string(in_dims) + "; the digits are f32 [batch,1,8,8] (use --data synthetic)");
    return all;
  }
  SyntheticSpec spec;
  spec.example_shape = example;
  spec.dtype = in.dtype;
  spec.num_classes = classes;
  spec.n = synthetic_examples(numel(example), in_dims.at(0));
  spec.int_range = uri.params.count("vocab") ? std::min<int64_t>(uri.params.at("vocab"), classes * 4) : classes;
  spec.seed = o.seed;
  return synthetic(spec);
}

// The optimizer of the options, and with weight decay the per-parameter hyperparameters of its
// groups.
struct OptimizerSetup {
  OptimizerConfig cfg;
  std::vector<Hyper> hyper;
};

Expected<OptimizerSetup> optimizer_setup(const RunOptions& o, Module& m) {
  OptimizerSetup opt;
  MS_ASSIGN_OR_RETURN(opt.cfg.kind, optimizer_kind(o.optimizer));
  opt.cfg.momentum = o.momentum;
  opt.cfg.weight_decay = o.weight_decay;
  opt.cfg.groups.push_back(no_decay_group());
  MS_RETURN_IF_ERROR(validate(opt.cfg));
  if (o.weight_decay > 0) {
    const Vars params = trainable_parameters(m);
    const std::vector<std::string> names = trainable_parameter_names(m);
    std::vector<Shape> shapes;
    for (const Var& p : params) shapes.push_back(p.shape());
    opt.hyper = resolve_groups(opt.cfg, names, shapes);
  }
  return opt;
}

// The learning rate over the steps; without --lr, a default for the optimizer.
Expected<LrSchedule> lr_schedule(const RunOptions& o, OptimizerKind kind) {
  LrSchedule sched;
  MS_ASSIGN_OR_RETURN(sched.kind, schedule_kind(o.schedule));
  sched.base_lr = o.lr > 0 ? o.lr : (kind == OptimizerKind::SGD ? 0.05 : 0.001);
  sched.warmup_steps = o.lr_warmup;
  sched.total_steps = o.steps;
  sched.step_size = std::max<int64_t>(1, o.steps / 3);
  return sched;
}

// Runs the o.steps training steps, recording each step's loss, lr and time in r.
Status run_steps(const RunOptions& o, TrainStep& step, DataLoader& loader, const LrSchedule& sched,
                 const StepCallback& on_step, RunResult& r) {
  for (int64_t s = 1; s <= o.steps; ++s) {
    if (o.cancelled && o.cancelled())
      return Status::error(ErrorCode::Cancelled, "training cancelled before step " + std::to_string(s));
    Batch b = loader.next();
    const double lr = sched.at(s);
    if (s == o.steps && o.observe_last_step) step.observe_next_step(o.observe_last_step);
    auto stats = step.step(Vars{Var(b.x), Var(b.y)}, lr);
    if (!stats) return Status(stats.status()).prepend("step " + std::to_string(s) + ": ");
    if (!std::isfinite(stats->loss))
      return invalid_argument("step " + std::to_string(s) + ": the loss is " + std::to_string(stats->loss) +
                              " (lower the learning rate, now " + std::to_string(lr) + ")");
    r.losses.push_back(stats->loss);
    r.lrs.push_back(lr);
    r.step_ms.push_back(stats->step_ms);
    r.compile_ms += stats->compile_ms;
    r.peak_bytes = std::max(r.peak_bytes, stats->peak_bytes);
    r.loss_scale = stats->loss_scale;
    if (step.data_parallel()) {
      r.allreduce_ms.push_back(stats->allreduce_ms);
      r.overlap.push_back(stats->overlap);
      r.collectives.push_back(stats->collectives);
    }
    if (on_step) on_step(s, stats->loss, stats->step_ms);
  }
  return Status::ok();
}

// What the steps left to report: skipped steps, the compiled passes, the observed step, and the
// summary of the steady steps.
void collect_step_results(const TrainStep& step, RunResult& r) {
  r.skipped_steps = step.skipped_steps();
  if (const compiler::CompiledExecutor* ex = step.executor()) r.passes = ex->compile_result().reports;
  if (const ir::Graph* g = step.observed_graph()) r.observed_graph = g->deep_copy();
  if (const runtime::MemoryPlan* plan = step.observed_plan()) r.observed_plan = *plan;
  r.steady =
      summarize_steps(r.step_ms.size() > 1 ? std::vector<double>(r.step_ms.begin() + 1, r.step_ms.end()) : r.step_ms);
}

// Data parallel: the configuration (the options', else the auto parallel context's), the rank and
// rank count, and the template's batch turned into this rank's slice of the global batch.
struct DpSetup {
  std::optional<DataParallelConfig> cfg;
  int rank = 0, ranks = 1;
  std::string communicator;
};

Expected<DpSetup> data_parallel_setup(const RunOptions& o, zoo::Uri& uri) {
  DpSetup s;
  s.cfg = o.data_parallel;
  const AutoParallelContext pc = get_auto_parallel_context();
  if (!s.cfg && pc.parallel_mode == ParallelMode::DataParallel)
    s.cfg = DataParallelConfig{pc.gradients_mean,    pc.first_bucket_mb,      pc.bucket_mb,
                               pc.all_reduce_fusion, pc.all_reduce_fusion_mb, pc.sync_batchnorm};
  if (!s.cfg) return s;
  const std::shared_ptr<dist::Communicator> comm = dist::world();
  if (!comm) return invalid_argument("data parallel training needs a communicator: call dist::init() first");
  if (!o.data_parallel && pc.device_num > 0 && pc.device_num != comm->size())
    return invalid_argument("device_num is " + std::to_string(pc.device_num) + " but the communicator has " +
                            std::to_string(comm->size()) + " ranks");
  s.rank = comm->rank();
  s.ranks = comm->size();
  s.communicator = comm->name();
  auto it = uri.params.find("batch");
  if (it == uri.params.end())
    return unsupported("zoo:" + uri.name + " has no batch parameter: data parallel training splits the batch");
  if (it->second % s.ranks != 0)
    return invalid_argument("the global batch of " + std::to_string(it->second) + " does not split over " +
                            std::to_string(s.ranks) + " ranks (make --batch a multiple of the rank count)");
  it->second /= s.ranks;
  return s;
}

// Test accuracy of the trained module, in the run's mode and autocast setting.
Status evaluate_trained(const RunOptions& o, Module& m, const Dataset& test, int64_t batch, RunResult& r) {
  set_training(m, false);
  // The forward graph cached by an earlier Graph-mode call holds the parameters it was compiled
  // with; evaluate with the trained ones.
  clear_graph_caches(m);
  const Mode before = get_mode();
  set_context(o.mode);
  const AutocastGuard amp(o.amp);
  auto correct = evaluate(m, test, batch);
  set_context(before);
  if (!correct) return Status(correct.status()).prepend("evaluation: ");
  r.correct = *correct;
  r.accuracy = static_cast<double>(*correct) / static_cast<double>(test.size());
  return Status::ok();
}

}  // namespace

Expected<RunResult> run_training(const RunOptions& o, const StepCallback& on_step) {
  // Eager training keeps optimizer state, parameters and the loss as host tensors between ops; on
  // a device those would be device memory read on the host. Compiled steps copy at the boundary.
  if (o.mode == Mode::PyNative && !backend().device().is_cpu())
    return unsupported("PyNative training runs on the CPU only (the backend is " + backend().device().to_string() +
                       "); train on the device in Graph mode");
  MS_ASSIGN_OR_RETURN(Adapted adapted, adapt_model(o));
  const std::string& uri_text = adapted.model;
  const std::string& data = adapted.data;
  MS_ASSIGN_OR_RETURN(zoo::Uri uri, zoo::parse_uri(uri_text));
  MS_ASSIGN_OR_RETURN(DpSetup dp, data_parallel_setup(o, uri));
  MS_ASSIGN_OR_RETURN(zoo::Model model, build_trainable_model(uri, uri_text, data));

  RunResult r;
  r.model = uri_text;
  r.data = data;
  r.world_size = dp.ranks;
  r.rank = dp.rank;
  r.communicator = dp.communicator;
  const int64_t batch = model.inputs[0].dims->at(0);  // this rank's slice of the global batch
  if (batch < 1) return unsupported(uri_text + ": the input has no static batch dimension");
  MS_ASSIGN_OR_RETURN(Dataset all, load_examples(o, data, uri, uri_text, model.inputs[0]));
  const int64_t test_size = data == "digits" ? o.test_size : std::max<int64_t>(1, all.size() / 5);
  MS_ASSIGN_OR_RETURN(Split parts, split(all, test_size, o.seed));
  r.train_examples = parts.train.size();
  r.test_examples = parts.test.size();
  DataLoader loader(parts.train, batch * dp.ranks, /*shuffle=*/true, o.seed);
  loader.shard(dp.rank, dp.ranks);
  MS_RETURN_IF_ERROR(loader.check());

  Module& m = *model.module;
  r.parameters = m.num_parameters();
  MS_ASSIGN_OR_RETURN(OptimizerSetup opt, optimizer_setup(o, m));
  MS_ASSIGN_OR_RETURN(LrSchedule sched, lr_schedule(o, opt.cfg.kind));
  r.lr = sched.base_lr;

  const double smoothing = o.label_smoothing;
  auto loss_fn = [smoothing](Module& mod, const Vars& in) { return cross_entropy(mod(in.at(0)), in.at(1), smoothing); };
  set_training(m, true);
  TrainStep step(m, loss_fn, make_update_rule(opt.cfg, opt.hyper), o.mode, o.jit_level);
  step.set_amp(AmpOptions{o.amp, o.loss_scale});
  step.set_disabled_passes(o.disabled_passes);
  if (dp.cfg) step.set_data_parallel(*dp.cfg);
  MS_RETURN_IF_ERROR(run_steps(o, step, loader, sched, on_step, r));
  collect_step_results(step, r);
  r.sync_batchnorm_layers = step.sync_batchnorm_layers();
  if (o.keep_parameters)
    for (const auto& slot : m.parameter_slots())
      if (!slot.buffer) r.final_parameters.emplace_back(slot.name, slot.tensor->clone());
  if (o.evaluate) MS_RETURN_IF_ERROR(evaluate_trained(o, m, parts.test, batch, r));
  return r;
}

}  // namespace ms::nn::train
