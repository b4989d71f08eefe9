#include "shoal/models/dilated_rnn.h"

#include <nlohmann/json.hpp>

#include "shoal/core/error.h"

#include "context_forecast_impl.h"

namespace shoal::models {

namespace {

// The cells shoal runs; neuralforecast's ResLSTM and AttentiveLSTM are refused by name.
constexpr std::string_view kCellTypes[] = {"LSTM", "GRU", "RNN"};

}  // namespace

void DilatedRNNConfig::visit(OptionVisitor& v) {
  v.choice("cell_type", cell_type, kCellTypes, "Recurrent cell of every layer");
  v("dilations", dilations,
    "Each group's dilations, one recurrent layer per entry: [[1,2],[4,8]] (or 1,2;4,8)");
  v("encoder_hidden_size", encoder_hidden_size, "Hidden state size of the recurrent layers");
  visit_context_forecast(v);
}

namespace {

constexpr const char* kDilationsExpected =
    "a non-empty list of non-empty lists of integers ≥ 1, e.g. [[1,2],[4,8]]";

[[noreturn]] void bad_dilations(const std::string& text) {
  throw Error("hyper-parameter out of range",
              ErrorContext{.field = "dilations", .expected = kDilationsExpected, .actual = text});
}

}  // namespace

std::vector<std::vector<int64_t>> DilatedRNNConfig::groups() const {
  // The command line's form, groups apart by ';' (CLI11 reads brackets as its own list syntax):
  // "1,2;4,8" is [[1,2],[4,8]].
  std::string text = dilations;
  if (text.find('[') == std::string::npos) {
    std::string json = "[[";
    for (char ch : text) json += ch == ';' ? std::string("],[") : std::string(1, ch);
    text = json + "]]";
  }
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array() || j.empty()) bad_dilations(dilations);
  std::vector<std::vector<int64_t>> out;
  for (const nlohmann::json& g : j) {
    if (!g.is_array() || g.empty()) bad_dilations(dilations);
    out.emplace_back();
    for (const nlohmann::json& d : g) {
      if (!d.is_number_integer() || d.get<int64_t>() < 1) bad_dilations(dilations);
      out.back().push_back(d.get<int64_t>());
    }
  }
  return out;
}

void DilatedRNNConfig::validate_options() const {
  static_cast<void>(groups());
  if (encoder_hidden_size < 1)
    option_out_of_range("encoder_hidden_size", "an integer ≥ 1", double(encoder_hidden_size));
  validate_context_forecast();
}

template class ContextForecast<float, DilatedRNNConfig>;
template class ContextForecast<double, DilatedRNNConfig>;

}  // namespace shoal::models
