// neuralforecast's DilatedRNN encoder: groups of dilated recurrent layers (its DRNN), each layer
// one PyTorch nn.RNN (tanh) / nn.GRU / nn.LSTM run over every r-th step (its dilation r), and
// from the second group on the group's input added to its output (a residual link):
//   group g: G_g = D_{g,n}(… D_{g,1}(G_{g−1}) …) + [g > 0] G_{g−1}         G_{−1} = x
// A dilated layer with rate r over T steps of B sequences is the plain recurrence over ⌈T/r⌉
// steps of r·B sequences: step τ of sequence j·B + b is step τ·r + j of sequence b. Time-major
// (row t·B + b), that is the same memory: row (τ·r + j)·B + b = τ·(r·B) + j·B + b, so each
// layer is one layers/recurrent.h call on the window's rows, zero-padded to ⌈T/r⌉·r steps
// (neuralforecast pads the same zeros at the end and drops their outputs).
// Parameters per layer l of group g, neuralforecast's names: <g>.cells.<l>.weight_ih_l0,
// weight_hh_l0, bias_ih_l0, bias_hh_l0; init torch's, group after group.
// Legend: T steps, B sequences, I input features, Hd hidden size.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/layers/recurrent.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

template <class T>
struct DilatedRecurrent {
  struct Config {
    RnnCell cell = RnnCell::kLstm;
    Index in = 0;                              // I
    Index hidden = 0;                          // Hd
    std::vector<std::vector<int64_t>> groups;  // each group's dilations, one layer per entry
    Index steps = 0;                           // T: a call's rows are T·B
  };

  Config cfg;

  explicit DilatedRecurrent(Config c);

  template <class F>
  void for_each_param(F&& f) {
    for (size_t i = 0; i < layers_.size(); ++i) {
      const std::string s = name_[i];
      layers_[i]->for_each_param([&](const std::string& n, Param<T>& p) { f(s + n, p); });
    }
  }

  // max_rows: T·B at the largest batch (a multiple of T).
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);
  void forward(const Ctx& ctx, ConstMat<T> x, MatView<T> y);
  // Parameter gradients accumulate; dx must be empty (the encoder's input is data). dy is
  // left as it was.
  void backward(const Ctx& ctx, ConstMat<T> x, ConstMat<T> y, MatView<T> dy, MatView<T> dx);

  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows, bool dx = true) const;

 private:
  Index padded(size_t i) const;  // layer i's steps padded to a multiple of its dilation
  Index in_of(size_t i) const { return i == 0 ? cfg.in : cfg.hidden; }

  std::vector<std::unique_ptr<Recurrent<T>>> layers_;
  std::vector<std::string> name_;
  std::vector<int64_t> rate_;
  std::vector<size_t> group_of_;
  std::vector<size_t> last_;  // each group's last layer
  Index max_padded_ = 0;
  // x padded [P·B, I]; per layer its output h and gradient dh [P·B, Hd]; per group > 0 its
  // output (with the residual) and gradient [P·B, Hd]. P: the longest padded length.
  Buffer<T> xp_;
  std::vector<Buffer<T>> h_, dh_, g_, dg_;
};

}  // namespace shoal::layers
