#include "shoal/train/forecast_job.h"

#include <algorithm>
#include <cmath>

#include "shoal/core/thread_pool.h"
#include "shoal/data/scalers.h"
#include "shoal/train/checks.h"
#include "shoal/train/forecast_registry.h"
#include "windowed_fit.h"

namespace shoal::train {

namespace detail {

models::ForecastInputs<float> inputs_of(const data::WindowBatch& b) {
  return {.batch = b.B,
          .insample_y = b.insample_y.data,
          .hist_exog = b.X > 0 ? b.hist_exog.data : nullptr,
          .futr_exog = b.F > 0 ? b.futr_exog.data : nullptr,
          .stat_exog = b.S > 0 ? b.stat_exog.data : nullptr,
          .insample_mask = b.insample_mask.data,
          .outsample_y = b.outsample_y.data};
}

models::ForecastInputs<float> univariate_inputs_of(const data::WindowBatch& b) {
  models::ForecastInputs<float> in = inputs_of(b);
  in.stat_window_stride = b.S;
  return in;
}

FitZones::FitZones(const ForecastJob& job) : rec(job.profiler) {
  if (rec == nullptr) return;
  using profile::Category;
  const int m = job.profile_model;
  steps = rec->can_step();
  fit = rec->zone("fit", Category::kOther, {}, m);
  setup = rec->zone("fit.setup", Category::kOther, {}, m);
  sample = rec->zone("data.sample", Category::kData, {}, m);
  validation = rec->zone("eval.validation", Category::kEval, {}, m);
  predict = rec->zone("eval.predict", Category::kEval, {}, m);
}

}  // namespace detail

namespace {

constexpr std::string_view kScalers[] = {"identity", "standard",  "robust", "minmax",
                                         "minmax1",  "invariant", "revin"};
constexpr std::string_view kLosses[] = {"mae",      "mse",     "rmse",     "mape",   "smape",
                                        "mase",     "huber",   "quantile", "mqloss", "normal",
                                        "studentt", "poisson", "gmm"};
// "": the training loss (neuralforecast's valid_loss=None).
constexpr std::string_view kValidLosses[] = {"",       "mae",      "mse",     "rmse",     "mape",
                                             "smape",  "mase",     "huber",   "quantile", "mqloss",
                                             "normal", "studentt", "poisson", "gmm"};
constexpr std::string_view kGenerators[] = {"torch", "philox"};

// A loss's parameters under `prefix` ("" for the training loss, "valid_" for validation's).
void visit_loss_parameters(layers::LossConfig& c, std::string_view prefix, OptionVisitor& v) {
  const auto key = [&](std::string_view k) { return std::string(prefix) + std::string(k); };
  v(key("huber_delta"), c.delta, "HuberLoss delta");
  v(key("quantile"), c.q, "QuantileLoss q, in (0, 1)");
  v(key("loss_seasonality"), c.seasonality, "MASE seasonality (≥ 1, < input_size)");
  v(key("horizon_weight"), c.horizon_weight,
    "Loss weight of each horizon step: h numbers (empty: all 1)");
  v(key("loss_quantiles"), c.quantiles,
    "MQLoss: its quantiles; normal/studentt/poisson/gmm: the forecast's quantiles (median first)");
  v(key("num_samples"), c.num_samples, "normal/studentt/poisson/gmm: draws per forecast value");
  v(key("return_params"), c.return_params,
    "normal/studentt/poisson/gmm: forecasts include the distribution's parameters");
  v(key("loss_n_components"), c.n_components, "GMM: mixture components");
  v(key("loss_weighted"), c.weighted, "GMM: learn the components' weights (else equal)");
}

// Whether a loss of kind `k` reads `parameter` (a key of visit_loss_parameters, no prefix).
bool loss_reads(layers::LossKind k, std::string_view parameter) {
  using K = layers::LossKind;
  if (parameter == "huber_delta") return k == K::kHuber;
  if (parameter == "quantile") return k == K::kQuantile;
  if (parameter == "loss_seasonality") return k == K::kMase;
  if (parameter == "horizon_weight") return true;  // GMM refuses it in check_loss, saying why
  if (parameter == "loss_quantiles") return !layers::is_point_loss(k);
  if (parameter == "num_samples" || parameter == "return_params")
    return layers::is_distribution_loss(k);
  return k == K::kGmm;  // loss_n_components, loss_weighted
}

// The keys of visit_loss_parameters (no prefix).
const std::vector<std::string>& loss_parameter_names() {
  static const std::vector<std::string> names = [] {
    layers::LossConfig probe;
    OptionLister lister;
    visit_loss_parameters(probe, "", lister);
    std::vector<std::string> out;
    for (const OptionInfo& o : lister.options) out.push_back(o.key);
    return out;
  }();
  return names;
}

// The loss that reads the parameters under `prefix`: the training loss (""), valid_loss
// ("valid_", none when validation uses the training loss), none for a baseline.
const layers::LossConfig* loss_under(const ForecastJob& job, std::string_view prefix) {
  if (!forecast_model(job.model).neural) return nullptr;
  if (prefix.empty()) return &job.train.loss;
  return job.train.valid_loss ? &*job.train.valid_loss : nullptr;
}

// A loss setting given where nothing reads it (--loss mae --quantile 0.9, a valid_ parameter
// with no valid_loss, a baseline's loss) would change nothing without a word: refused, naming
// it. A value equal to the default changes nothing either way, so settings written out
// (forecast_settings, every option) read back.
void check_loss_parameters_read(const ForecastJob& job, const nlohmann::json& options) {
  if (!options.is_object()) return;
  const bool neural = forecast_model(job.model).neural;
  const std::string default_loss = loss_name(default_job(job.model).train.loss.kind);
  for (const std::string_view loss_key : {"loss", "valid_loss"}) {
    const auto it = options.find(loss_key);
    if (neural || it == options.end() || it->is_null()) continue;
    const std::string name = option_text(*it);
    if (name != (loss_key == "loss" ? default_loss : ""))
      throw Error(
          fmt::format("model '{}' has no weights to train with {} {}", job.model, loss_key, name),
          ErrorContext{.field = std::string(loss_key), .expected = "no loss for a baseline"});
  }
  for (const std::string_view prefix : {"", "valid_"}) {
    // The values given next to the defaults, each in the one key-value form.
    layers::LossConfig given_config, default_config;
    OptionReader reader(options, "loss");
    visit_loss_parameters(given_config, prefix, reader);
    OptionWriter given, defaults;
    visit_loss_parameters(given_config, prefix, given);
    visit_loss_parameters(default_config, prefix, defaults);
    const layers::LossConfig* loss = loss_under(job, prefix);
    for (const std::string& p : loss_parameter_names()) {
      const std::string key = std::string(prefix) + p;
      if (given.json[key] == defaults.json[key] || (loss != nullptr && loss_reads(loss->kind, p)))
        continue;
      if (loss != nullptr)
        throw Error(fmt::format("{} {} does not read {}", prefix.empty() ? "loss" : "valid_loss",
                                loss_name(loss->kind), key),
                    ErrorContext{.field = key,
                                 .expected = fmt::format("no {} with {}loss {}", key, prefix,
                                                         loss_name(loss->kind))});
      throw Error(neural ? fmt::format("{} is read only with valid_loss set (validation uses the "
                                       "training loss and its parameters)",
                                       key)
                         : fmt::format("model '{}' has no weights to train: it reads no {}",
                                       job.model, key),
                  ErrorContext{.field = key, .expected = "no " + key});
    }
  }
}

void check_loss(const layers::LossConfig& c, std::string_view prefix, const ForecastJob& job) {
  const auto key = [&](std::string_view k) { return std::string(prefix) + std::string(k); };
  if (c.kind == layers::LossKind::kHuber && !(c.delta > 0))
    hyper_parameter_out_of_range(key("huber_delta").c_str(), "a number > 0", c.delta);
  if (c.kind == layers::LossKind::kQuantile && !(c.q > 0 && c.q < 1))
    hyper_parameter_out_of_range(key("quantile").c_str(), "a number in (0, 1)", c.q);
  if (c.kind == layers::LossKind::kMase) {
    if (c.seasonality < 1)
      hyper_parameter_out_of_range(key("loss_seasonality").c_str(), "an integer ≥ 1",
                                   double(c.seasonality));
    // With no pair of insample values a season apart, MASE's scale is NaN and the loss 0.
    if (c.seasonality >= job.windows.input_size)
      hyper_parameter_out_of_range(
          key("loss_seasonality").c_str(),
          fmt::format("an integer < input_size = {}", job.windows.input_size),
          double(c.seasonality));
  }
  if (c.kind == layers::LossKind::kMultiQuantile && c.quantiles.empty())
    throw Error(fmt::format("{} needs at least one quantile (MQLoss's level or quantiles)",
                            key("loss_quantiles")),
                ErrorContext{.field = key("loss_quantiles"), .expected = "quantiles in (0, 1)"});
  for (const double q : c.quantiles)
    if (!(q > 0 && q < 1))
      hyper_parameter_out_of_range(key("loss_quantiles").c_str(), "quantiles in (0, 1)", q);
  if (c.num_samples < 1)
    hyper_parameter_out_of_range(key("num_samples").c_str(), "an integer ≥ 1",
                                 double(c.num_samples));
  if (c.kind == layers::LossKind::kGmm) {
    if (c.n_components < 1 || c.n_components > layers::kMaxMixtureComponents)
      hyper_parameter_out_of_range(
          key("loss_n_components").c_str(),
          fmt::format("an integer in [1, {}]", layers::kMaxMixtureComponents),
          double(c.n_components));
    if (!c.horizon_weight.empty())
      throw Error(fmt::format("{}: GMM takes no horizon weight (neuralforecast's GMM has none)",
                              key("horizon_weight")),
                  ErrorContext{.field = key("horizon_weight"), .expected = "empty"});
  }
  // A negative weight rewards error; all zero trains on nothing.
  for (const double w : c.horizon_weight)
    if (!(w >= 0) || !std::isfinite(w))
      hyper_parameter_out_of_range(key("horizon_weight").c_str(), "finite weights ≥ 0", w);
  if (!c.horizon_weight.empty() && std::all_of(c.horizon_weight.begin(), c.horizon_weight.end(),
                                               [](double w) { return w == 0; }))
    throw Error(
        fmt::format("{} is all zero: no horizon step would be trained on", key("horizon_weight")),
        ErrorContext{.field = key("horizon_weight"), .expected = "at least one weight > 0"});
  const size_t hw = c.horizon_weight.size();
  if (hw != 0 && Index(hw) != job.windows.h)
    throw Error(fmt::format("{} has {} entries; it needs one per horizon step (h = {})",
                            key("horizon_weight"), hw, job.windows.h),
                ErrorContext{.field = key("horizon_weight"),
                             .expected = fmt::format("{} numbers", job.windows.h),
                             .actual = fmt::format("{} numbers", hw)});
}

}  // namespace

const char* loss_name(layers::LossKind k) {
  using K = layers::LossKind;
  switch (k) {
    case K::kMae:
      return "mae";
    case K::kMse:
      return "mse";
    case K::kRmse:
      return "rmse";
    case K::kMape:
      return "mape";
    case K::kSmape:
      return "smape";
    case K::kMase:
      return "mase";
    case K::kHuber:
      return "huber";
    case K::kQuantile:
      return "quantile";
    case K::kMultiQuantile:
      return "mqloss";
    case K::kNormal:
      return "normal";
    case K::kStudentT:
      return "studentt";
    case K::kPoisson:
      return "poisson";
    case K::kGmm:
      return "gmm";
  }
  return "mae";
}

namespace {

void visit_seasonality(ForecastJob& job, OptionVisitor& v) {
  v("seasonality", job.seasonality,
    "Season length for seasonal_naive and MASE (0: from the data's frequency)");
}

}  // namespace

void visit_forecast_options(ForecastJob& job, OptionVisitor& v) {
  data::WindowConfig& w = job.windows;
  v("h", w.h, "Forecast horizon");
  // A baseline trains nothing: any option but these two would be accepted and then ignored.
  if (!forecast_model(job.model).neural) return visit_seasonality(job, v);
  v("input_size", w.input_size, "Input window length (neural models)");
  v("step_size", w.step_size, "Stride between training windows");
  v("val_size", w.val_size, "Validation rows at the end of each series (0 or ≥ h)");
  v("test_size", w.test_size, "Rows at the end of each series kept out of training");
  v("start_padding_enabled", w.start_padding, "Pad the start of each series with input_size zeros");
  // neuralforecast's one threshold applies to the input and the output part of a window alike.
  double threshold = w.min_insample_fraction;
  v("training_data_availability_threshold", threshold,
    "Minimum fraction of available values in a training window's input and output");
  w.min_insample_fraction = w.min_outsample_fraction = threshold;
  v("windows_batch_size", w.windows_batch_size, "Windows per training step (0: every window)");
  v("batch_size", w.batch_size, "Series per training step (univariate models over many series)");
  v("valid_batch_size", w.valid_batch_size,
    "Series per validation batch (univariate models; 0: batch_size)");
  v("inference_windows_batch_size", w.inference_windows_batch_size,
    "Windows per validation and predict pass (univariate models; -1: all)");
  std::string scaler = data::scaler_name(w.scaler);
  v.choice("scaler_type", scaler, kScalers, "Window scaler");
  w.scaler = data::parse_scaler_type(scaler);
  v("hist_exog_list", job.exog.hist, "Historical exogenous columns");
  v("futr_exog_list", job.exog.futr, "Future exogenous columns");
  v("stat_exog_list", job.exog.stat, "Static exogenous columns");
  v("cat_exog_list", job.exog.categorical,
    "Categorical exogenous columns (also in a *_exog_list): integer codes, embedded");
  v("categorical_cardinalities", job.exog.cardinalities,
    "Categories of each cat_exog_list column, in its order (codes 1..U; 0: unseen)");
  v("cat_emb_dim", job.train.cat_emb_dim,
    "Embedding width of a categorical column: an integer, fastai, sqrt or half");
  TrainConfig& t = job.train;
  v("max_steps", t.max_steps, "Training steps");
  v("learning_rate", t.learning_rate, "Adam learning rate");
  v("num_lr_decays", t.num_lr_decays, "StepLR halvings over max_steps (-1: none)");
  v("val_check_steps", t.val_check_steps, "Steps between validation checks");
  v("early_stop_patience_steps", t.early_stop_patience_steps,
    "Validation checks without improvement before stopping (≤ 0: off)");
  std::string loss = loss_name(t.loss.kind);
  v.choice("loss", loss, kLosses, "Training loss (and validation's, unless valid_loss is set)");
  t.loss.kind = parse_loss(loss);
  visit_loss_parameters(t.loss, "", v);
  std::string valid = t.valid_loss ? loss_name(t.valid_loss->kind) : "";
  v.choice("valid_loss", valid, kValidLosses,
           "Validation and early-stopping loss (empty: the training loss)");
  layers::LossConfig vc = t.valid_loss.value_or(layers::LossConfig{});
  visit_loss_parameters(vc, "valid_", v);
  if (valid.empty()) {
    t.valid_loss.reset();
  } else {
    vc.kind = parse_loss(valid, "valid_loss");
    t.valid_loss = vc;
  }
  v("gradient_clip_val", t.gradient_clip_val,
    "Clip the gradients to this global norm each step (0: off)");
  v("num_threads", t.threads,
    "Threads of a global univariate fit over many series (0: every core)");
  v("random_seed", t.seed, "Seed of the initial weights, window sampling and dropout");
  std::string generator = t.init_generator == Generator::kPhilox ? "philox" : "torch";
  v.choice("init_generator", generator, kGenerators,
           "Initial weights' generator: torch (neuralforecast's for the same seed) or philox");
  t.init_generator = generator == "philox" ? Generator::kPhilox : Generator::kTorchCpu;
  visit_seasonality(job, v);
}

void visit_job_options(ForecastJob& job, OptionVisitor& v) {
  visit_forecast_options(job, v);
  const ForecastModel& m = forecast_model(job.model);
  if (!job.options.has_value()) job.options = m.default_options();
  m.visit_options(job.options, v);
}

ForecastJob forecast_job(std::string_view model, const nlohmann::json& options) {
  ForecastJob job = default_job(model);
  OptionReader reader(options, fmt::format("model '{}'", model));
  visit_job_options(job, reader);
  reader.check_all_used();
  // neuralforecast's base model reads a negative input_size (the recurrent models' default -1)
  // as 3 × h.
  if (is_neural(job) && job.windows.input_size < 0) job.windows.input_size = 3 * job.windows.h;
  check_loss_parameters_read(job, options);
  check_forecast_job(job, false);
  return job;
}

nlohmann::json forecast_settings(const ForecastJob& job) {
  ForecastJob copy = job;
  OptionWriter w;
  visit_job_options(copy, w);
  w.json["model"] = job.model;
  return w.json;
}

std::vector<OptionInfo> forecast_options(std::string_view model) {
  ForecastJob job = default_job(model);
  OptionLister l;
  visit_job_options(job, l);
  return l.options;
}

bool is_neural(const ForecastJob& job) {
  return forecast_model(job.model).neural;
}

bool is_multivariate(const ForecastJob& job) {
  const ForecastModel& m = forecast_model(job.model);
  return m.neural && m.multivariate;
}

namespace {

// neuralforecast's _check_categorical_exog, plus the codes' cardinalities one per column.
void check_categorical(const ForecastJob& job) {
  const data::ExogSpec& e = job.exog;
  if (e.categorical.empty()) {
    // Cardinalities with no column to count would be read by nothing.
    if (!e.cardinalities.empty())
      throw Error(
          "categorical_cardinalities is read only with cat_exog_list (the columns they "
          "count)",
          ErrorContext{.field = "categorical_cardinalities",
                       .expected = "cat_exog_list set, or no categorical_cardinalities",
                       .actual = fmt::format("{}", fmt::join(e.cardinalities, ","))});
    return;
  }
  const ForecastModel& model = forecast_model(job.model);
  if (!model.categorical_exog)
    throw Error(
        fmt::format("{} does not support categorical exogenous variables", model.class_name));
  if (e.cardinalities.size() != e.categorical.size())
    throw Error(
        fmt::format("categorical_cardinalities has {} entries for the {} columns of "
                    "cat_exog_list ({}): give one per column, in its order",
                    e.cardinalities.size(), e.categorical.size(), fmt::join(e.categorical, ", ")));
  auto listed = [](const std::vector<std::string>& v, const std::string& c) {
    return std::find(v.begin(), v.end(), c) != v.end();
  };
  for (size_t i = 0; i < e.categorical.size(); ++i) {
    const std::string& c = e.categorical[i];
    if (!listed(e.hist, c) && !listed(e.futr, c) && !listed(e.stat, c))
      throw Error(
          fmt::format("categorical feature '{}' must also be listed in hist_exog_list, "
                      "futr_exog_list or stat_exog_list",
                      c));
    if (e.cardinalities[i] < 1)
      hyper_parameter_out_of_range("categorical_cardinalities", "integers ≥ 1",
                                   double(e.cardinalities[i]));
    if (std::find(e.categorical.begin(), e.categorical.begin() + Index(i), c) !=
        e.categorical.begin() + Index(i))
      throw Error(fmt::format("cat_exog_list names '{}' twice", c));
    (void)layers::categorical_embedding_dim(job.train.cat_emb_dim, e.cardinalities[i]);
  }
}

// One stream's channels and its categorical columns, in cat_exog_list order.
layers::CategoricalStream categorical_stream(const std::vector<std::string>& columns,
                                             const ForecastJob& job) {
  layers::CategoricalStream s{.channels = Index(columns.size())};
  for (size_t i = 0; i < job.exog.categorical.size(); ++i) {
    const auto it = std::find(columns.begin(), columns.end(), job.exog.categorical[i]);
    if (it == columns.end()) continue;
    const Index u = job.exog.cardinalities[i];
    s.columns.push_back({.channel = Index(it - columns.begin()),
                         .cardinality = u,
                         .dim = layers::categorical_embedding_dim(job.train.cat_emb_dim, u)});
  }
  return s;
}

}  // namespace

namespace detail {

ExogEmbeddingsConfig exog_embeddings_config(const data::Panel& p, const ForecastJob& job) {
  SHOAL_CHECK(p.n_hist() == Index(job.exog.hist.size()) &&
                  p.n_futr() == Index(job.exog.futr.size()) &&
                  p.n_stat() == Index(job.exog.stat.size()),
              "the panel's exogenous columns ({} hist, {} futr, {} static) are not the job's",
              p.n_hist(), p.n_futr(), p.n_stat());
  if (job.exog.categorical.empty())
    return {.hist = {.channels = p.n_hist()},
            .futr = {.channels = p.n_futr()},
            .stat = {.channels = p.n_stat()}};
  return {.hist = categorical_stream(job.exog.hist, job),
          .futr = categorical_stream(job.exog.futr, job),
          .stat = categorical_stream(job.exog.stat, job)};
}

}  // namespace detail

void check_forecast_job(const ForecastJob& job, bool fitting) {
  const ForecastModel& model = forecast_model(job.model);
  const data::WindowConfig& w = job.windows;
  if (w.h < 1) hyper_parameter_out_of_range("h", "an integer ≥ 1", double(w.h));
  if (job.seasonality < 0)
    hyper_parameter_out_of_range("seasonality", "an integer ≥ 0 (0: from the data)",
                                 double(job.seasonality));
  if (!model.neural) return;
  if (w.input_size < 1)
    hyper_parameter_out_of_range("input_size", "an integer ≥ 1", double(w.input_size));
  if (w.step_size < 1)
    hyper_parameter_out_of_range("step_size", "an integer ≥ 1", double(w.step_size));
  if (w.windows_batch_size < 0)
    hyper_parameter_out_of_range("windows_batch_size", "an integer ≥ 1 (or 0: every window)",
                                 double(w.windows_batch_size));
  if (w.batch_size < 1)
    hyper_parameter_out_of_range("batch_size", "an integer ≥ 1", double(w.batch_size));
  if (w.valid_batch_size < 0)
    hyper_parameter_out_of_range("valid_batch_size", "an integer ≥ 1 (or 0: batch_size)",
                                 double(w.valid_batch_size));
  if (w.inference_windows_batch_size < 1 && w.inference_windows_batch_size != -1)
    hyper_parameter_out_of_range("inference_windows_batch_size", "an integer ≥ 1 (or -1: all)",
                                 double(w.inference_windows_batch_size));
  // Below 1 the trainers would validate every step without a word.
  if (job.train.val_check_steps < 1)
    hyper_parameter_out_of_range("val_check_steps", "an integer ≥ 1",
                                 double(job.train.val_check_steps));
  if (!(job.train.gradient_clip_val >= 0) || !std::isfinite(job.train.gradient_clip_val))
    hyper_parameter_out_of_range("gradient_clip_val", "a finite number ≥ 0 (0: off)",
                                 job.train.gradient_clip_val);
  (void)checked_thread_count(job.train.threads, "num_threads");
  if (w.val_size != 0 && w.val_size < w.h)
    hyper_parameter_out_of_range("val_size", fmt::format("0 or ≥ h = {}", w.h), double(w.val_size));
  if (w.test_size < 0)
    hyper_parameter_out_of_range("test_size", "an integer ≥ 0", double(w.test_size));
  if (!(w.min_insample_fraction >= 0 && w.min_insample_fraction <= 1))
    hyper_parameter_out_of_range("training_data_availability_threshold", "a fraction in [0, 1]",
                                 w.min_insample_fraction);
  check_categorical(job);
  check_loss(job.train.loss, "", job);
  if (job.train.valid_loss) check_loss(*job.train.valid_loss, "valid_", job);
  detail::check_loss_pair(job.train);
  if (job.options.has_value()) model.validate(job.options);
  if (!fitting) return;
  if (job.train.max_steps < 1)
    hyper_parameter_out_of_range("max_steps", "an integer ≥ 1", double(job.train.max_steps));
  if (!(job.train.learning_rate > 0) || !std::isfinite(job.train.learning_rate))
    hyper_parameter_out_of_range("learning_rate", "a finite number > 0", job.train.learning_rate);
  SHOAL_CHECK(job.train.early_stop_patience_steps <= 0 || w.val_size > 0,
              "early stopping (patience {}) needs validation data: set val_size ≥ h",
              job.train.early_stop_patience_steps);
}

layers::LossKind parse_loss(std::string_view name, std::string_view field) {
  for (int k = 0; k <= int(layers::LossKind::kGmm); ++k) {
    const auto kind = static_cast<layers::LossKind>(k);
    if (name == loss_name(kind)) return kind;
  }
  throw Error(fmt::format("unknown {} '{}'", field, name),
              ErrorContext{.field = std::string(field),
                           .expected = "mae, mse, rmse, mape, smape, mase, huber, quantile, "
                                       "mqloss, normal, studentt, poisson or gmm",
                           .actual = std::string(name)});
}

FitResult fit_forecast(const data::Panel& panel, const ForecastJob& job) {
  return forecast_model(job.model).fit(panel, job);
}

size_t planned_arena_bytes(const data::Panel& panel, const ForecastJob& job) {
  return forecast_model(job.model).planned_bytes(panel, job);
}

std::vector<double> predict_windows(const data::Panel& panel, const ForecastJob& job,
                                    std::string_view weights, std::span<const Index> starts,
                                    Index end, bool future) {
  const ForecastModel& m = forecast_model(job.model);
  if (m.predict == nullptr)
    throw Error(fmt::format("model '{}' has no weights to predict from", job.model));
  return m.predict(panel, job, weights, starts, end, future);
}

}  // namespace shoal::train
