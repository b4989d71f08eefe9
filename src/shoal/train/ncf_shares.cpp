#include "shoal/train/ncf_shares.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "shoal/core/error.h"
#include "shoal/profile/cost.h"

namespace shoal::train {

// ---- The share selection ----

// Rows are owned in blocks of consecutive ids, not by id % threads: a core's prefetchers also
// fetch the lines next to those it touches, so with interleaved owners every row a thread
// updated pulled in lines of the neighbouring rows, which the other thread was writing, and
// those lines went back and forth between the cores. Two threads on the user-shaped data:
// 82 ns per MLP user row updated against 24 ns on one thread; with blocks of ≈ 64 rows a step
// was 12% faster, and blocks of up to 256 rows (≈ 160 users, ≈ 190 items at the user's scale)
// gained 3% more.
std::vector<uint16_t> detail::block_owners(std::span<const double> weights, int threads) {
  SHOAL_CHECK(threads >= 1 && threads <= std::numeric_limits<uint16_t>::max(),
              "block_owners: {} threads", threads);
  const auto rows = static_cast<Index>(weights.size());
  const Index per_thread =
      std::max<Index>(1, (rows + kOwnerBlock * threads - 1) / (kOwnerBlock * threads));
  const Index blocks = per_thread * threads;
  double total = 0;
  for (const double w : weights) total += w;
  std::vector<uint16_t> owner(weights.size());
  // Block b ends at the row where the running weight reaches (b + 1)/blocks of the total
  // (equal weights: at ⌈(b + 1)·rows/blocks⌉ rows).
  double running = 0;
  Index b = 0;
  for (Index r = 0; r < rows; ++r) {
    owner[static_cast<size_t>(r)] = static_cast<uint16_t>(b % threads);
    running += weights[static_cast<size_t>(r)];
    while (b + 1 < blocks &&
           running * static_cast<double>(blocks) >= static_cast<double>(b + 1) * total)
      ++b;
  }
  return owner;
}

int detail::bin_shift(Index rows, Index batch) {
  const Index most = std::max<Index>(batch, 64);
  int shift = 0;
  while (((rows - 1) >> shift) + 1 > most) ++shift;
  return shift;
}

std::vector<double> detail::batch_presence(std::span<const double> weights, Index batch) {
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<double> p(weights.size(), 0.0);
  if (total <= 0) return p;
  const auto draws = static_cast<double>(batch);
  for (size_t r = 0; r < weights.size(); ++r) p[r] = 1.0 - std::exp(-draws * weights[r] / total);
  return p;
}

int detail::split_side(const std::vector<double> (&weights)[2], Index batch, int threads) {
  int best = -1;
  double best_distinct = 0;
  for (int s = 0; s < 2; ++s) {
    const std::vector<double>& w = weights[s];
    if (w.empty()) continue;
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    if (total <= 0) continue;
    const int shift = bin_shift(static_cast<Index>(w.size()), batch);
    std::vector<double> per_bin((((w.size() - 1) >> shift) + 1), 0.0);
    for (size_t r = 0; r < w.size(); ++r) per_bin[r >> shift] += w[r];
    if (*std::max_element(per_bin.begin(), per_bin.end()) * threads * 10 > total) continue;
    const std::vector<double> p = batch_presence(w, batch);
    const double distinct = std::accumulate(p.begin(), p.end(), 0.0);
    if (best < 0 || distinct > best_distinct) {
      best = s;
      best_distinct = distinct;
    }
  }
  return best;
}

Range detail::share_bins(std::span<const int32_t> counts, Index n, int share, int shares) {
  const auto bins = static_cast<Index>(counts.size());
  Range r{0, bins};
  // Cut t between bins b and b + 1 lies at b (running count c before bin b) or at b + 1
  // (next, after it), whichever is nearer t·n/T; the cuts share (its first bin) and share + 1
  // (its end) are placed in one scan.
  const Index total = static_cast<Index>(shares);
  int t = share > 0 ? share : share + 1;
  Index c = 0;
  for (Index b = 0; b < bins && t <= share + 1 && t < shares; ++b) {
    const Index next = c + counts[static_cast<size_t>(b)];
    while (t <= share + 1 && t < shares && next * total >= t * n) {
      const Index at = next * total - t * n <= t * n - c * total ? b + 1 : b;
      (t == share ? r.begin : r.end) = at;
      ++t;
    }
    c = next;
  }
  return r;
}

// ---- A replica's share rows ----

template <class T>
void NcfShareRows<T>::plan(Planner& planner, Index max_rows, int owned_side) {
  SHOAL_CHECK(owned_side >= -1 && owned_side <= 1, "NcfShareRows::plan: owned side {}", owned_side);
  const Model& m = *model_;
  owned_side_ = m.factored() ? owned_side : -1;
  if (!m.factored()) return;
  const auto& cfg = m.config();
  const Index e = cfg.layers[0] / 2, l1 = cfg.layers[1], f = m.has_gmf() ? cfg.factors : 0;
  rows_[0].plan(planner, "share.user_rows.", cfg.num_users, max_rows, l1, e, f);
  rows_[1].plan(planner, "share.item_rows.", cfg.num_items, max_rows, l1, e, f);
  if (owned_side_ < 0) return;
  const Index v = owned_side_ == 0 ? cfg.num_users : cfg.num_items;
  const Index padded = models::NcfRowSet<T>::padded(v);
  const std::string name = owned_side_ == 0 ? "mlp.0.owned_users." : "mlp.0.owned_items.";
  planner.buffer(owned_proj_, Region::kScratch, name + "proj", {v, l1});
  planner.buffer(owned_pslot_, Region::kScratch, name + "proj_slot", {v});
  planner.buffer(owned_.stamp, Region::kScratch, name + "stamp", {v});
  planner.buffer(owned_.list, Region::kScratch, name + "list", {v + 1});
  // The owner's GEMM runs over whole blocks of rows from its first row: up to a block past V.
  planner.buffer(owned_.dz, Region::kScratch, name + "dz_sums",
                 {v + models::NcfRowSet<T>::kRowBlock, l1});
  planner.buffer(owned_.row_grads, Region::kScratch, name + "row_grads", {padded, e});
  if (f > 0) planner.buffer(owned_.gmf_grads, Region::kScratch, name + "gmf_sums", {v, f});
}

template <class T>
void NcfShareRows<T>::begin(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items) {
  Model& m = *model_;
  if (!m.factored()) return;
  const bool by_owner = rows_by_owner();
  profile::Recorder* prof = m.rows_zones().registered() ? ctx.profiler : nullptr;
  const int owned = by_owner ? owned_side_ : -1;
  {
    profile::Zone zone(prof, m.rows_index_zone(), users.size());
    handed_[0] = handed_[1] = 0;
    for (int s = 0; s < 2; ++s) {
      const std::span<const Id> ids = s == 0 ? users : items;
      if (s != owned) {
        rows_[s].list_ids(ids);
        continue;
      }
      // The owners list and project the batch's rows of this side; this share's are only
      // marked (backward_owned_rows reads its sums of the rows it marked; clear_owned_sums
      // clears them).
      rows_[s].stamp_ids(ids);
      if (!owned_.sums_clear) {  // a step that failed before clear_owned_sums
        std::fill_n(owned_.dz.view.data, owned_.dz.view.numel(), T(0));
        std::fill_n(owned_.gmf_grads.view.data, owned_.gmf_grads.view.numel(), T(0));
      }
      owned_.sums_clear = false;
    }
  }
  by_owner_ = by_owner;
  profile::Zone zone(prof, m.rows_zones().forward, rows_[0].count + rows_[1].count);
  for (int s = 0; s < 2; ++s)
    if (s != owned) m.open_rows(s, rows_[s]);
  for (int s = 0; s < 2; ++s) {
    models::NcfRowSet<T>& rs = rows_[s];
    bound_.proj[s] = s == owned ? holder_->owned_proj_.view.data : rs.proj.view.data;
    bound_.slot[s] = s == owned ? holder_->owned_pslot_.view.data : rs.slot.view.data;
    bound_.dz[s] = s == owned ? owned_.dz.view.data : rs.dz.view.data;
    bound_.gmf[s] = s == owned ? owned_.gmf_grads.view.data : rs.gmf_grads.view.data;
  }
  m.begin_chunks();
  open_ = true;
}

template <class T>
MatView<T> NcfShareRows<T>::forward(const Ctx& ctx, std::span<const Id> users,
                                    std::span<const Id> items, ConstMat<T> context) {
  if (!open_) return model_->forward(ctx, users, items, context);
  return model_->forward(ctx, users, items, context, bound_);
}

template <class T>
void NcfShareRows<T>::backward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                               ConstMat<T> dlogits) {
  if (!open_) return model_->backward(ctx, users, items, dlogits);
  mark_dz_used();
  model_->backward(ctx, users, items, dlogits, bound_);
}

template <class T>
double NcfShareRows<T>::train_chunk(const Ctx& ctx, std::span<const Id> users,
                                    std::span<const Id> items, ConstMat<T> context, const T* labels,
                                    T scale) {
  if (!open_) return model_->train_chunk(ctx, users, items, context, labels, scale);
  mark_dz_used();
  return model_->train_chunk(ctx, users, items, context, labels, scale, bound_);
}

// The distinct rows' part of the backward (Ncf::close_rows), then the share is closed. The
// rows' MLP and GMF gradients are handed over (set_hand_over) or added into the tables' row
// grads, the rows flagged.
template <class T>
void NcfShareRows<T>::end(const Ctx& ctx) {
  Model& m = *model_;
  if (!m.factored()) return;
  SHOAL_CHECK(open_, "NcfShareRows::end without begin");
  profile::Recorder* prof = m.rows_zones().registered() ? ctx.profiler : nullptr;
  profile::Zone zone(prof, m.rows_zones().backward, rows_[0].count + rows_[1].count);
  for (int s = 0; s < 2; ++s) {
    const Index count = rows_[s].count;
    m.close_rows(s, rows_[s], /*add_to_tables=*/!hand_over_[s]);
    if (hand_over_[s]) handed_[s] = count;
  }
  m.end_chunks();
  open_ = false;
}

template <class T>
typename NcfShareRows<T>::RowGrads NcfShareRows<T>::row_grads(int s) const {
  const models::NcfRowSet<T>& rs = rows_[s];
  const auto& cfg = model_->config();
  const Index n = handed_[s];
  return {std::span<const Id>(rs.list.view.data, static_cast<size_t>(n)),
          ConstMat<T>(rs.row_grads.view.data, n, cfg.layers[0] / 2),
          model_->has_gmf() ? ConstMat<T>(rs.gmf_grads.view.data, n, cfg.factors) : ConstMat<T>{}};
}

template <class T>
bool NcfShareRows<T>::hands_over_table(size_t t) const {
  if (!model_->factored()) return false;
  const auto ti = static_cast<int>(t);
  for (int s = 0; s < 2; ++s)
    if (ti == model_->mlp_table_index(s) || ti == model_->gmf_table_index(s)) return hand_over_[s];
  return false;
}

template <class T>
void NcfShareRows<T>::share_owned_rows(NcfShareRows* holder) {
  SHOAL_CHECK(holder == nullptr || (owned_side_ >= 0 && holder->owned_side_ == owned_side_ &&
                                    holder->owned_proj_.view.numel() == owned_proj_.view.numel()),
              "NcfShareRows::share_owned_rows needs both planned with the same owned side");
  holder_ = holder;
}

// The owned rows the batch has (ascending: a sweep of the owner's blocks of the table),
// projected into the holder's table from first_row on; each one's row there noted. The batch's
// ids are stamped here rather than read from the shares' lists: then no replica waits for the
// others' lists.
template <class T>
void NcfShareRows<T>::project_owned_rows(const Ctx& ctx, std::span<const Id> batch_ids,
                                         std::span<const Id> owned, Index first_row) {
  SHOAL_CHECK(rows_by_owner(), "NcfShareRows::project_owned_rows without share_owned_rows");
  profile::Recorder* prof = zones_.owned_rows.registered() ? ctx.profiler : nullptr;
  Id* list = owned_.list.view.data;
  Index m = 0;
  {
    profile::Zone zone(prof, zones_.owned_index, batch_ids.size());
    Id* stamp = owned_.stamp.view.data;
    const Id gen = models::next_generation(stamp, owned_.stamp.view.numel(), owned_.generation);
    for (const Id id : batch_ids) {
      SHOAL_DCHECK(id >= 0 && id < owned_.stamp.view.numel());
      stamp[id] = gen;
    }
    Id* pslot = holder_->owned_pslot_.view.data;
    // Branch-free; an item the batch lacks gets a row it never reads.
    for (const Id id : owned) {
      list[m] = id;
      pslot[id] = static_cast<Id>(first_row + m);
      m += stamp[id] == gen ? 1 : 0;
    }
    owned_.count = m;
    owned_.first_row = first_row;
  }
  profile::Zone zone(prof, zones_.owned_rows.forward, m);
  const Index l1 = model_->config().layers[1];
  model_->project_rows(owned_side_, std::span<const Id>(list, static_cast<size_t>(m)),
                       holder_->owned_proj_.view.data + first_row * l1, /*prefetch=*/false);
}

// The other sharers' dz and GMF sums of the owned rows added into this replica's, in replica
// order (a sharer whose share did not have the row is skipped; the rows are the same in every
// replica: the holder's), then, as a share's end does for its rows: dW_o += dZᵀ·rows into this
// model's grads and the rows' table gradients dZ·W_o.
template <class T>
typename NcfShareRows<T>::RowGrads NcfShareRows<T>::backward_owned_rows(
    const Ctx& ctx, std::span<NcfShareRows* const> sharers) {
  SHOAL_CHECK(rows_by_owner(), "NcfShareRows::backward_owned_rows without share_owned_rows");
  const int o = owned_side_;
  const Index m = owned_.count, first = owned_.first_row;
  profile::Recorder* prof = zones_.owned_rows.registered() ? ctx.profiler : nullptr;
  profile::Zone zone(prof, zones_.owned_rows.backward, m);
  const auto& cfg = model_->config();
  const Index e = cfg.layers[0] / 2, l1 = cfg.layers[1], f = model_->has_gmf() ? cfg.factors : 0;
  const Id* list = owned_.list.view.data;
  T* dz = owned_.dz.view.data + first * l1;
  T* gmf = owned_.gmf_grads.view.data + first * f;
  owned_.sums_clear = false;  // also when this replica had no share: its rows get the others'
  for (const NcfShareRows* r : sharers) {
    if (r == this) continue;
    const Id* stamp = r->rows_[o].stamp.view.data;
    const Id gen = r->rows_[o].generation;
    const T* src = r->owned_.dz.view.data + first * l1;
    const T* src_gmf = r->owned_.gmf_grads.view.data + first * f;
    for (Index k = 0; k < m; ++k) {
      if (stamp[list[k]] != gen) continue;
      T* __restrict d = dz + k * l1;
      const T* __restrict g = src + k * l1;
      for (Index j = 0; j < l1; ++j) d[j] += g[j];
      T* __restrict dg = gmf + k * f;
      const T* __restrict gg = src_gmf + k * f;
      for (Index j = 0; j < f; ++j) dg[j] += gg[j];
    }
  }
  // Rows past m up to a whole block are another owner's or zero: their row gradients are never
  // read.
  T* rg = owned_.row_grads.view.data;
  model_->rows_backward(o, std::span<const Id>(list, static_cast<size_t>(m)), dz, rg,
                        /*prefetch=*/false);
  return {std::span<const Id>(list, static_cast<size_t>(m)), ConstMat<T>(rg, m, e),
          model_->has_gmf() ? ConstMat<T>(gmf, m, f) : ConstMat<T>{}};
}

// Every owner's block of rows this step, contiguous: the rows its share had lie anywhere in
// them, and a sweep of the share's stamps with a store per row cost ≈ 2× these clears.
template <class T>
void NcfShareRows<T>::clear_owned_sums(std::span<NcfShareRows* const> owners) {
  if (!rows_by_owner() || owned_.sums_clear) return;
  const auto& cfg = model_->config();
  const Index l1 = cfg.layers[1], f = model_->has_gmf() ? cfg.factors : 0;
  for (const NcfShareRows* o : owners) {
    const Index first = o->owned_.first_row, m = o->owned_.count;
    std::fill_n(owned_.dz.view.data + first * l1, m * l1, T(0));
    std::fill_n(owned_.gmf_grads.view.data + first * f, m * f, T(0));
  }
  owned_.sums_clear = true;
}

// Rows by owner: the owned rows listed, projected, and their dz summed over the replicas with
// the same backward as a share's rows, costed per owned row.
template <class T>
void NcfShareRows<T>::register_zones(profile::Recorder& rec, int model, std::string_view prefix) {
  using profile::AffineCost;
  using profile::Category;
  if (!model_->factored()) return;
  const auto& cfg = model_->config();
  const double elem = sizeof(T);
  const double e = static_cast<double>(cfg.layers[0] / 2);
  const double l1 = static_cast<double>(cfg.layers[1]);
  const std::string owned =
      std::string(prefix) + (owned_side_ == 0 ? "mlp.0.user_rows." : "mlp.0.item_rows.");
  zones_.owned_index = rec.zone(owned + "index", Category::kForward, {}, model);
  zones_.owned_rows.forward =
      rec.zone(owned + "forward", Category::kForward, AffineCost::of([&](double m) {
                 return profile::linear_forward(m, e, l1, false, profile::ActKind::kNone, elem);
               }),
               model);
  zones_.owned_rows.backward =
      rec.zone(owned + "backward", Category::kBackward, AffineCost::of([&](double m) {
                 return profile::linear_backward_dw(m, e, l1, false, elem) +
                        profile::linear_backward_dx(m, e, l1, profile::ActKind::kNone, elem);
               }),
               model);
}

template class NcfShareRows<float>;
template class NcfShareRows<double>;

}  // namespace shoal::train
