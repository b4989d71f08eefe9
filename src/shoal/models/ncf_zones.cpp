#include <fmt/format.h>

#include "shoal/models/ncf.h"
#include "shoal/profile/cost.h"

namespace shoal::models {

template <class T>
void Ncf<T>::register_zones(profile::Recorder& rec, int model, std::string_view prefix) {
  using profile::AffineCost;
  using profile::Category;
  using profile::Cost;
  const double elem = sizeof(T);
  const std::string p(prefix);
  // Embedding widths of one instance: every table is read once per row forward, and its row
  // gradients summed backward.
  // embed.* covers the MLP tables (and the context copy); the GMF tables' reads and row sums
  // are inside gmf.forward / gmf.backward, fused with the product.
  double width = 0;
  if (has_mlp()) width = static_cast<double>(cfg_.layers[0]);
  const double ctx_cols = static_cast<double>(cfg_.context);
  zones_.embed.forward = rec.zone(
      p + "embed.forward", Category::kForward, AffineCost::of([&](double n) {
        Cost c = profile::embedding_forward(n, width, elem);
        c.bytes += 2 * elem * n * ctx_cols;  // the context columns copied into the tower input
        return c;
      }),
      model);
  zones_.embed.backward = rec.zone(
      p + "embed.backward", Category::kBackward,
      AffineCost::of([&](double n) { return profile::embedding_backward(n, width, elem); }), model);
  const double f = static_cast<double>(cfg_.factors);
  zones_.gmf.forward = rec.zone(
      p + "gmf.forward", Category::kForward,
      AffineCost::of([&](double n) { return profile::elementwise(n, f, 1, 2, elem); }), model);
  zones_.gmf.backward = rec.zone(
      p + "gmf.backward", Category::kBackward, AffineCost::of([&](double n) {
        return profile::elementwise(n, f, 2, 3, elem) + profile::elementwise(n, f, 0, 0, elem);
      }),
      model);
  if (factored()) {
    // The factored first layer's work per set of rows, costed per distinct row (the zones'
    // count):
    // listing the distinct ids (no FLOPs), their rows' gather and projection through the
    // embedding columns, and backward those columns' dW and the rows' gradients. A caller with
    // its own sets records them in the same zones (rows_zones).
    const double e = static_cast<double>(cfg_.layers[0] / 2);
    const double l1 = static_cast<double>(tower_[0].cfg.out);
    zones_.share_index = rec.zone(p + "mlp.0.rows.index", Category::kForward, {}, model);
    zones_.share.forward =
        rec.zone(p + "mlp.0.rows.forward", Category::kForward, AffineCost::of([&](double m) {
                   Cost c = profile::linear_forward(m, e, l1, false, profile::ActKind::kNone, elem);
                   c.bytes += 2 * elem * m * e;  // the gather
                   return c;
                 }),
                 model);
    const auto rows_backward = AffineCost::of([&](double m) {
      return profile::linear_backward_dw(m, e, l1, false, elem) +
             profile::linear_backward_dx(m, e, l1, profile::ActKind::kNone, elem);
    });
    zones_.share.backward =
        rec.zone(p + "mlp.0.rows.backward", Category::kBackward, rows_backward, model);
  }
  zones_.loss = rec.zone(p + "loss.forward", Category::kForward, AffineCost::of([&](double n) {
                           return profile::point_loss_forward(n, 1, elem) +
                                  profile::point_loss_backward(n, 1, elem);
                         }),
                         model);
  if (fused_widths()) {
    // train_chunk's fused pass: the context columns of mlp.0, the tower, predict, the GMF
    // product and the loss, forward and backward, per row; bytes: the rows' context,
    // projections and GMF rows read, their gradients read and written.
    const double flops = instance_flops(false, true) + instance_flops(true, true);
    const double bytes =
        elem * static_cast<double>(cfg_.context + 2 * cfg_.layers[1] + 2 * cfg_.factors +
                                   4 * cfg_.layers[1] + 4 * cfg_.factors + 1);
    zones_.fused = rec.zone(p + "tower.fused", Category::kBackward,  // ⅔ of its FLOPs
                            AffineCost::of([=](double n) {
                              return Cost{flops * n, bytes * n};
                            }),
                            model);
  }
  zones_.tower.resize(tower_.size());
  for (size_t k = 0; k < tower_.size(); ++k) {
    const auto& c = tower_[k].cfg;
    const double out = static_cast<double>(c.out);
    // The first layer's dX covers only the embedding columns (see backward); factored, the
    // instances run only the context columns, without dX (the embedding columns are in the
    // mlp.0.rows zones).
    const double in =
        k == 0 && factored() ? static_cast<double>(cfg_.context) : static_cast<double>(c.in);
    const double dx_in = k == 0 ? (factored() ? 0.0 : static_cast<double>(cfg_.layers[0])) : in;
    const auto act = static_cast<profile::ActKind>(c.act);
    const std::string name = fmt::format("{}mlp.{}.", p, k);
    zones_.tower[k].forward =
        rec.zone(name + "forward", Category::kForward, AffineCost::of([&](double n) {
                   return profile::linear_forward(n, in, out, c.bias, act, elem);
                 }),
                 model);
    zones_.tower[k].backward =
        rec.zone(name + "backward", Category::kBackward, AffineCost::of([&](double n) {
                   return profile::linear_backward_dw(n, in, out, c.bias, elem) +
                          profile::linear_backward_dx(n, dx_in, out, act, elem);
                 }),
                 model);
  }
  const double pin = static_cast<double>(predict_in());
  zones_.predict.forward =
      rec.zone(p + "predict.forward", Category::kForward, AffineCost::of([&](double n) {
                 return profile::linear_forward(n, pin, 1, true, profile::ActKind::kNone, elem);
               }),
               model);
  zones_.predict.backward =
      rec.zone(p + "predict.backward", Category::kBackward, AffineCost::of([&](double n) {
                 return profile::linear_backward_dw(n, pin, 1, true, elem) +
                        profile::linear_backward_dx(n, pin, 1, profile::ActKind::kNone, elem);
               }),
               model);
}

template void Ncf<float>::register_zones(profile::Recorder&, int, std::string_view);
template void Ncf<double>::register_zones(profile::Recorder&, int, std::string_view);

}  // namespace shoal::models
