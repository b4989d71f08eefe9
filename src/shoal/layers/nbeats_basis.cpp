#include "shoal/layers/nbeats_basis.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "shoal/kernels/gemm.h"

namespace shoal::layers {

using kernels::Trans;

TrendBasis parse_trend_basis(const std::string& name) {
  for (size_t i = 0; i < std::size(kTrendBases); ++i)
    if (name == kTrendBases[i]) return static_cast<TrendBasis>(i);
  throw Error(
      "basis must be one of polynomial, legendre, changepoint, piecewise_linear, "
      "linear_hat, chebyshev, got '" +
      name + "'");
}

namespace {

// a·b rounded on its own: numpy never fuses a multiply into the following add, and the compiler
// would (-ffp-contract=fast with FMA), moving values off numpy's by an ulp (T₂ at 0 by 6e-17).
double mul(double a, double b) {
  volatile double p = a * b;
  return p;
}

// numpy's linspace(start, stop, num): start + j·step, the last point exactly stop.
std::vector<double> linspace(double start, double stop, Index num) {
  std::vector<double> x(static_cast<size_t>(num));
  const double step = num > 1 ? (stop - start) / static_cast<double>(num - 1) : 0.0;
  for (Index j = 0; j < num; ++j) x[size_t(j)] = mul(static_cast<double>(j), step) + start;
  if (num > 1) x.back() = stop;
  return x;
}

// numpy's legval / chebval of the basis series c = eᵢ (Clenshaw, in its operation order).
double legendre(Index i, double x) {
  if (i == 0) return 1.0;
  if (i == 1) return x;
  const Index n = i + 1;  // len(c)
  double c0 = 0.0, c1 = 1.0;
  Index nd = n;
  for (Index k = 3; k <= n; ++k) {
    const double tmp = c0;
    nd -= 1;
    const double d = static_cast<double>(nd);
    c0 = 0.0 - mul(c1, static_cast<double>(nd - 1) / d);
    c1 = tmp + mul(mul(c1, x), static_cast<double>(2 * nd - 1) / d);
  }
  return c0 + mul(c1, x);
}

double chebyshev(Index i, double x) {
  if (i == 0) return 1.0;
  if (i == 1) return x;
  const double x2 = 2 * x;
  double c0 = 0.0, c1 = 1.0;
  for (Index k = 3; k <= i + 1; ++k) {
    const double tmp = c0;
    c0 = 0.0 - c1;
    c1 = tmp + mul(c1, x2);
  }
  return c0 + mul(c1, x);
}

}  // namespace

std::vector<double> trend_basis(Index length, Index n_polynomials, TrendBasis kind) {
  const Index P = n_polynomials + 1;
  std::vector<double> b(static_cast<size_t>(P * length), 0.0);
  auto at = [&](Index i, Index t) -> double& { return b[static_cast<size_t>(i * length + t)]; };
  switch (kind) {
    case TrendBasis::kPolynomial:
      for (Index i = 0; i < P; ++i)
        for (Index t = 0; t < length; ++t)
          at(i, t) = std::pow(static_cast<double>(t) / static_cast<double>(length),
                              static_cast<double>(i));
      break;
    case TrendBasis::kLegendre:
    case TrendBasis::kChebyshev: {
      const auto x = linspace(-1, 1, length);
      for (Index i = 0; i < P; ++i)
        for (Index t = 0; t < length; ++t)
          at(i, t) = kind == TrendBasis::kLegendre ? legendre(i, x[size_t(t)])
                                                   : chebyshev(i, x[size_t(t)]);
      break;
    }
    case TrendBasis::kChangepoint: {
      const auto x = linspace(0, 1, length), c = linspace(0, 1, P + 1);
      for (Index i = 0; i < P; ++i)
        for (Index t = 0; t < length; ++t)
          at(i, t) = std::max(0.0, x[size_t(t)] - c[size_t(i + 1)]);
      break;
    }
    case TrendBasis::kPiecewiseLinear: {
      const auto x = linspace(0, 1, length), k = linspace(0, 1, P + 1);
      for (Index i = 1; i < P; ++i)
        for (Index t = 0; t < length; ++t) {
          const double up = (x[size_t(t)] - k[size_t(i - 1)]) / (k[size_t(i)] - k[size_t(i - 1)]);
          const double down = (k[size_t(i + 1)] - x[size_t(t)]) / (k[size_t(i + 1)] - k[size_t(i)]);
          at(i, t) = std::max(0.0, std::min(up, down));
        }
      break;
    }
    case TrendBasis::kLinearHat: {
      SHOAL_CHECK(P >= 2, "the linear_hat basis needs n_basis >= 1, got {}", n_polynomials);
      const auto x = linspace(0, 1, length), c = linspace(0, 1, P);
      const double width = 1.0 / static_cast<double>(P - 1);
      for (Index i = 0; i < P; ++i)
        for (Index t = 0; t < length; ++t)
          at(i, t) = std::max(0.0, 1.0 - std::abs(x[size_t(t)] - c[size_t(i)]) / width);
      break;
    }
  }
  // torch keeps the bases as float32.
  for (double& v : b) v = static_cast<float>(v);
  return b;
}

Index seasonality_frequencies(Index n_harmonics, Index h) {
  // numpy's arange(n, n / 2 · h) has ⌈n·h/2 − n⌉ elements (none when negative), plus f = 0.
  const double n = static_cast<double>(n_harmonics);
  const double count = std::ceil(n / 2 * static_cast<double>(h) - n);
  return 1 + std::max<Index>(0, static_cast<Index>(count));
}

std::vector<double> seasonality_basis(Index length, Index h, Index n_harmonics, bool backcast) {
  const Index F = seasonality_frequencies(n_harmonics, h);
  const double n = static_cast<double>(n_harmonics);
  const double two_pi = (backcast ? -2.0 : 2.0) * std::numbers::pi;
  std::vector<double> b(static_cast<size_t>(2 * F * length));
  for (Index f = 0; f < F; ++f) {
    const double freq = f == 0 ? 0.0 : (n + static_cast<double>(f - 1)) / n;
    for (Index t = 0; t < length; ++t) {
      // numpy's order: (±2π · (t / h)) · f.
      const double g = two_pi * (static_cast<double>(t) / static_cast<double>(h)) * freq;
      b[static_cast<size_t>(f * length + t)] = static_cast<float>(std::cos(g));
      b[static_cast<size_t>((F + f) * length + t)] = static_cast<float>(std::sin(g));
    }
  }
  return b;
}

template <class T>
Index BasisExpansion<T>::n_basis() const {
  switch (cfg.kind) {
    case BasisKind::kIdentity:
      return 0;
    case BasisKind::kTrend:
      return cfg.n_polynomials + 1;
    case BasisKind::kSeasonality:
      return 2 * seasonality_frequencies(cfg.n_harmonics, cfg.h);
  }
  return 0;
}

template <class T>
Index BasisExpansion<T>::theta_size() const {
  return cfg.kind == BasisKind::kIdentity ? cfg.input_size + cfg.outputs * cfg.h
                                          : (cfg.outputs + 1) * n_basis();
}

template <class T>
void BasisExpansion<T>::plan(Planner& planner, Index) {
  SHOAL_CHECK(cfg.input_size > 0 && cfg.h > 0 && cfg.outputs > 0,
              "basis needs input_size, h and outputs > 0, got {}, {}, {}", cfg.input_size, cfg.h,
              cfg.outputs);
  SHOAL_CHECK(cfg.kind != BasisKind::kTrend || cfg.n_polynomials >= 0,
              "trend basis needs n_polynomials >= 0, got {}", cfg.n_polynomials);
  SHOAL_CHECK(cfg.kind != BasisKind::kSeasonality || cfg.n_harmonics > 0,
              "seasonality basis needs n_harmonics > 0, got {}", cfg.n_harmonics);
  if (cfg.kind == BasisKind::kIdentity) return;
  const Index P = n_basis();
  planner.buffer(backcast_basis, Region::kState, "backcast_basis", {P, cfg.input_size});
  planner.buffer(forecast_basis, Region::kState, "forecast_basis", {P, cfg.h});
}

template <class T>
void BasisExpansion<T>::init(RngStream&) {
  if (cfg.kind == BasisKind::kIdentity) return;
  const bool trend = cfg.kind == BasisKind::kTrend;
  const auto bb = trend ? trend_basis(cfg.input_size, cfg.n_polynomials, cfg.trend)
                        : seasonality_basis(cfg.input_size, cfg.h, cfg.n_harmonics, true);
  const auto bf = trend ? trend_basis(cfg.h, cfg.n_polynomials, cfg.trend)
                        : seasonality_basis(cfg.h, cfg.h, cfg.n_harmonics, false);
  std::transform(bb.begin(), bb.end(), backcast_basis.view.data,
                 [](double v) { return static_cast<T>(v); });
  std::transform(bf.begin(), bf.end(), forecast_basis.view.data,
                 [](double v) { return static_cast<T>(v); });
}

namespace {

template <class T>
void copy_rows(ConstMat<T> x, MatView<T> y) {
  for (Index r = 0; r < x.rows; ++r) std::copy(x.row(r), x.row(r) + x.cols, y.row(r));
}

}  // namespace

template <class T>
void BasisExpansion<T>::forward(const Ctx&, ConstMat<T> theta, MatView<T> backcast,
                                MatView<T> forecast) {
  const Index N = theta.rows, L = cfg.input_size, H = cfg.h, Q = cfg.outputs;
  SHOAL_DCHECK(theta.cols == theta_size() && backcast.rows == N && backcast.cols == L &&
               forecast.rows == N && forecast.cols == H * Q);
  if (cfg.kind == BasisKind::kIdentity) {
    copy_rows<T>(theta.cols_block(0, L), backcast);
    copy_rows<T>(theta.cols_block(L, H * Q), forecast);
    return;
  }
  if (N == 0) return;
  const Index P = n_basis();
  const T* bb = backcast_basis.view.data;
  const T* bf = forecast_basis.view.data;
  kernels::gemm<T>(Trans::kNo, Trans::kNo, N, L, P, T(1), theta.data, theta.ld, bb, L, T(0),
                   backcast.data, backcast.ld);
  if (Q == 1) {
    kernels::gemm<T>(Trans::kNo, Trans::kNo, N, H, P, T(1), theta.data + P, theta.ld, bf, H, T(0),
                     forecast.data, forecast.ld);
    return;
  }
  // Per row: y_n [H, Q] = B_fᵀ [H, P] · Θ_n [P, Q].
  for (Index n = 0; n < N; ++n)
    kernels::gemm<T>(Trans::kYes, Trans::kNo, H, Q, P, T(1), bf, H, theta.row(n) + P, Q, T(0),
                     forecast.row(n), Q);
}

template <class T>
void BasisExpansion<T>::backward(const Ctx&, ConstMat<T> dbackcast, ConstMat<T> dforecast,
                                 MatView<T> dtheta) {
  const Index N = dtheta.rows, L = cfg.input_size, H = cfg.h, Q = cfg.outputs;
  SHOAL_DCHECK(dtheta.cols == theta_size() && dbackcast.rows == N && dbackcast.cols == L &&
               dforecast.rows == N && dforecast.cols == H * Q);
  if (cfg.kind == BasisKind::kIdentity) {
    copy_rows<T>(dbackcast, dtheta.cols_block(0, L));
    copy_rows<T>(dforecast, dtheta.cols_block(L, H * Q));
    return;
  }
  if (N == 0) return;
  const Index P = n_basis();
  const T* bb = backcast_basis.view.data;
  const T* bf = forecast_basis.view.data;
  kernels::gemm<T>(Trans::kNo, Trans::kYes, N, P, L, T(1), dbackcast.data, dbackcast.ld, bb, L,
                   T(0), dtheta.data, dtheta.ld);
  if (Q == 1) {
    kernels::gemm<T>(Trans::kNo, Trans::kYes, N, P, H, T(1), dforecast.data, dforecast.ld, bf, H,
                     T(0), dtheta.data + P, dtheta.ld);
    return;
  }
  // Per row: dΘ_n [P, Q] = B_f [P, H] · dY_n [H, Q].
  for (Index n = 0; n < N; ++n)
    kernels::gemm<T>(Trans::kNo, Trans::kNo, P, Q, H, T(1), bf, H, dforecast.row(n), Q, T(0),
                     dtheta.row(n) + P, Q);
}

template <class T>
profile::Cost BasisExpansion<T>::forward_cost(double rows) const {
  const double L = double(cfg.input_size), H = double(cfg.h), Q = double(cfg.outputs);
  const double S = double(theta_size()), P = double(n_basis());
  if (cfg.kind == BasisKind::kIdentity) return {0, 2 * sizeof(T) * rows * S};
  return {2 * rows * P * (L + H * Q), sizeof(T) * (rows * (S + L + H * Q) + P * (L + H))};
}

template <class T>
profile::Cost BasisExpansion<T>::backward_cost(double rows) const {
  return forward_cost(rows);  // the transposed products: the same multiply-adds and traffic
}

template <class T>
void ExogenousBasis<T>::plan(Planner&, Index) {
  SHOAL_CHECK(cfg.input_size > 0 && cfg.h > 0 && cfg.channels > 0,
              "ExogenousBasis needs input_size, h and channels > 0, got {}, {}, {}", cfg.input_size,
              cfg.h, cfg.channels);
}

template <class T>
void ExogenousBasis<T>::forward(const Ctx&, ConstMat<T> theta, ConstMat<T> x, MatView<T> backcast,
                                MatView<T> forecast) {
  const Index L = cfg.input_size, H = cfg.h, C = cfg.channels;
  SHOAL_DCHECK(theta.cols == 2 * C && x.cols == (L + H) * C && backcast.cols == L &&
               forecast.cols == H && theta.rows == x.rows);
  for (Index n = 0; n < theta.rows; ++n) {
    const T* th = theta.row(n);
    const T* xr = x.row(n);
    for (Index t = 0; t < L + H; ++t) {
      const T* w = t < L ? th + C : th;
      const T* xt = xr + t * C;
      T s = 0;
      for (Index c = 0; c < C; ++c) s += w[c] * xt[c];
      if (t < L)
        backcast.row(n)[t] = s;
      else
        forecast.row(n)[t - L] = s;
    }
  }
}

template <class T>
void ExogenousBasis<T>::backward(const Ctx&, ConstMat<T> theta, ConstMat<T> x,
                                 ConstMat<T> dbackcast, ConstMat<T> dforecast, MatView<T> dtheta,
                                 MatView<T> dx) {
  const Index L = cfg.input_size, H = cfg.h, C = cfg.channels;
  SHOAL_DCHECK(dtheta.cols == 2 * C && x.cols == (L + H) * C && dbackcast.cols == L &&
               dforecast.cols == H && dtheta.rows == x.rows);
  for (Index n = 0; n < dtheta.rows; ++n) {
    const T* th = theta.row(n);
    const T* xr = x.row(n);
    T* dth = dtheta.row(n);
    std::fill(dth, dth + 2 * C, T(0));
    for (Index t = 0; t < L + H; ++t) {
      const T g = t < L ? dbackcast.row(n)[t] : dforecast.row(n)[t - L];
      const Index off = t < L ? C : 0;
      const T* xt = xr + t * C;
      for (Index c = 0; c < C; ++c) dth[off + c] += g * xt[c];
      if (dx.data != nullptr) {
        T* dxt = dx.row(n) + t * C;
        for (Index c = 0; c < C; ++c) dxt[c] = g * th[off + c];
      }
    }
  }
}

template struct BasisExpansion<float>;
template struct BasisExpansion<double>;
template struct ExogenousBasis<float>;
template struct ExogenousBasis<double>;

}  // namespace shoal::layers
