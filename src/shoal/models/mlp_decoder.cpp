#include "shoal/models/mlp_decoder.h"

#include <algorithm>

#include "shoal/models/zones.h"
#include "time_major.h"

namespace shoal::models {

void MlpDecoderOptions::visit_mlp_decoder(OptionVisitor& v) {
  v("decoder_hidden_size", decoder_hidden_size, "Width of the MLP decoder's hidden layers");
  v("decoder_layers", decoder_layers, "Linear layers in the MLP decoder");
  v.choice("decoder_activation", decoder_activation, kDecoderActivations,
           "Activation after each hidden layer of the MLP decoder");
}

void MlpDecoderOptions::validate_mlp_decoder() const {
  if (decoder_layers < 1)
    option_out_of_range("decoder_layers", "an integer ≥ 1", double(decoder_layers));
  if (decoder_layers > 1 && decoder_hidden_size < 1)
    option_out_of_range("decoder_hidden_size", "an integer ≥ 1 when decoder_layers ≥ 2",
                        double(decoder_hidden_size));
}

MlpDecoderConfig MlpDecoderOptions::mlp_decoder_config(const WindowShape& shape,
                                                       Index states) const {
  return {.states = states,
          .futr = shape.futr_exog,
          .hidden = decoder_hidden_size,
          .layers = decoder_layers,
          .outputs = shape.outputs,
          .act = decoder_activation == "ReLU"   ? kernels::Act::kRelu
                 : decoder_activation == "GELU" ? kernels::Act::kGelu
                                                : kernels::Act::kNone,
          .input_size = shape.input_size,
          .h = shape.h};
}

template <class T>
MlpDecoder<T>::MlpDecoder(const Config& cfg) : cfg_(cfg) {
  for (Index k = 0; k < cfg.layers; ++k) {
    const bool last = k + 1 == cfg.layers;
    layers_.push_back(layers::Linear<T>({.in = k == 0 ? cfg.states + cfg.futr : cfg.hidden,
                                         .out = last ? cfg.outputs : cfg.hidden,
                                         .act = last ? kernels::Act::kNone : cfg.act}));
  }
  a_.resize(size_t(cfg.layers - 1));
  da_.resize(a_.size());
}

template <class T>
void MlpDecoder<T>::init(RngStream& rng) {
  for (auto& l : layers_) l.init(rng);
}

template <class T>
void MlpDecoder<T>::plan(Planner& planner, Index max_batch) {
  const Index rows = cfg_.h * max_batch;
  for_each_layer([&](const std::string& prefix, layers::Linear<T>& l) {
    plan_layer(planner, prefix, l, rows);
  });
  if (cfg_.futr > 0) {
    planner.buffer(d_, Region::kActivations, "d", {rows, cfg_.states + cfg_.futr});
    planner.buffer(dd_, Region::kActivationGrads, "dd", {rows, cfg_.states + cfg_.futr});
  }
  for (size_t k = 0; k < a_.size(); ++k) {
    planner.buffer(a_[k], Region::kActivations, "a" + std::to_string(k), {rows, cfg_.hidden});
    planner.buffer(da_[k], Region::kActivationGrads, "da" + std::to_string(k), {rows, cfg_.hidden});
  }
  planner.buffer(o_, Region::kActivations, "o", {rows, cfg_.outputs});
  planner.buffer(do_, Region::kActivationGrads, "do", {rows, cfg_.outputs});
  planner.buffer(out_, Region::kActivations, "out", {max_batch, cfg_.h * cfg_.outputs});
}

template <class T>
MatView<T> MlpDecoder<T>::forward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> u) {
  const Index B = in.batch, H = cfg_.h, M = cfg_.outputs;
  const ConstMat<T> x =
      time_major::decoder_input(in, u.data, cfg_.input_size, H, cfg_.states, cfg_.futr,
                                cfg_.futr > 0 ? d_.mat().rows_block(0, H * B) : MatView<T>{});
  MatView<T> out = out_.mat().rows_block(0, B);
  time_major::to_windows(time_major::decode(ctx, layers_, a_, o_, x), B, H, M, out);
  return MatView<T>(out.data, B * H, M);
}

template <class T>
void MlpDecoder<T>::backward(const Ctx& ctx, const ForecastInputs<T>& in, ConstMat<T> u,
                             ConstMat<T> dout, MatView<T> du) {
  const Index B = in.batch, H = cfg_.h;
  MatView<T> dot = do_.mat().rows_block(0, H * B);
  time_major::to_steps(dout, B, H, cfg_.outputs, dot);
  // With future exogenous values the input gradient has their columns too: into dd, then its
  // states' columns into du.
  const bool futr = cfg_.futr > 0;
  const MatView<T> dx = futr ? dd_.mat().rows_block(0, H * B) : du;
  const ConstMat<T> x = futr ? ConstMat<T>(d_.mat().rows_block(0, H * B)) : u;
  time_major::decode_backward(ctx, layers_, a_, o_, da_, x, dot, dx);
  if (futr)
    for (Index r = 0; r < H * B; ++r) std::copy_n(dx.row(r), cfg_.states, du.row(r));
}

template <class T>
void MlpDecoder<T>::register_zones(profile::Recorder& rec, int model) {
  zones_ = cost_zones(
      rec, model, "mlp_decoder", double(cfg_.h),
      [this](double r) {
        profile::Cost c;
        for (const auto& l : layers_) c += l.forward_cost(r);
        return c;
      },
      [this](double r) {
        profile::Cost c;
        for (const auto& l : layers_) c += l.backward_cost(r, true);
        return c;
      });
}

template class MlpDecoder<float>;
template class MlpDecoder<double>;

}  // namespace shoal::models
