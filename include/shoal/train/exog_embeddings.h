// The categorical exogenous features of a windowed model's inputs: the trainer looks each
// categorical channel of the historical, future and static streams up in a learned table
// (layers/categorical_embedding.h) and hands the model the embedded streams, as neuralforecast's
// BaseModel does before its model's forward (`_create_windows` → `_embed_stream`). The model is
// built for the embedded widths (WindowShape's exogenous counts are the out_channels()) and
// returns ∂L/∂(its exogenous inputs) (models/forecast.h: ExogGrads), through which the tables
// train.
//
// The tables are parameters of the trainer's arena, under neuralforecast's names
// (hist_cat_embeddings.<k>.weight, futr_…, stat_…), so checkpoints, Adam, gradient clipping and
// data-parallel replicas treat them as any other weight. They are initialised before the model,
// in neuralforecast's order (historical, future, static), from the same stream.
#pragma once

#include <algorithm>

#include "shoal/core/arena.h"
#include "shoal/layers/categorical_embedding.h"
#include "shoal/models/forecast.h"

namespace shoal::train {

struct ExogEmbeddingsConfig {
  layers::CategoricalStream hist, futr, stat;
  bool empty() const {
    return hist.columns.empty() && futr.columns.empty() && stat.columns.empty();
  }
};

template <class T>
class ExogEmbeddings {
 public:
  // l input_size, h horizon, n series of the model's windows.
  ExogEmbeddings(const ExogEmbeddingsConfig& cfg, Index l, Index h, Index n)
      : hist_(cfg.hist), futr_(cfg.futr), stat_(cfg.stat), l_(l), h_(h), n_(n) {}

  bool active() const { return !hist_.empty() || !futr_.empty() || !stat_.empty(); }
  // The raw inputs' channels (what the data gives; the model's are the config's out_channels()).
  Index raw_hist() const { return hist_.cfg.channels; }
  Index raw_futr() const { return futr_.cfg.channels; }

  // Buffers for `max_windows` windows (a static stream shared by the series: n rows).
  void plan(Planner& planner, Index max_windows) {
    if (!active()) return;
    auto stream = [&](const char* name, layers::CategoricalEmbedding<T>& layer, Buffer<T>& y,
                      Index rows, Index positions) {
      if (layer.empty()) return;
      planner.push_scope(std::string(name) + "_cat_embeddings.");
      layer.plan(planner);
      planner.pop_scope();
      const Index c = layer.out_channels();
      planner.buffer(y, Region::kActivations, std::string(name) + "_exog_embedded",
                     {rows, c * positions});
    };
    stream("hist", hist_, hist_y_, max_windows, l_ * n_);
    stream("futr", futr_, futr_y_, max_windows, (l_ + h_) * n_);
    stream("stat", stat_, stat_y_, std::max(max_windows, n_), 1);
  }

  void init(RngStream& rng) {
    hist_.init(rng);
    futr_.init(rng);
    stat_.init(rng);
  }

  // The model's inputs for the raw windows `raw`: views into this object's buffers, valid until
  // the next embed.
  models::ForecastInputs<T> embed(const models::ForecastInputs<T>& raw) {
    if (!active()) return raw;
    models::ForecastInputs<T> in = raw;
    if (!hist_.empty()) {
      hist_.forward(raw.hist_exog, raw.batch, l_ * n_, hist_y_.view.data);
      in.hist_exog = hist_y_.view.data;
    }
    if (!futr_.empty()) {
      futr_.forward(raw.futr_exog, raw.batch, (l_ + h_) * n_, futr_y_.view.data);
      in.futr_exog = futr_y_.view.data;
    }
    if (!stat_.empty()) {
      stat_.forward(raw.stat_exog, stat_rows(raw), 1, stat_y_.view.data);
      in.stat_exog = stat_y_.view.data;
      if (raw.stat_window_stride > 0) in.stat_window_stride = stat_.out_channels();
    }
    return in;
  }

  // Adds the tables' gradients of the windows `raw` from the model's exogenous input gradients
  // (its backward on embed(raw)).
  void backward(const models::ForecastInputs<T>& raw, const models::ExogGrads<T>& g) {
    if (!hist_.empty()) hist_.backward(raw.hist_exog, raw.batch, l_ * n_, g.hist);
    if (!futr_.empty()) futr_.backward(raw.futr_exog, raw.batch, (l_ + h_) * n_, g.futr);
    if (!stat_.empty()) stat_.backward(raw.stat_exog, stat_rows(raw), 1, g.stat);
  }

 private:
  // A univariate model's windows each carry their series' static row; a multivariate model's
  // share one row per series.
  Index stat_rows(const models::ForecastInputs<T>& raw) const {
    if (raw.stat_window_stride == 0) return n_;
    SHOAL_CHECK(raw.stat_window_stride == stat_.cfg.channels,
                "static exogenous rows have stride {}, not their {} channels",
                raw.stat_window_stride, stat_.cfg.channels);
    return raw.batch;
  }

  layers::CategoricalEmbedding<T> hist_, futr_, stat_;
  Buffer<T> hist_y_, futr_y_, stat_y_;
  Index l_, h_, n_;
};

}  // namespace shoal::train
