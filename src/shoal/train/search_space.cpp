// neuralforecast 3.3's default search spaces (neuralforecast/auto.py), one table for every
// front end (include/shoal/train/search_space.h).
#include "shoal/train/search_space.h"

#include <cmath>
#include <map>

#include "shoal/core/error.h"

namespace shoal::train {
namespace {

using nlohmann::json;

SearchDimension choice(std::string key, json values) {
  return {.key = std::move(key), .kind = SpaceKind::kChoice, .choices = std::move(values)};
}
SearchDimension randint(std::string key, double lower, double upper) {
  return {.key = std::move(key), .kind = SpaceKind::kRandInt, .lower = lower, .upper = upper};
}
SearchDimension uniform(std::string key, double lower, double upper) {
  return {.key = std::move(key), .kind = SpaceKind::kUniform, .lower = lower, .upper = upper};
}
SearchDimension loguniform(std::string key, double lower, double upper) {
  return {.key = std::move(key), .kind = SpaceKind::kLogUniform, .lower = lower, .upper = upper};
}
SearchDimension quniform(std::string key, double lower, double upper, double q) {
  return {
      .key = std::move(key), .kind = SpaceKind::kQUniform, .lower = lower, .upper = upper, .q = q};
}

// The dimensions most models share: learning rate, scaler, batch sizes, seed. neuralforecast
// lists the scaler None, which its TemporalNorm takes as the identity: spelled so here.
SearchSpace common(double lr_low, double lr_high, bool windows_batch) {
  SearchSpace s = {loguniform("learning_rate", lr_low, lr_high),
                   choice("scaler_type", {"identity", "robust", "standard"}),
                   choice("batch_size", {32, 64, 128, 256})};
  if (windows_batch) s.push_back(choice("windows_batch_size", {128, 256, 512, 1024}));
  s.push_back(randint("random_seed", 1, 20));
  return s;
}

SearchSpace join(SearchSpace a, const SearchSpace& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct ModelSpace {
  std::vector<int> input_multiples;  // input_size = h × one of these (-1: 3 × h)
  SearchSpace own;
  bool step_size = true;  // searches step_size over {1, h}
};

const std::map<std::string, ModelSpace, std::less<>>& table() {
  static const auto* t = [] {
    const SearchDimension steps_500_1000 = choice("max_steps", {500, 1000});
    const SearchDimension steps_q = quniform("max_steps", 500, 1500, 100);
    const SearchSpace mixer = {choice("n_block", {1, 2, 4, 6, 8}),
                               loguniform("learning_rate", 1e-4, 1e-2),
                               choice("ff_dim", {32, 64, 128}),
                               choice("scaler_type", {"identity", "robust", "standard"}),
                               choice("max_steps", {500, 1000, 2000}),
                               choice("batch_size", {32, 64, 128, 256}),
                               uniform("dropout", 0.0, 0.99),
                               randint("random_seed", 1, 20)};
    const std::vector<int> five = {1, 2, 3, 4, 5};
    // The recurrent models' (RNN, GRU, LSTM): no step_size; context_size, deprecated and without
    // effect, and inference_input_size (-1 · h, input_size), which only step-by-step decoding
    // reads, are left out.
    const ModelSpace recurrent = {
        {-1, 4, 16, 64},
        {choice("encoder_hidden_size", {16, 32, 64, 128}), randint("encoder_n_layers", 1, 4),
         choice("decoder_hidden_size", {16, 32, 64, 128}), loguniform("learning_rate", 1e-4, 1e-1),
         steps_500_1000, choice("batch_size", {16, 32}), randint("random_seed", 1, 20)},
        false};
    auto* m = new std::map<std::string, ModelSpace, std::less<>>{
        {"rnn", recurrent},
        {"gru", recurrent},
        {"lstm", recurrent},
        // TCN's: no step_size; context_size (read by nothing) and inference_input_size (read by
        // recurrent models only) left out as for the recurrent models.
        {"tcn",
         {{-1, 4, 16, 64},
          {choice("encoder_hidden_size", {16, 32, 64, 128}),
           choice("decoder_hidden_size", {32, 64}), loguniform("learning_rate", 1e-4, 1e-1),
           steps_500_1000, choice("batch_size", {16, 32}), randint("random_seed", 1, 20)},
          false}},
        // DilatedRNN's; context_size (read by nothing) left out.
        {"dilated_rnn",
         {{-1, 4, 16, 64},
          {choice("cell_type", {"LSTM", "GRU"}), choice("encoder_hidden_size", {16, 32, 64, 128}),
           choice("dilations", json::array({json::array({json::array({1, 2}), json::array({4, 8})}),
                                            json::array({json::array({1, 2, 4, 8})})})),
           choice("decoder_hidden_size", {16, 32, 64, 128}),
           loguniform("learning_rate", 1e-4, 1e-1), steps_500_1000, choice("batch_size", {16, 32}),
           randint("random_seed", 1, 20)},
          false}},
        // BiTCN's, in neuralforecast's order; no step_size.
        {"bitcn",
         {five,
          {choice("hidden_size", {16, 32}), uniform("dropout", 0.0, 0.99),
           loguniform("learning_rate", 1e-4, 1e-1),
           choice("scaler_type", {"identity", "robust", "standard"}),
           choice("max_steps", {500, 1000, 2000}), choice("batch_size", {32, 64, 128, 256}),
           choice("windows_batch_size", {128, 256, 512, 1024}), randint("random_seed", 1, 20)},
          false}},
        {"patchtst",
         {{1, 2, 3},
          {choice("hidden_size", {16, 128, 256}), choice("n_heads", {4, 16}),
           choice("patch_len", {16, 24}), loguniform("learning_rate", 1e-4, 1e-1),
           choice("scaler_type", {"identity", "robust", "standard"}),
           choice("revin", {false, true}), choice("max_steps", {500, 1000, 5000}),
           choice("batch_size", {32, 64, 128, 256}),
           choice("windows_batch_size", {128, 256, 512, 1024}), randint("random_seed", 1, 20)},
          false}},
        {"vanilla_transformer",
         {five,
          {choice("hidden_size", {64, 128, 256}), choice("n_head", {4, 8}),
           loguniform("learning_rate", 1e-4, 1e-1),
           choice("scaler_type", {"identity", "robust", "standard"}),
           choice("max_steps", {500, 1000, 2000}), choice("batch_size", {32, 64, 128, 256}),
           choice("windows_batch_size", {128, 256, 512, 1024}), randint("random_seed", 1, 20)},
          false}},
        {"mlp",
         {five, join({choice("hidden_size", {256, 512, 1024}), randint("num_layers", 2, 6)},
                     join(common(1e-4, 1e-1, true), {steps_500_1000}))}},
        {"nbeats", {five, join(common(1e-4, 1e-1, true), {steps_500_1000})}},
        {"nbeatsx", {five, join(common(1e-4, 1e-1, true), {steps_500_1000})}},
        {"nhits",
         {five, join({choice("n_pool_kernel_size",
                             json::array({json::array({2, 2, 1}), json::array({1, 1, 1}),
                                          json::array({2, 2, 2}), json::array({4, 4, 4}),
                                          json::array({8, 4, 1}), json::array({16, 8, 1})})),
                      choice("n_freq_downsample",
                             json::array({json::array({168, 24, 1}), json::array({24, 12, 1}),
                                          json::array({180, 60, 1}), json::array({60, 8, 1}),
                                          json::array({40, 20, 1}), json::array({1, 1, 1})}))},
                     join(common(1e-4, 1e-1, true), {steps_q}))}},
        {"dlinear",
         {five, join({choice("moving_avg_window", {11, 25, 51})},
                     join(common(1e-4, 1e-1, true), {steps_q}))}},
        {"nlinear", {five, join(common(1e-4, 1e-1, true), {steps_q})}},
        {"tide",
         {five,
          join({choice("hidden_size", {256, 512, 1024}), choice("decoder_output_dim", {8, 16, 32}),
                choice("temporal_decoder_dim", {32, 64, 128}),
                choice("num_encoder_layers", {1, 2, 3}), choice("num_decoder_layers", {1, 2, 3}),
                choice("temporal_width", {4, 8, 16}), choice("dropout", {0.0, 0.1, 0.2, 0.3, 0.5}),
                choice("layernorm", {true, false})},
               join(common(1e-5, 1e-2, true), {steps_q}))}},
        {"tsmixer", {{1, 2, 3, 4}, mixer}},
        {"tsmixerx", {{1, 2, 3, 4}, mixer}},
        {"mlp_multivariate",
         {five, join({choice("hidden_size", {256, 512, 1024}), randint("num_layers", 2, 6)},
                     join(common(1e-4, 1e-1, false), {steps_500_1000}))}},
        {"itransformer",
         {five,
          {choice("hidden_size", {64, 128, 256}), choice("n_heads", {4, 8}),
           loguniform("learning_rate", 1e-4, 1e-1),
           choice("scaler_type", {"identity", "robust", "standard"}),
           choice("max_steps", {500, 1000, 2000}), choice("batch_size", {32, 64, 128, 256}),
           randint("random_seed", 1, 20)}}},
    };
    return m;
  }();
  return *t;
}

}  // namespace

std::string_view space_kind_name(SpaceKind kind) {
  switch (kind) {
    case SpaceKind::kChoice:
      return "choice";
    case SpaceKind::kRandInt:
      return "randint";
    case SpaceKind::kUniform:
      return "uniform";
    case SpaceKind::kLogUniform:
      return "loguniform";
    case SpaceKind::kQUniform:
      return "quniform";
  }
  return "choice";
}

SearchSpace default_search_space(std::string_view model, Index h) {
  const auto it = table().find(model);
  if (it == table().end()) return {};
  json sizes = json::array();
  for (const int k : it->second.input_multiples) sizes.push_back(h * k);
  SearchSpace s = {choice("input_size", sizes)};
  if (it->second.step_size) s.push_back(choice("step_size", {Index(1), h}));
  return join(s, it->second.own);
}

json draw(const SearchSpace& space, std::mt19937_64& rng) {
  json out = json::object();
  for (const SearchDimension& d : space) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    switch (d.kind) {
      case SpaceKind::kChoice: {
        SHOAL_CHECK(!d.choices.empty(), "search dimension '{}' has no choices", d.key);
        std::uniform_int_distribution<size_t> pick(0, d.choices.size() - 1);
        out[d.key] = d.choices[pick(rng)];
        break;
      }
      case SpaceKind::kRandInt: {
        std::uniform_int_distribution<int64_t> pick(int64_t(d.lower), int64_t(d.upper) - 1);
        out[d.key] = pick(rng);
        break;
      }
      case SpaceKind::kUniform:
        out[d.key] = d.lower + (d.upper - d.lower) * unit(rng);
        break;
      case SpaceKind::kLogUniform:
        out[d.key] =
            std::exp(std::log(d.lower) + (std::log(d.upper) - std::log(d.lower)) * unit(rng));
        break;
      case SpaceKind::kQUniform: {
        const double v = std::round((d.lower + (d.upper - d.lower) * unit(rng)) / d.q) * d.q;
        // Integral steps (max_steps in hundreds) stay integers for the integer options.
        if (d.q == std::floor(d.q))
          out[d.key] = int64_t(v);
        else
          out[d.key] = v;
        break;
      }
    }
  }
  return out;
}

}  // namespace shoal::train
