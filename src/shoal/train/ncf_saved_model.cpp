#include "shoal/train/ncf_saved_model.h"

#include <nlohmann/json.hpp>

#include "shoal/core/model_folder.h"
#include "shoal/train/safetensors.h"

namespace shoal::train {
namespace {

constexpr const char* kFormat = kNcfFormat;
constexpr int kVersion = 1;
const char* const kFiles[] = {"weights.safetensors", "state.safetensors", "users.json",
                              "items.json"};

std::string ids_json(const data::IdMap& m) {
  nlohmann::json ids = nlohmann::json::array();
  if (m.integers())
    for (int64_t v : m.integer_ids()) ids.push_back(v);
  else
    for (const auto& s : m.string_ids()) ids.push_back(s);
  return nlohmann::json{{"ids", ids}}.dump();
}

data::IdMap ids_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  const nlohmann::json& ids = j.at("ids");
  SHOAL_CHECK(ids.is_array(), "ids must be a list");
  bool integers = true;
  for (const auto& v : ids) integers = integers && v.is_number_integer();
  if (integers) return data::IdMap::of_integers(ids.get<std::vector<int64_t>>());
  std::vector<std::string> s;
  for (const auto& v : ids) {
    SHOAL_CHECK(v.is_string() || v.is_number_integer(), "an id must be an integer or a string");
    s.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  }
  return data::IdMap::of_strings(std::move(s));
}

}  // namespace

models::Ncf<float>::Config NcfSavedModel::model_config() const {
  return options.model(num_users(), num_items(), static_cast<Index>(context_cols.size()));
}

void seen_items_of(const data::NcfPositives& train, std::vector<int64_t>& offsets,
                   std::vector<int32_t>& items) {
  offsets.assign(static_cast<size_t>(train.num_users) + 1, 0);
  for (int32_t u : train.users) ++offsets[static_cast<size_t>(u) + 1];
  for (size_t u = 1; u < offsets.size(); ++u) offsets[u] += offsets[u - 1];
  items.resize(train.users.size());
  std::vector<int64_t> next(offsets.begin(), offsets.end() - 1);
  for (size_t r = 0; r < train.users.size(); ++r)
    items[static_cast<size_t>(next[static_cast<size_t>(train.users[r])]++)] = train.items[r];
}

nlohmann::ordered_json ncf_settings(const NcfSavedModel& m) {
  const NcfOptions& o = m.options;
  return {{"model", o.kind},
          {"factors", o.factors},
          {"layers", o.layers},
          {"epochs", o.epochs},
          {"batch_size", o.batch_size},
          {"num_negatives", o.num_negatives},
          {"learning_rate", o.learning_rate},
          {"seed", m.seed},
          {"threads", m.threads},
          {"user_col", m.user_col},
          {"item_col", m.item_col},
          {"context_cols", m.context_cols},
          {"on_unknown", m.on_unknown}};
}

void save_ncf_model(const std::string& dir, const NcfSavedModel& m, std::string_view what) {
  const Index u = m.num_users(), c = static_cast<Index>(m.context_cols.size());
  SHOAL_CHECK(static_cast<Index>(m.seen_offsets.size()) == u + 1, "seen offsets: {} for {} users",
              m.seen_offsets.size(), u);
  SHOAL_CHECK(static_cast<Index>(m.user_context.size()) == u * c,
              "user context: {} values for [{}, {}]", m.user_context.size(), u, c);
  std::vector<TensorRef> state = {
      {.name = "seen_offsets", .shape = {u + 1}, .i64 = m.seen_offsets.data()},
      {.name = "seen_items",
       .shape = {static_cast<Index>(m.seen_items.size())},
       .i32 = m.seen_items.data()}};
  if (c > 0)
    state.push_back({.name = "user_context", .shape = {u, c}, .data = m.user_context.data()});
  const std::string files[] = {m.weights, encode_safetensors(state), ids_json(m.users),
                               ids_json(m.items)};
  const nlohmann::ordered_json fields = {{"settings", ncf_settings(m)},
                                         {"num_users", u},
                                         {"num_items", m.num_items()},
                                         {"losses", m.losses}};
  FolderFiles out;
  for (size_t i = 0; i < std::size(kFiles); ++i) out.emplace_back(kFiles[i], files[i]);
  write_model_folder(dir, kFormat, kVersion, fields, out, what);
}

NcfSavedModel load_ncf_model(const std::string& dir) {
  const int versions[] = {kVersion};
  const ModelFolder folder = read_model_folder(dir, kFormat, versions);
  const nlohmann::json& meta = folder.manifest;
  try {
    std::string bytes[std::size(kFiles)];
    for (size_t i = 0; i < std::size(kFiles); ++i) bytes[i] = model_file(folder, dir, kFiles[i]);
    NcfSavedModel m;
    const nlohmann::json& s = meta.at("settings");
    m.options.kind = s.at("model").get<std::string>();
    m.options.factors = s.at("factors").get<int64_t>();
    m.options.layers = s.at("layers").get<std::vector<int64_t>>();
    m.options.epochs = s.value("epochs", m.options.epochs);
    m.options.batch_size = s.value("batch_size", m.options.batch_size);
    m.options.num_negatives = s.value("num_negatives", m.options.num_negatives);
    m.options.learning_rate = s.value("learning_rate", m.options.learning_rate);
    m.options.validate();
    m.seed = s.value("seed", uint64_t{1});
    m.context_cols = s.value("context_cols", std::vector<std::string>{});
    m.threads = s.value("threads", 0);
    m.user_col = s.value("user_col", m.user_col);
    m.item_col = s.value("item_col", m.item_col);
    m.on_unknown = s.value("on_unknown", m.on_unknown);
    m.losses = meta.value("losses", std::vector<double>{});
    m.weights = std::move(bytes[0]);
    m.users = ids_from_json(bytes[2]);
    m.items = ids_from_json(bytes[3]);
    if (m.num_users() != meta.at("num_users").get<Index>() ||
        m.num_items() != meta.at("num_items").get<Index>())
      model_folder_damaged(dir, "the id maps disagree with model.json's counts");
    const SafetensorsFile st = decode_safetensors(bytes[1], "state.safetensors");
    const LoadedTensor* off = st.find("seen_offsets");
    const LoadedTensor* items = st.find("seen_items");
    if (off == nullptr || items == nullptr || !off->integer || !items->integer)
      model_folder_damaged(dir, "state.safetensors lacks the integer seen_offsets / seen_items");
    m.seen_offsets = off->ints;
    m.seen_items.assign(items->ints.begin(), items->ints.end());
    const auto n_items = static_cast<int64_t>(m.seen_items.size());
    bool ok = static_cast<Index>(m.seen_offsets.size()) == m.num_users() + 1 &&
              m.seen_offsets.front() == 0 && m.seen_offsets.back() == n_items;
    for (size_t i = 1; ok && i < m.seen_offsets.size(); ++i)
      ok = m.seen_offsets[i - 1] <= m.seen_offsets[i];
    for (int32_t it : m.seen_items) ok = ok && it >= 0 && it < m.num_items();
    if (!ok)
      model_folder_damaged(dir, "the users' training items (state.safetensors) are inconsistent");
    const auto c = static_cast<Index>(m.context_cols.size());
    if (c > 0) {
      const LoadedTensor* ctx = st.find("user_context");
      if (ctx == nullptr || ctx->integer || !(ctx->shape == Shape{m.num_users(), c}))
        model_folder_damaged(
            dir, fmt::format("state.safetensors lacks user_context [{}, {}]", m.num_users(), c));
      m.user_context = ctx->data;
    }
    return m;
  } catch (const nlohmann::json::exception& e) {
    model_folder_damaged(dir, fmt::format("model.json: {}", e.what()));
  } catch (const Error& e) {
    if (std::string_view(e.what()).starts_with("cannot load the model at")) throw;
    model_folder_damaged(dir, e.what());
  }
}

}  // namespace shoal::train
