// The bad-input suite: one case per kind of bad input or training fault, each asserting
// the exact one-line message (file, line, column or field, expected, found). docs/errors.md is
// generated from this table's real output by tools/errors_md.sh (SHOAL_ERRORS_MD=FILE makes each
// case append its row there).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "shoal/core/error.h"
#include "shoal/data/csv.h"
#include "shoal/data/ncf.h"
#include "shoal/data/timeseries.h"
#include "shoal/data/windows.h"
#include "shoal/fleet/jobs.h"
#include "shoal/models/mlp.h"
#include "shoal/models/ncf.h"
#include "shoal/train/forecast_job.h"
#include "shoal/train/mlp_trainer.h"
#include "shoal/train/ncf_trainer.h"
#include "shoal/train/safetensors.h"

namespace shoal {
namespace bad_input_test {

namespace fs = std::filesystem;

struct Case {
  const char* name;   // gtest name and the table's first column
  const char* input;  // what the case feeds in, for the table (markdown)
  std::function<void()> run;
  std::string message;  // the exact what()
};

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string gzip_bytes(const std::string& text) {
  uLongf n = compressBound(static_cast<uLong>(text.size())) + 32;
  std::string out(n, '\0');
  z_stream zs{};
  deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  zs.avail_in = static_cast<uInt>(text.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(n);
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// A smooth monthly-like series of `n` integer steps.
std::string series_csv(const std::string& id, int n, int ds0 = 1) {
  std::string s;
  for (int t = 0; t < n; ++t)
    s += fmt::format("{},{},{}\n", id, ds0 + t, 10 + std::sin(0.5 * t) + 0.01 * t);
  return s;
}

void read_long(const std::string& path) {
  data::read_series(path);
}

train::ForecastJob small_job(const std::string& model = "tsmixerx") {
  train::ForecastJob job;
  job.model = model;
  job.windows = {.input_size = 8, .h = 4, .windows_batch_size = 8};
  job.train = {.max_steps = 20, .learning_rate = 1e-3, .seed = 1};
  return job;
}

void fit(const std::string& data_path, const train::ForecastJob& job) {
  const data::SeriesSet set = data::read_series(data_path);
  std::vector<Index> all(size_t(set.n_series()));
  for (Index i = 0; i < set.n_series(); ++i) all[size_t(i)] = i;
  train::fit_forecast(data::Panel(set, all, job.exog), job);
}

// Runs the first job a jobs file builds (errors of a line become failing jobs).
void run_jobs_file(const std::string& path) {
  const auto specs = fleet::read_jobs_file(path);
  if (!specs.front().error.empty()) throw Error(specs.front().error);
  fleet::build_jobs(specs).jobs.front().run();
}

std::vector<double> mlp_rows(Index rows, Index in) {
  std::vector<double> x(size_t(rows * in));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * double(i));
  return x;
}

void train_mlp(double lr, Index batch) {
  const Index rows = 64, in = 3;
  const std::vector<double> x = mlp_rows(rows, in);
  std::vector<double> y(static_cast<size_t>(rows));
  for (Index r = 0; r < rows; ++r) y[size_t(r)] = x[size_t(r * in)] * 2 + 1;
  train::MlpTrainer t({.in = in, .hidden = {8}, .out = 1}, {.batch_size = batch, .lr = lr},
                      ConstMat<double>(x.data(), rows, in), ConstMat<double>(y.data(), rows, 1));
  for (int e = 0; e < 3; ++e) t.train_epoch();
}

void train_ncf(double lr) {
  data::NcfPositives p;
  for (int32_t u = 0; u < 20; ++u)
    for (int32_t k = 0; k < 3; ++k) {
      p.users.push_back(u);
      p.items.push_back((u * 7 + k * 5) % 40);
    }
  p.num_users = 20;
  p.num_items = 40;
  const models::Ncf<float>::Config model{.num_users = 20, .num_items = 40, .layers = {16, 8}};
  train::NcfTrainer t(model, {.batch_size = 64, .lr = lr}, p);
  for (int e = 0; e < 3; ++e) t.train_epoch();
}

std::string safetensors_with_header(const std::string& json, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((json.size() >> (8 * i)) & 0xff);
  return out + json + data;
}

const std::vector<Case>& cases() {
  // The truncated gzip's size depends on zlib's compressor: the message is computed from it.
  static const std::string kGzip = gzip_bytes("unique_id,ds,y\n" + series_csv("A", 400));
  static const std::vector<Case> kCases = {
      // ---- long-format CSV (unique_id, ds, y [, exog...]) ----
      {"csv_empty_file", "`shoal forecast --data empty.csv` (0 bytes)",
       [] {
         write("empty.csv", "");
         read_long("empty.csv");
       },
       "empty.csv: empty file (expected a header line and rows, got nothing)"},
      {"csv_header_only", "`unique_id,ds,y` and nothing else",
       [] {
         write("header.csv", "unique_id,ds,y\n");
         read_long("header.csv");
       },
       "header.csv:1: no data rows (expected at least one row after the header, got only the "
       "header)"},
      {"csv_missing_column", "header `unique_id,ds` (no `y`)",
       [] {
         write("noy.csv", "unique_id,ds\nA,1\n");
         read_long("noy.csv");
       },
       "noy.csv:1: field 'y': missing column 'y' (expected a header with unique_id, ds and y, got "
       "'unique_id,ds')"},
      {"csv_duplicated_column", "header `unique_id,ds,y,y`",
       [] {
         write("dup_col.csv", "unique_id,ds,y,y\nA,1,2,3\n");
         read_long("dup_col.csv");
       },
       "dup_col.csv:1:4: field 'y': duplicated column name"},
      {"csv_ragged_row", "row 3 has 4 fields under a 3-column header",
       [] {
         write("ragged.csv", "unique_id,ds,y\nA,1,2\nA,2,3,4\n");
         read_long("ragged.csv");
       },
       "ragged.csv:3: wrong number of fields (expected 3 fields, got 4)"},
      {"csv_non_numeric", "`y` is `abc` on line 3",
       [] {
         write("text.csv", "unique_id,ds,y\nA,1,2\nA,2,abc\n");
         read_long("text.csv");
       },
       "text.csv:3:3: field 'y': not a finite number (expected a finite number, got 'abc')"},
      {"csv_nan_target", "`y` is `nan` on line 3",
       [] {
         write("nan.csv", "unique_id,ds,y\nA,1,2\nA,2,nan\n");
         read_long("nan.csv");
       },
       "nan.csv:3:3: field 'y': not a finite number (expected a finite number, got 'nan')"},
      {"csv_inf_feature", "exogenous column `price` is `inf` on line 2",
       [] {
         write("inf.csv", "unique_id,ds,y,price\nA,1,2,inf\n");
         read_long("inf.csv");
       },
       "inf.csv:2:4: field 'price': not a finite number (expected a finite number, got 'inf')"},
      {"csv_duplicate_id_ds", "`(A, 2)` twice",
       [] {
         write("dup_row.csv", "unique_id,ds,y\nA,1,2\nA,2,3\nA,2,4\n");
         read_long("dup_row.csv");
       },
       "dup_row.csv:4:2: field 'ds': duplicate (unique_id, ds) for series 'A' (expected one row "
       "per (unique_id, ds), got '2')"},
      {"csv_unsorted_dates", "ds 2 after ds 3 in series A",
       [] {
         write("unsorted.csv", "unique_id,ds,y\nA,1,2\nA,2,3\nA,3,4\nA,2,5\n");
         read_long("unsorted.csv");
       },
       "unsorted.csv:5:2: field 'ds': ds not ascending in series 'A' (expected a ds after 3, got "
       "'2')"},
      {"csv_gapped_dates", "monthly dates skip 2024-03-01",
       [] {
         write("gap.csv", "unique_id,ds,y\nA,2024-01-01,1\nA,2024-02-01,2\nA,2024-04-01,3\n");
         read_long("gap.csv");
       },
       "gap.csv:4:2: field 'ds': gap in series 'A' (expected 2024-03-01 (1mo after "
       "2024-02-01), got '2024-04-01')"},
      {"csv_truncated_gzip", "`data.csv.gz` cut to half its bytes",
       [] {
         write("cut.csv.gz", kGzip.substr(0, kGzip.size() / 2));
         read_long("cut.csv.gz");
       },
       fmt::format("cut.csv.gz: truncated gzip file (expected a complete gzip stream, got the data "
                   "ends after {} compressed bytes)",
                   kGzip.size() / 2)},
      {"series_too_short", "a 6-row series, input_size 8, h 4 (windows are right-padded by h)",
       [] {
         write("short.csv", "unique_id,ds,y\n" + series_csv("A", 6));
         fit("short.csv", small_job());
       },
       "short.csv: field 'input_size': time series is too short for training (expected at least 8 "
       "training rows (input_size 8 without start padding), got 6 rows)"},
      // ---- static features ----
      {"static_missing_id", "static file header `store,size`",
       [] {
         write("static.csv", "store,size\n1,2\n");
         data::read_static("static.csv");
       },
       "static.csv:1: field 'unique_id': missing column 'unique_id' (expected a header with "
       "unique_id and feature columns, got 'store,size')"},
      {"static_duplicate_id", "series `A` listed twice",
       [] {
         write("static_dup.csv", "unique_id,size\nA,1\nA,2\n");
         data::read_static("static_dup.csv");
       },
       "static_dup.csv:3:1: field 'unique_id': duplicate unique_id (expected one row per series, "
       "got 'A')"},
      // ---- numeric CSV (shoal mlp train) ----
      {"mlp_csv_non_numeric", "`x2` is `n/a` on line 2",
       [] {
         write("mlp.csv", "x1,x2,y\n1,n/a,3\n");
         data::read_numeric_csv("mlp.csv");
       },
       "mlp.csv:2:2: field 'x2': not a finite number (expected a finite number, got 'n/a')"},
      // ---- text and files at the edge ----
      {"csv_id_not_utf8", "series id `\\xff\\xfe` (Latin-1 bytes) on line 3",
       [] {
         write("latin1.csv", "unique_id,ds,y\nA,1,2\n\xff\xfe,1,3\n");
         read_long("latin1.csv");
       },
       "latin1.csv:3:1: text is not UTF-8 (expected UTF-8 text (save the file as UTF-8), got byte "
       "0xFF at byte 1 of the line)"},
      {"csv_long_field_cut", "`y` is 500 letters on line 2",
       [] {
         write("long.csv", "unique_id,ds,y\nA,1," + std::string(500, 'x') + "\n");
         read_long("long.csv");
       },
       "long.csv:2:3: field 'y': not a finite number (expected a finite number, got '" +
           std::string(79, 'x') + "... (502 bytes))"},
      {"input_is_a_folder", "`--data` names a folder",
       [] {
         fs::create_directories("folder.csv");
         read_long("folder.csv");
       },
       "folder.csv: cannot read input (expected a regular file, got a folder)"},
      {"input_is_a_fifo", "`--data` names a FIFO (nothing is waited for)",
       [] {
         ASSERT_EQ(::mkfifo("pipe.csv", 0644), 0);
         read_long("pipe.csv");
       },
       "pipe.csv: cannot read input (expected a regular file, got a FIFO (named pipe))"},
      {"ncf_ragged_rating", "rating line 2 has 3 fields, line 1 has 4",
       [] {
         write("ragged.rating", "0\t1\t5\t0\n1\t2\t5\n");
         data::read_ncf_ratings("ragged.rating");
       },
       "ragged.rating:2: wrong number of fields (expected 4 fields (as on line 1), got 3)"},
      {"ncf_far_outlier_id", "user 2000000000 among users 0 and 1 (a 100+ GB table)",
       [] {
         write("far.rating", "0\t1\n1\t2\n2000000000\t3\n");
         data::read_ncf_ratings("far.rating");
       },
       "far.rating:3: field 'user': user id far beyond the others (expected dense ids 0..n-1 (one "
       "embedding row each; at most 1048576 for 3 rows), got 2000000000)"},
      // ---- NCF rating files ----
      {"ncf_negative_id", "rating line `-3\\t7\\t5\\t0`",
       [] {
         write("neg.rating", "0\t1\t5\t0\n-3\t7\t5\t0\n");
         data::read_ncf_ratings("neg.rating");
       },
       "neg.rating:2: field 'user': negative user id (expected an id >= 0, got -3)"},
      {"ncf_id_out_of_range", "item 50 where the model has 40 items",
       [] {
         write("range.rating", "0\t1\t5\t0\n1\t50\t5\t0\n");
         data::read_ncf_ratings("range.rating", {.num_users = 10, .num_items = 40});
       },
       "range.rating:2: field 'item': item id out of range (expected an id < 40, got 50)"},
      {"ncf_non_integer_id", "user `u7`",
       [] {
         write("text.rating", "u7\t1\t5\t0\n");
         data::read_ncf_ratings("text.rating");
       },
       "text.rating:1: field 'user': user id is not an integer (expected an integer id >= 0, got "
       "u7)"},
      {"ncf_empty_file", "an empty `.rating` file",
       [] {
         write("empty.rating", "");
         data::read_ncf_ratings("empty.rating");
       },
       "empty.rating: no ratings found (expected user<TAB>item lines, got an empty file)"},
      // ---- safetensors (checkpoints, weights) ----
      {"safetensors_truncated", "a 5-byte file",
       [] {
         write("tiny.safetensors", "abcde");
         train::read_safetensors("tiny.safetensors");
       },
       "tiny.safetensors: truncated safetensors file (expected at least 8 bytes, got 5 bytes)"},
      {"safetensors_header_too_long", "header length 1000 in a 40-byte file",
       [] {
         std::string b = safetensors_with_header("{}", std::string(30, ' '));
         b[0] = char(0xe8);
         b[1] = char(0x03);
         write("long.safetensors", b);
         train::read_safetensors("long.safetensors");
       },
       "long.safetensors: field 'header': header length exceeds the file (expected <= 32, got "
       "1000)"},
      {"safetensors_lying_offsets", "tensor `w` claims bytes [0, 64) of 16",
       [] {
         write("lie.safetensors", safetensors_with_header(
                                      R"({"w":{"dtype":"F32","shape":[16],"data_offsets":[0,64]}})",
                                      std::string(16, '\0')));
         train::read_safetensors("lie.safetensors");
       },
       "lie.safetensors: field 'w': data offsets out of range (truncated file?) (expected 0 <= "
       "begin <= end <= 16, got [0, 64])"},
      {"safetensors_shape_mismatch", "tensor `w` is 4 floats but its shape says 16",
       [] {
         write(
             "shape.safetensors",
             safetensors_with_header(R"({"w":{"dtype":"F32","shape":[16],"data_offsets":[0,16]}})",
                                     std::string(16, '\0')));
         train::read_safetensors("shape.safetensors");
       },
       "shape.safetensors: field 'w': data size does not match shape and dtype (expected 64 "
       "bytes, got 16 bytes)"},
      // ---- jobs files and configs ----
      {"jobs_bad_json", "jobs line `{\"model\": \"naive\",`",
       [] {
         write("bad.jsonl", "{\"model\": \"naive\",\n");
         run_jobs_file("bad.jsonl");
       },
       "bad.jsonl:1: [json.exception.parse_error.101] parse error at line 1, column 19: syntax "
       "error while parsing object key - unexpected end of input; expected string literal"},
      {"jobs_csv_missing_column", "CSV jobs header `data,seed`",
       [] {
         write("jobs.csv", "data,seed\nx.csv,1\n");
         fleet::read_jobs_file("jobs.csv");
       },
       "jobs.csv:1: field 'model': a CSV jobs file needs columns data and model (expected a header "
       "naming data, model [, id, seed, test, static, futr_df, series, max_series, config "
       "keys...], got "
       "'data,seed')"},
      {"config_unknown_option", "config key `hidden_size` for tsmixerx",
       [] {
         write("d.csv", "unique_id,ds,y\n" + series_csv("A", 40));
         write("unknown.jsonl",
               R"({"data": "d.csv", "model": "tsmixerx", "config": {"h": 4, "input_size": 8, )"
               R"("hidden_size": 3}})"
               "\n");
         run_jobs_file("unknown.jsonl");
       },
       "unknown.jsonl:1: field 'hidden_size': unknown config key 'hidden_size' for model "
       "'tsmixerx' (expected one of: batch_size, cat_emb_dim, cat_exog_list, "
       "categorical_cardinalities, dropout, early_stop_patience_steps, "
       "ff_dim, futr_exog_list, gradient_clip_val, h, hist_exog_list, horizon_weight, "
       "huber_delta, inference_windows_batch_size, init_generator, input_size, "
       "learning_rate, loss, loss_n_components, loss_quantiles, loss_seasonality, "
       "loss_weighted, max_steps, n_block, num_lr_decays, num_samples, num_threads, "
       "quantile, random_seed, return_params, revin, scaler_type, seasonality, "
       "start_padding_enabled, stat_exog_list, step_size, test_size, "
       "training_data_availability_threshold, val_check_steps, val_size, "
       "valid_batch_size, valid_horizon_weight, valid_huber_delta, valid_loss, "
       "valid_loss_n_components, valid_loss_quantiles, valid_loss_seasonality, "
       "valid_loss_weighted, valid_num_samples, valid_quantile, valid_return_params, "
       "windows_batch_size)"},
      {"config_n_series_mismatch", "`\"series\": \"all\"` over 2 series with `n_series` 3",
       [] {
         write("d2.csv", "unique_id,ds,y\n" + series_csv("A", 40) + series_csv("B", 40));
         write("nseries.jsonl", R"({"data": "d2.csv", "model": "tsmixer", "series": "all", )"
                                R"("config": {"h": 4, "input_size": 8, "n_series": 3}})"
                                "\n");
         run_jobs_file("nseries.jsonl");
       },
       "nseries.jsonl:1: d2.csv: field 'n_series': n_series does not match the data (expected 2 "
       "(the series in the "
       "data), got 3)"},
      // ---- hyper-parameters ----
      {"hparam_h_zero", "`h` 0",
       [] {
         auto job = small_job();
         job.windows.h = 0;
         train::check_forecast_job(job, true);
       },
       "field 'h': hyper-parameter out of range (expected an integer ≥ 1, got 0)"},
      {"hparam_input_size_negative", "`input_size` -8",
       [] {
         auto job = small_job();
         job.windows.input_size = -8;
         train::check_forecast_job(job, true);
       },
       "field 'input_size': hyper-parameter out of range (expected an integer ≥ 1, got -8)"},
      {"hparam_dropout_one", "`dropout` 1",
       [] {
         train::forecast_job("tsmixerx", {{"h", 4}, {"input_size", 8}, {"dropout", 1}});
       },
       "field 'dropout': hyper-parameter out of range (expected a probability in [0, 1), got 1)"},
      {"hparam_max_steps_zero", "`max_steps` 0",
       [] {
         auto job = small_job();
         job.train.max_steps = 0;
         train::check_forecast_job(job, true);
       },
       "field 'max_steps': hyper-parameter out of range (expected an integer ≥ 1, got 0)"},
      {"hparam_learning_rate_zero", "forecast `learning_rate` 0",
       [] {
         auto job = small_job();
         job.train.learning_rate = 0;
         train::check_forecast_job(job, true);
       },
       "field 'learning_rate': hyper-parameter out of range (expected a finite number > 0, got 0)"},
      {"hparam_mlp_batch_size_zero", "MLP `batch_size` 0", [] { train_mlp(1e-3, 0); },
       "field 'batch_size': hyper-parameter out of range (expected an integer ≥ 1, got 0)"},
      {"hparam_ncf_learning_rate_negative", "NCF `lr` -0.1", [] { train_ncf(-0.1); },
       "field 'learning_rate': hyper-parameter out of range (expected a finite number > 0, got "
       "-0.1)"},
      // ---- training faults ----
      {"fault_tsmixerx_diverges", "TSMixerx with `learning_rate` 1e30",
       [] {
         write("fault.csv", "unique_id,ds,y\n" + series_csv("A", 40));
         auto job = small_job();
         job.train.learning_rate = 1e30;
         fit("fault.csv", job);
       },
       "non-finite loss at step 2 (first non-finite activation in layer "
       "'feature_mixer_hist.feature_norm', tensor 'feature_mixer_hist.feature_norm.mean')"},
      {"fault_tsmixer_diverges", "TSMixer with `learning_rate` 1e30",
       [] {
         write("fault.csv", "unique_id,ds,y\n" + series_csv("A", 40));
         auto job = small_job("tsmixer");
         job.train.learning_rate = 1e30;
         fit("fault.csv", job);
       },
       "non-finite loss at step 2 (first non-finite running statistic in layer "
       "'mixing_layers.0.temporal_mixer.temporal_norm', tensor "
       "'mixing_layers.0.temporal_mixer.temporal_norm.running_var')"},
      {"fault_mlp_diverges", "MLP with `lr` 1e30", [] { train_mlp(1e30, 16); },
       "non-finite loss at step 2 (first non-finite activation in layer 'layers.1', tensor "
       "'layers.1.out')"},
      {"fault_ncf_diverges", "NeuMF with `lr` 1e30", [] { train_ncf(1e30); },
       "non-finite loss at step 2 (first non-finite activation in layer 'predict', tensor "
       "'predict.in')"},
  };
  return kCases;
}

class BadInput : public ::testing::TestWithParam<Case> {
 protected:
  // Each case writes its files into a fresh folder and runs there, so messages name the files
  // as a user typed them (relative paths), the same on every machine.
  void SetUp() override {
    home_ = fs::current_path();
    dir_ = fs::temp_directory_path() / fmt::format("shoal_bad_input_{}", ::getpid());
    fs::create_directories(dir_);
    fs::current_path(dir_);
  }
  void TearDown() override {
    fs::current_path(home_);
    fs::remove_all(dir_);
  }
  fs::path home_, dir_;
};

TEST_P(BadInput, ThrowsTheExactMessage) {
  const Case& c = GetParam();
  std::string got = "(no error)";
  try {
    c.run();
  } catch (const Error& e) {
    got = e.what();
  }
  EXPECT_EQ(got, c.message);
  EXPECT_EQ(got.find('\n'), std::string::npos) << "one line";
  if (const char* md = std::getenv("SHOAL_ERRORS_MD")) {
    std::string cell = got;
    for (size_t p = 0; (p = cell.find('|', p)) != std::string::npos; p += 2)
      cell.replace(p, 1, "\\|");
    std::ofstream(md, std::ios::app) << fmt::format("| {} | {} | `{}` |\n", c.name, c.input, cell);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInput, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

// What a careful reader accepts: a UTF-8 byte-order mark (Excel's "CSV UTF-8") and quoted
// fields holding commas.
TEST(TextEdges, ByteOrderMarkAndQuotedCommasAreRead) {
  const data::SeriesSet set = data::parse_series(
      "\xEF\xBB\xBFunique_id,ds,y\n\"Store 1, north\",1,2\n\"Store 1, north\",2,3\nB,1,4\n",
      "bom.csv");
  ASSERT_EQ(set.n_series(), 2);
  const Index s = set.find("Store 1, north");
  ASSERT_GE(s, 0);
  EXPECT_EQ(set.y_of(s)[1], 3.0);
  const data::NumericTable t = data::parse_numeric_csv("\xEF\xBB\xBFx,y\n1,2\n", "bom.csv");
  EXPECT_EQ(t.columns[0], "x");
}

}  // namespace bad_input_test
}  // namespace shoal
