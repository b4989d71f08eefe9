// NBEATS / NBEATSx basis expansions: a block's MLP outputs θ [N, S] and the basis turns it into
// the backcast [N, L] (subtracted from the block's input) and the forecast [N, H·Q] (torch's
// [B, H, Q] flattened: element h·Q + q). Legend: N rows (windows), L input_size, H horizon,
// Q outputs per step (loss.outputsize_multiplier), P basis functions, C exogenous channels.
//
//   identity      S = L + Q·H     backcast = θ[:, :L],  forecast = θ[:, L:]
//   trend         S = (Q+1)·P     P = n_basis + 1 polynomials (t / T)^i, i < P, t < T
//   seasonality   S = (Q+1)·P     P = 2F: cos then sin of 2π·(t / H)·f (backcast: −2π) for the
//                                 F frequencies f ∈ {0} ∪ {(n + j) / n : n + j < n·H/2}, n the
//                                 harmonics (numpy's arange(n, n/2·H) / n)
//   trend and seasonality: backcast = θ[:, :P] · B_b,  forecast[n, t, q] = Σ_p θ[n, P + p·Q + q]
//   · B_f[p, t]  (B_b [P, L], B_f [P, H]: torch's einsums "bp,pt->bt" and "bpq,pt->btq").
//
// The basis matrices are fixed, built in double as numpy builds them and rounded to float (torch
// keeps them as float32 buffers), then held in T in the arena's state region; init() fills them.
// Backward: dθ = [dbackcast · B_bᵀ | per row dforecast · B_fᵀ], overwritten. The identity basis
// copies, so that a model may treat all three alike; a model that wants no copy can use
// θ's column blocks directly (layers/README.md, concat and split).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/rng.h"
#include "shoal/profile/cost.h"

namespace shoal::layers {

enum class BasisKind : uint8_t { kIdentity, kTrend, kSeasonality };

// NBEATS's trend bases (its `basis` argument; NBEATSx has polynomial only). 'spline' (scipy's
// BSpline) is not offered.
enum class TrendBasis : uint8_t {
  kPolynomial,
  kLegendre,
  kChangepoint,
  kPiecewiseLinear,
  kLinearHat,
  kChebyshev
};
inline constexpr std::string_view kTrendBases[] = {"polynomial",       "legendre",   "changepoint",
                                                   "piecewise_linear", "linear_hat", "chebyshev"};
// Throws Error naming the choices when `name` is not one of them.
TrendBasis parse_trend_basis(const std::string& name);

// [P, length] row-major, P = n_polynomials + 1 functions of t < length, as numpy builds them
// (neuralforecast's get_basis(length, n_basis, basis) transposed, n_basis = n_polynomials):
//   polynomial        (t / length)^i
//   legendre          Pᵢ(x), x = linspace(−1, 1, length) (numpy's Clenshaw recursion)
//   chebyshev         Tᵢ(x), the same x
//   changepoint       max(0, x − cᵢ), x = linspace(0, 1, length), c = linspace(0, 1, P + 1)[1:]
//   piecewise_linear  hats on the knots linspace(0, 1, P + 1); row 0 is zero
//   linear_hat        max(0, 1 − |x − cᵢ| / w), c = linspace(0, 1, P), w = 1 / (P − 1) (P ≥ 2)
std::vector<double> trend_basis(Index length, Index n_polynomials,
                                TrendBasis kind = TrendBasis::kPolynomial);
// The number F of seasonality frequencies for n_harmonics and horizon h (P = 2F); equals
// neuralforecast's int(ceil(n_harmonics / 2 * h) - (n_harmonics - 1)).
Index seasonality_frequencies(Index n_harmonics, Index h);
// [2F, length]: cos rows then sin rows of sign·2π·(t / h)·f, sign −1 for the backcast.
std::vector<double> seasonality_basis(Index length, Index h, Index n_harmonics, bool backcast);

template <class T>
struct BasisExpansion {
  struct Config {
    BasisKind kind = BasisKind::kIdentity;
    Index input_size = 0;     // L
    Index h = 0;              // H
    Index n_polynomials = 2;  // trend: P = n_polynomials + 1 (NBEATS's n_basis)
    TrendBasis trend = TrendBasis::kPolynomial;
    Index n_harmonics = 2;  // seasonality
    Index outputs = 1;      // Q
  };
  struct Params {};

  Config cfg;
  Params p;
  Buffer<T> backcast_basis;  // [P, L] (trend, seasonality)
  Buffer<T> forecast_basis;  // [P, H]

  explicit BasisExpansion(Config c) : cfg(c) {}

  Index n_basis() const;     // P (identity: 0)
  Index theta_size() const;  // S

  template <class F>
  void for_each_param(F&&) {}
  void plan(Planner& planner, Index max_rows);
  void init(RngStream& rng);  // builds the fixed bases; draws nothing
  // theta [N, S], backcast [N, L], forecast [N, H·Q].
  void forward(const Ctx& ctx, ConstMat<T> theta, MatView<T> backcast, MatView<T> forecast);
  // dtheta [N, S] overwritten.
  void backward(const Ctx& ctx, ConstMat<T> dbackcast, ConstMat<T> dforecast, MatView<T> dtheta);

  profile::Cost forward_cost(double rows) const;
  profile::Cost backward_cost(double rows) const;
};

// NBEATSx's ExogenousBasis: the block's θ [N, 2C] weighs the C exogenous channels of its window,
// x [N, (L+H)·C] (torch's [B, L+H, C] flattened, element t·C + c):
//   forecast[n, t] = Σ_c θ[n, c] · x[n, (L + t)·C + c]       (t < H)
//   backcast[n, t] = Σ_c θ[n, C + c] · x[n, t·C + c]         (t < L)
// (neuralforecast puts the forecast coefficients first.) Backward: dθ overwritten; dx, when it
// has data, overwritten (the exogenous inputs are data in NBEATSx, so models pass none).
template <class T>
struct ExogenousBasis {
  struct Config {
    Index input_size = 0;  // L
    Index h = 0;           // H
    Index channels = 0;    // C (futr_exog + stat_exog sizes)
  };
  struct Params {};

  Config cfg;
  Params p;

  explicit ExogenousBasis(Config c) : cfg(c) {}

  Index theta_size() const { return 2 * cfg.channels; }

  template <class F>
  void for_each_param(F&&) {}
  void plan(Planner& planner, Index max_rows);
  void init(RngStream&) {}
  void forward(const Ctx& ctx, ConstMat<T> theta, ConstMat<T> x, MatView<T> backcast,
               MatView<T> forecast);
  void backward(const Ctx& ctx, ConstMat<T> theta, ConstMat<T> x, ConstMat<T> dbackcast,
                ConstMat<T> dforecast, MatView<T> dtheta, MatView<T> dx);

  // One multiply-add per (row, step, channel).
  profile::Cost forward_cost(double rows) const {
    const double lh = double(cfg.input_size + cfg.h), c = double(cfg.channels);
    return {2 * rows * lh * c, sizeof(T) * rows * (lh * c + 2 * c + lh)};
  }
  profile::Cost backward_cost(double rows, bool dx = false) const {
    const double lh = double(cfg.input_size + cfg.h), c = double(cfg.channels);
    profile::Cost cost{2 * rows * lh * c, sizeof(T) * rows * (lh * c + 2 * c + lh)};
    if (dx) cost += {rows * lh * c, sizeof(T) * rows * (lh * c + 2 * c + lh)};
    return cost;
  }
};

}  // namespace shoal::layers
