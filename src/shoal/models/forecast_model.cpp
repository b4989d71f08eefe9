#include "shoal/models/forecast_model.h"

#include "shoal/core/error.h"

namespace shoal::models {

void take_shape(WindowShape& shape, const ForecastKind& kind, const WindowShape& s) {
  SHOAL_CHECK(kind.multivariate || s.n_series == 1,
              "{} is a univariate model: fit it one series at a time (--n-series 1, series "
              "\"each\", per_series=True), got {} series in one panel",
              kind.name, s.n_series);
  SHOAL_CHECK((kind.hist_exog || s.hist_exog == 0) && (kind.futr_exog || s.futr_exog == 0) &&
                  (kind.stat_exog || s.stat_exog == 0),
              "{} takes {} (got {} hist, {} futr, {} static)", kind.name,
              kind.hist_exog || kind.futr_exog || kind.stat_exog
                  ? "not all of these exogenous inputs"
                  : "no exogenous inputs",
              s.hist_exog, s.futr_exog, s.stat_exog);
  shape = s;
}

void check_outputs(const WindowShape& s, const ForecastKind& kind) {
  SHOAL_CHECK(s.outputs >= 1, "{}: outputs per forecast value must be >= 1, got {}", kind.name,
              s.outputs);
}

void check_shape(const WindowShape& s, const ForecastKind& kind) {
  SHOAL_CHECK(s.h > 0 && s.input_size > 0 && s.n_series > 0 && s.outputs >= 1,
              "{} needs h, input_size, n_series and outputs ≥ 1, got {} {} {} {}", kind.name, s.h,
              s.input_size, s.n_series, s.outputs);
  SHOAL_CHECK(kind.multivariate || s.n_series == 1, "{} is a univariate model: one series, got {}",
              kind.name, s.n_series);
  SHOAL_CHECK(s.hist_exog >= 0 && s.futr_exog >= 0 && s.stat_exog >= 0 &&
                  (kind.hist_exog || s.hist_exog == 0) && (kind.futr_exog || s.futr_exog == 0) &&
                  (kind.stat_exog || s.stat_exog == 0),
              "{}: exogenous sizes it cannot take, got {} hist, {} futr, {} static", kind.name,
              s.hist_exog, s.futr_exog, s.stat_exog);
}

}  // namespace shoal::models
