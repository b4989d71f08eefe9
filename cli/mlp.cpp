// `shoal mlp train`: the MLP demo. Reads a numeric CSV, holds out a validation split, trains
// with all requested threads and reports per-epoch loss and held-out metrics.
#include <cstdio>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/model_options.h"
#include "cli/profile_options.h"
#include "shoal/data/csv.h"
#include "shoal/train/mlp_trainer.h"

namespace shoal::cli {
namespace {

struct MlpArgs {
  std::string data;
  int threads = 0;
  uint64_t seed = 1;
  OptionFlags options;  // train::MlpOptions
  ProfileOptions profile;
};

void run_train(const MlpArgs& args) {
  OutputPlan outputs({args.data});
  plan_profile_outputs(outputs, args.profile, "mlp");
  train::MlpOptions a;
  OptionReader reader(args.options.given(), "shoal mlp train");
  a.visit(reader);
  a.validate();
  const data::NumericTable table = data::read_numeric_csv(args.data);
  const Index target = table.column(a.target);
  SHOAL_CHECK(table.cols() >= 2, "{}: need at least one feature column besides '{}'", args.data,
              a.target);
  std::vector<double> x, y;
  data::shuffled_xy(table, target, args.seed, x, y);
  const Index in = table.cols() - 1;
  const Index n_val = static_cast<Index>(static_cast<double>(table.rows) * a.val_fraction);
  const Index n_train = table.rows - n_val;
  SHOAL_CHECK(n_train > 0, "no rows left for training");
  ConstMat<double> x_train(x.data(), n_train, in), y_train(y.data(), n_train, 1);
  ConstMat<double> x_val(x.data() + n_train * in, n_val, in), y_val(y.data() + n_train, n_val, 1);

  train::MlpTrainer trainer(a.model(in),
                            {.batch_size = a.batch_size,
                             .lr = a.learning_rate,
                             .seed = args.seed,
                             .threads = cap_threads(args.threads, "mlp"),
                             .pinning = Pinning::kAll},
                            x_train, y_train);
  auto recorder = make_recorder(args.profile);
  if (recorder) {
    recorder->set_model_name(0, "mlp");
    trainer.set_profiler(recorder.get());
    recorder->start();
  }
  std::string widths;
  for (Index h : a.hidden) widths += fmt::format("{}→", h);
  fmt::print(
      "shoal mlp: {} rows ({} train, {} validation), {} features → {}1, {} threads, "
      "batch {} rows\n",
      table.rows, n_train, n_val, in, widths, trainer.threads(), a.batch_size);
  double seconds = 0;
  for (int e = 0; e < a.epochs; ++e) {
    const train::EpochReport r = trainer.train_epoch();
    seconds += r.seconds;
    if (n_val > 0 && (e == 0 || (e + 1) % 5 == 0 || e + 1 == a.epochs)) {
      const auto m = trainer.evaluate(x_val, y_val);
      fmt::print("epoch {:3d}  train loss {:.4f}  val mse {:.4f}  val r2 {:.4f}  ({:.1f} ms)\n",
                 r.epoch, r.train_loss, m.mse, m.r2, r.seconds * 1e3);
    } else if (n_val == 0) {
      fmt::print("epoch {:3d}  train loss {:.4f}  ({:.1f} ms)\n", r.epoch, r.train_loss,
                 r.seconds * 1e3);
    }
  }
  const double rows_per_s = static_cast<double>(n_train) * a.epochs / seconds;
  fmt::print("trained {} steps in {:.3f} s ({:.0f} rows/s)\n", trainer.steps(), seconds,
             rows_per_s);
  if (n_val > 0) {
    const auto m = trainer.evaluate(x_val, y_val);
    fmt::print("validation: mse {:.4f}  mae {:.4f}  r2 {:.4f}\n", m.mse, m.mae, m.r2);
  }
  if (recorder) finish_profile(*recorder, args.profile, "mlp");
}

}  // namespace

void register_mlp(CLI::App& app) {
  auto* mlp = app.add_subcommand("mlp", "The MLP demo: a regressor on a numeric CSV");
  mlp->require_subcommand(1);
  auto* train =
      mlp->add_subcommand("train", "Train an MLP regressor and report validation metrics");
  static MlpArgs a;
  train->add_option("--data", a.data, "CSV with a header; all columns numeric")->required();
  train::MlpOptions defaults;
  OptionLister list;
  defaults.visit(list);
  a.options.add(*train, {{"mlp", list.options}}, {{"lr", "learning_rate"}});
  train->add_option("--threads", a.threads, "Threads (0 = all cores)")->capture_default_str();
  train->add_option("--seed", a.seed, "Seed for init, shuffling and the split")
      ->check(kUint64)
      ->capture_default_str();
  add_profile_options(*train, a.profile);
  train->callback([] { run_train(a); });
}

}  // namespace shoal::cli
