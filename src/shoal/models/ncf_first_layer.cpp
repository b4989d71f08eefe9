// The factored first layer (see Ncf's Rows): the projections and backward of a set of distinct
// rows, and the layer's per-instance parts.
#include <algorithm>
#include <span>
#include <type_traits>

#include "shoal/kernels/gathered_rows.h"
#include "shoal/kernels/gemm.h"
#include "shoal/models/ncf.h"

namespace shoal::models {

namespace {
// The rows' input-gradient GEMM (rows_backward) runs in blocks of kRowGemmRows over the dz
// sums padded to whole blocks of NcfRowSet::kRowBlock: its JIT kernels then take three shapes
// (32, 64, 96 rows) whatever the set's distinct count (a count-shaped kernel would be
// compiled, and allocated, for every new count).
constexpr Index kRowGemmRows = 3 * NcfRowSet<float>::kRowBlock;
static_assert(NcfRowSet<float>::kRowBlock == NcfRowSet<double>::kRowBlock);

// The factored first layer's products over a share's distinct rows, read in place from the
// table (kernels/gathered_rows.h): the vector kernels for float where the widths allow, else the
// plain loops. Rows in random order of a large table are prefetched a tile ahead.
template <class T>
void project_distinct(ConstMat<T> table, const int32_t* list, Index m, Index e, const T* wt,
                      Index l1, T* proj, bool prefetch) {
  if constexpr (std::is_same_v<T, float>) {
    if (kernels::rows_kernels_supported(e, l1))
      return kernels::project_rows(table.data, table.ld, list, m, e, wt, l1, proj, prefetch);
  }
  kernels::project_rows_ref<T>(table.data, table.ld, list, m, e, wt, l1, proj);
}

template <class T>
void weight_grad_distinct(ConstMat<T> table, const int32_t* list, Index m, Index e, const T* dz,
                          Index l1, MatView<T> dw, bool prefetch) {
  if constexpr (std::is_same_v<T, float>) {
    if (kernels::rows_kernels_supported(e, l1))
      return kernels::rows_weight_grad(table.data, table.ld, list, m, e, dz, l1, dw.data, dw.ld,
                                       prefetch);
  }
  kernels::rows_weight_grad_ref<T>(table.data, table.ld, list, m, e, dz, l1, dw.data, dw.ld);
}

}  // namespace

// Chunk calls over one set of weights: the fused kernel reads the weights it broadcasts
// against transposed (see kernels/relu_tower.h) and accumulates the context columns' dW transposed.
template <class T>
void Ncf<T>::begin_chunks() {
  if (!fused_widths()) return;
  const Index e = cfg_.layers[0] / 2, c = cfg_.context;
  auto transpose = [](ConstMat<T> src, Index col0, Index cols, T* dst) {  // dst [cols, rows]
    for (Index r = 0; r < src.rows; ++r)
      for (Index k = 0; k < cols; ++k) dst[k * src.rows + r] = src(r, col0 + k);
  };
  transpose(tower_[0].p.weight.value.mat(), 2 * e, c, wc_t_.view.data);
  transpose(tower_[1].p.weight.value.mat(), 0, tower_[1].cfg.in, w2_t_.view.data);
  transpose(tower_[2].p.weight.value.mat(), 0, tower_[2].cfg.in, w3_t_.view.data);
  std::fill_n(dwc_t_.view.data, dwc_t_.view.numel(), T(0));
}

// The context columns' dW, accumulated transposed by the fused chunks (zero when the chunks
// ran forward and backward instead).
template <class T>
void Ncf<T>::end_chunks() {
  if (!fused_widths()) return;
  const Index e = cfg_.layers[0] / 2, c = cfg_.context, l1 = tower_[0].cfg.out;
  const MatView<T> dw = tower_[0].p.weight.grad.mat();
  const T* src = dwc_t_.view.data;
  for (Index k = 0; k < c; ++k)
    for (Index j = 0; j < l1; ++j) dw(j, 2 * e + k) += src[k * l1 + j];
}

template <class T>
void Ncf<T>::project_rows(int s, std::span<const Id> rows, T* proj, bool prefetch) {
  const Index e = cfg_.layers[0] / 2, l1 = tower_[0].cfg.out;
  const auto m = static_cast<Index>(rows.size());
  const ConstMat<T> w = tower_[0].p.weight.value.mat();
  T* wt = rows_wt_.view.data;
  // W_partᵀ [E, L1]: the kernels load vectors of outputs.
  for (Index j = 0; j < l1; ++j)
    for (Index p = 0; p < e; ++p) wt[p * l1 + j] = w(j, s * e + p);
  project_distinct<T>(mlp_table(s).layer.p.weight.value.mat(), rows.data(), m, e, wt, l1, proj,
                      prefetch);
  executed_flops_ += 2.0 * static_cast<double>(m * e * l1);
}

// The rows' table gradients dZ·W_part over the padded rows, in blocks of a few shapes (see
// kRowGemmRows), then dW_part += dZᵀ·X with X read in place.
template <class T>
void Ncf<T>::rows_backward(int s, std::span<const Id> rows, const T* dz, T* row_grads,
                           bool prefetch) {
  const Index e = cfg_.layers[0] / 2, l1 = tower_[0].cfg.out;
  const auto m = static_cast<Index>(rows.size());
  auto& lin = tower_[0];
  const ConstMat<T> w = lin.p.weight.value.mat();
  const Index col = s * e, padded = NcfRowSet<T>::padded(m);
  for (Index r0 = 0; r0 < padded; r0 += kRowGemmRows) {
    const Index rb = std::min(kRowGemmRows, padded - r0);
    kernels::gemm<T>(kernels::GemmBackend::kXsmm, kernels::Trans::kNo, kernels::Trans::kNo, rb, e,
                     l1, T(1), dz + r0 * l1, l1, w.data + col, w.ld, T(0), row_grads + r0 * e, e);
  }
  weight_grad_distinct<T>(mlp_table(s).layer.p.weight.value.mat(), rows.data(), m, e, dz, l1,
                          lin.p.weight.grad.mat().cols_block(col, e), prefetch);
  executed_flops_ += 4.0 * static_cast<double>(m * e * l1);
}

// The dz sums start at zero: close_rows clears the rows it used (the padding rows up to whole
// blocks are never written). Only after a set that added into them and did not close is the
// whole buffer cleared here.
template <class T>
void Ncf<T>::open_rows(int s, NcfRowSet<T>& rs) {
  const Index m = rs.count;
  project_rows(s, std::span<const Id>(rs.list.view.data, static_cast<size_t>(m)), rs.proj.view.data,
               !rs.ascending);
  if (!rs.dz_clear) std::fill_n(rs.dz.view.data, rs.dz.view.numel(), T(0));
  rs.dz_clear = true;
  if (has_gmf()) std::fill_n(rs.gmf_grads.view.data, m * cfg_.factors, T(0));
}

template <class T>
void Ncf<T>::close_rows(int s, NcfRowSet<T>& rs, bool add_to_tables) {
  const Index m = rs.count;
  rs.count = 0;
  if (m == 0) return;
  const std::span<const Id> rows(rs.list.view.data, static_cast<size_t>(m));
  rows_backward(s, rows, rs.dz.view.data, rs.row_grads.view.data, !rs.ascending);
  // Cleared for the next set while the lines are near (see open_rows).
  std::fill_n(rs.dz.view.data, m * tower_[0].cfg.out, T(0));
  rs.dz_clear = true;
  if (!add_to_tables) return;
  add_row_grads(static_cast<size_t>(mlp_table_index(s)), rows, rs.row_grads.view.data);
  if (has_gmf())
    add_row_grads(static_cast<size_t>(gmf_table_index(s)), rows, rs.gmf_grads.view.data);
}

// The model's own set (forward without Rows): the call's distinct users and items listed
// (zone mlp.0.rows.index), their MLP rows projected (mlp.0.rows.forward, costed by the
// distinct rows).
template <class T>
typename Ncf<T>::Rows Ncf<T>::open_own_rows(const Ctx& ctx, std::span<const Id> users,
                                            std::span<const Id> items) {
  profile::Recorder* prof = zones_.share.registered() ? ctx.profiler : nullptr;
  {
    profile::Zone zone(prof, zones_.share_index, users.size());
    own_rows_[0].list_ids(users);
    own_rows_[1].list_ids(items);
  }
  profile::Zone zone(prof, zones_.share.forward, own_rows_[0].count + own_rows_[1].count);
  for (int s = 0; s < 2; ++s) open_rows(s, own_rows_[s]);
  begin_chunks();
  own_open_ = true;
  return own_rows();
}

template <class T>
typename Ncf<T>::Rows Ncf<T>::own_rows() const {
  Rows r;
  for (int s = 0; s < 2; ++s) {
    r.proj[s] = own_rows_[s].proj.view.data;
    r.slot[s] = own_rows_[s].slot.view.data;
    r.dz[s] = own_rows_[s].dz.view.data;
    r.gmf[s] = own_rows_[s].gmf_grads.view.data;
  }
  return r;
}

// The own set's backward (mlp.0.rows.backward): the rows' MLP and GMF gradients added into the
// tables' grad buffers, the rows flagged.
template <class T>
void Ncf<T>::close_own_rows(const Ctx& ctx) {
  profile::Recorder* prof = zones_.share.registered() ? ctx.profiler : nullptr;
  profile::Zone zone(prof, zones_.share.backward, own_rows_[0].count + own_rows_[1].count);
  for (int s = 0; s < 2; ++s) close_rows(s, own_rows_[s], /*add_to_tables=*/true);
  end_chunks();
  own_open_ = false;
}

// y = relu(c·W_cᵀ + b + proj_u[u] + proj_i[i]) for the call's rows.
template <class T>
void Ncf<T>::first_layer_forward(std::span<const Id> users, std::span<const Id> items,
                                 ConstMat<T> context, MatView<T> y, const Rows& rows) {
  const Index e = cfg_.layers[0] / 2, c = cfg_.context, l1 = tower_[0].cfg.out;
  const Index n = y.rows;
  const auto& lin = tower_[0];
  const ConstMat<T> w = lin.p.weight.value.mat();
  const T* b = lin.cfg.bias ? lin.p.bias.value.data : nullptr;
  if (c > 0) {
    kernels::linear_forward<T>(context, ConstMat<T>(w.data + 2 * e, l1, c, w.ld), b,
                               kernels::Act::kNone, y, MatView<T>{});
  } else {
    for (Index r = 0; r < n; ++r) std::fill_n(y.row(r), l1, T(0));
    if (b)
      for (Index r = 0; r < n; ++r)
        for (Index j = 0; j < l1; ++j) y(r, j) += b[j];
  }
  const Id* slot_u = rows.slot[0];
  const Id* slot_i = rows.slot[1];
  const T* proj_u = rows.proj[0];
  const T* proj_i = rows.proj[1];
  for (Index r = 0; r < n; ++r) {
    const T* __restrict pu =
        proj_u + static_cast<Index>(slot_u[users[static_cast<size_t>(r)]]) * l1;
    const T* __restrict qi =
        proj_i + static_cast<Index>(slot_i[items[static_cast<size_t>(r)]]) * l1;
    T* __restrict yr = y.row(r);
    for (Index j = 0; j < l1; ++j) {
      const T v = yr[j] + pu[j] + qi[j];
      yr[j] = v > T(0) ? v : T(0);
    }
  }
}

// dz = dy where y > 0 (in place in dy), then the context columns' dW and the bias grad.
template <class T>
void Ncf<T>::first_layer_backward(ConstMat<T> context, ConstMat<T> y, MatView<T> dy) {
  const Index e = cfg_.layers[0] / 2, c = cfg_.context, l1 = tower_[0].cfg.out;
  const Index n = dy.rows;
  for (Index r = 0; r < n; ++r) {
    const T* __restrict yr = y.row(r);
    T* __restrict d = dy.row(r);
    for (Index j = 0; j < l1; ++j) d[j] = yr[j] > T(0) ? d[j] : T(0);
  }
  auto& lin = tower_[0];
  T* db = lin.cfg.bias ? lin.p.bias.grad.data : nullptr;
  if (c > 0) {
    const ConstMat<T> w = lin.p.weight.value.mat();
    kernels::linear_backward<T>(context, ConstMat<T>(w.data + 2 * e, l1, c, w.ld), ConstMat<T>{},
                                kernels::Act::kNone, ConstMat<T>(dy), lin.dz.mat().rows_block(0, n),
                                MatView<T>{}, lin.p.weight.grad.mat().cols_block(2 * e, c), db,
                                /*accumulate=*/true);
  } else if (db) {
    for (Index r = 0; r < n; ++r)
      for (Index j = 0; j < l1; ++j) db[j] += dy(r, j);
  }
}

// dZ[row] += dz_n for the call's rows, in row order.
template <class T>
void Ncf<T>::first_layer_aggregate(std::span<const Id> users, std::span<const Id> items,
                                   ConstMat<T> dz, const Rows& rows) {
  const Index l1 = tower_[0].cfg.out;
  const Id* slot_u = rows.slot[0];
  const Id* slot_i = rows.slot[1];
  T* dz_u = rows.dz[0];
  T* dz_i = rows.dz[1];
  for (Index r = 0; r < dz.rows; ++r) {
    const T* __restrict d = dz.row(r);
    T* __restrict au = dz_u + static_cast<Index>(slot_u[users[static_cast<size_t>(r)]]) * l1;
    for (Index j = 0; j < l1; ++j) au[j] += d[j];
    T* __restrict ai = dz_i + static_cast<Index>(slot_i[items[static_cast<size_t>(r)]]) * l1;
    for (Index j = 0; j < l1; ++j) ai[j] += d[j];
  }
}

template <class T>
void Ncf<T>::add_row_grads(size_t t, std::span<const Id> rows, const T* grads) {
  const Id* list = rows.data();
  const auto m = static_cast<Index>(rows.size());
  const MatView<T> tg = table_grads_[t].mat();
  const Index d = tg.cols;
  for (Index k = 0; k < m; ++k) {
    T* __restrict dst = tg.row(list[k]);
    const T* __restrict src = grads + k * d;
    for (Index j = 0; j < d; ++j) dst[j] += src[j];
    mark_touched(t, list[k]);
  }
}

template void Ncf<float>::begin_chunks();
template void Ncf<float>::end_chunks();
template void Ncf<float>::project_rows(int, std::span<const int32_t>, float*, bool);
template void Ncf<float>::rows_backward(int, std::span<const int32_t>, const float*, float*, bool);
template void Ncf<float>::open_rows(int, NcfRowSet<float>&);
template void Ncf<float>::close_rows(int, NcfRowSet<float>&, bool);
template Ncf<float>::Rows Ncf<float>::open_own_rows(const Ctx&, std::span<const int32_t>,
                                                    std::span<const int32_t>);
template Ncf<float>::Rows Ncf<float>::own_rows() const;
template void Ncf<float>::close_own_rows(const Ctx&);
template void Ncf<float>::first_layer_forward(std::span<const int32_t>, std::span<const int32_t>,
                                              ConstMat<float>, MatView<float>,
                                              const Ncf<float>::Rows&);
template void Ncf<float>::first_layer_backward(ConstMat<float>, ConstMat<float>, MatView<float>);
template void Ncf<float>::first_layer_aggregate(std::span<const int32_t>, std::span<const int32_t>,
                                                ConstMat<float>, const Ncf<float>::Rows&);
template void Ncf<float>::add_row_grads(size_t, std::span<const int32_t>, const float*);
template void Ncf<double>::begin_chunks();
template void Ncf<double>::end_chunks();
template void Ncf<double>::project_rows(int, std::span<const int32_t>, double*, bool);
template void Ncf<double>::rows_backward(int, std::span<const int32_t>, const double*, double*,
                                         bool);
template void Ncf<double>::open_rows(int, NcfRowSet<double>&);
template void Ncf<double>::close_rows(int, NcfRowSet<double>&, bool);
template Ncf<double>::Rows Ncf<double>::open_own_rows(const Ctx&, std::span<const int32_t>,
                                                      std::span<const int32_t>);
template Ncf<double>::Rows Ncf<double>::own_rows() const;
template void Ncf<double>::close_own_rows(const Ctx&);
template void Ncf<double>::first_layer_forward(std::span<const int32_t>, std::span<const int32_t>,
                                               ConstMat<double>, MatView<double>,
                                               const Ncf<double>::Rows&);
template void Ncf<double>::first_layer_backward(ConstMat<double>, ConstMat<double>,
                                                MatView<double>);
template void Ncf<double>::first_layer_aggregate(std::span<const int32_t>, std::span<const int32_t>,
                                                 ConstMat<double>, const Ncf<double>::Rows&);
template void Ncf<double>::add_row_grads(size_t, std::span<const int32_t>, const double*);

}  // namespace shoal::models
