#include "shoal/train/ncf_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <span>
#include <thread>

#include "ncf_replica.h"
#include "shoal/core/copy_row.h"
#include "shoal/core/prefetch.h"
#include "shoal/core/spin_barrier.h"
#include "shoal/kernels/select.h"
#include "shoal/profile/memory.h"
#include "shoal/train/checks.h"
#include "shoal/train/data_parallel.h"

namespace shoal::train {

namespace {
// Rows per forward/backward chunk of a thread's share (see train_chunks).
constexpr Index kComputeChunkRows = 256;

}  // namespace

namespace detail {

namespace {

// Validates before any member (the optimizer checks lr too, with a less specific message).
const NcfTrainConfig& checked(const NcfTrainConfig& c) {
  check_lr_and_batch(c.lr, c.batch_size);
  return c;
}

}  // namespace
}  // namespace detail

// ---- NcfTrainer ----

NcfTrainer::NcfTrainer(const models::Ncf<float>::Config& model, const NcfTrainConfig& cfg,
                       const data::NcfPositives& train)
    : cfg_(detail::checked(cfg)),
      train_(train),
      pool_(cfg.threads, cfg.pinning),
      sampler_(train, cfg.negatives, cfg.seed),
      adam_({.lr = cfg.lr}),
      sparse_adam_({.lr = cfg.lr, .dense_eps = true}) {
  SHOAL_CHECK(train.context_cols() == model.context,
              "the data has {} context columns, the model expects {}", train.context_cols(),
              model.context);
  SHOAL_CHECK(train.num_users <= model.num_users && train.num_items <= model.num_items,
              "training ids (users < {}, items < {}) exceed the model's {} users and {} items",
              train.num_users, train.num_items, model.num_users, model.num_items);
  const int t = pool_.size();
  const Index rows =
      std::max(std::min((cfg.batch_size + t - 1) / t, kComputeChunkRows), cfg.eval_rows);
  // Each row's expected instances per epoch: a user's, its positives with their negatives; an
  // item's, its positives and its share of the negatives, taken as uniform over the items.
  std::vector<double> weights[2] = {
      std::vector<double>(static_cast<size_t>(model.num_users), 0.0),
      std::vector<double>(static_cast<size_t>(model.num_items),
                          static_cast<double>(cfg.negatives) * static_cast<double>(train.size()) /
                              static_cast<double>(model.num_items))};
  for (const int32_t u : train.users) weights[0][static_cast<size_t>(u)] += 1 + cfg.negatives;
  for (const int32_t i : train.items) weights[1][static_cast<size_t>(i)] += 1;
  // Shares cut by the ids of one side (see open_share) unless no side's bins are small enough
  // for the cuts between bins to split a batch evenly (one very active user, or few users and
  // items: contiguous shares then).
  if (t > 1) {
    split_side_ = detail::split_side(weights, cfg.batch_size, t);
    if (split_side_ >= 0) {
      const Index ids = split_side_ == 0 ? model.num_users : model.num_items;
      bin_shift_ = detail::bin_shift(ids, cfg.batch_size);
      bins_ = ((ids - 1) >> bin_shift_) + 1;
    }
  }
  // Rows by owner (Ncf::share_owned_rows) wherever the rows are handed over (lazy update, first
  // layer factored): each of a batch's rows of the side not split (the items for contiguous
  // shares) is projected and back-propagated once, by its owner, not by every thread whose
  // share has it (docs/ncf.md, "Design decisions").
  if (t > 1 && !cfg.dense_embedding_adam && model.kind != models::NcfKind::kGmf &&
      model.factored_first_layer)
    owned_side_ = split_side_ == 1 ? 0 : 1;
  for (int r = 0; r < t; ++r) {
    replicas_.push_back(std::make_unique<detail::NcfReplica>(
        model, rows, cfg.batch_size, adam_.slots(), cfg.dense_embedding_adam,
        r == 0 ? nullptr : &replicas_[0]->arena, cfg.batch_size, owned_side_));
    arenas_.push_back(&replicas_.back()->arena);
  }
  RngStream init_rng(cfg.seed, /*stream=*/0);
  replicas_[0]->model.init(init_rng);
  thread_loss_.assign(static_cast<size_t>(t), 0.0);
  for (int s = 0; s < 2; ++s) {
    // Owners by the rows a batch is expected to have: an owner's work is per distinct row.
    owner_[s] = detail::block_owners(detail::batch_presence(weights[s], cfg.batch_size), t);
    owned_[s].assign(static_cast<size_t>(t), {});
    for (size_t r = 0; r < owner_[s].size(); ++r)
      owned_[s][owner_[s][r]].push_back(static_cast<int32_t>(r));
  }
  for (auto& r : replicas_) share_rows_.push_back(&r->rows);
  if (owned_side_ >= 0) {
    Index first = 0;
    for (int r = 0; r < t; ++r) {
      owned_first_row_.push_back(first);
      first += static_cast<Index>(owned_[owned_side_][static_cast<size_t>(r)].size());
      replicas_[static_cast<size_t>(r)]->rows.share_owned_rows(&replicas_[0]->rows);
    }
  }
  // Lazy update, MLP or NeuMF: every share hands its rows' gradients over in compact lists
  // (NcfShareRows::set_hand_over). Rows one replica alone touches (every row on one thread, the
  // split side's rows with several: own_side) are updated by its thread as soon as its share ends;
  // the others by their owners after the barrier, from the replicas' lists
  // (update_shared_rows).
  for (auto& r : replicas_) {
    const bool lazy = !cfg.dense_embedding_adam && r->model.has_mlp();
    r->rows.set_hand_over(0, lazy);
    r->rows.set_hand_over(1, lazy);
  }
  const Index c = model.context;
  if (c > 0) {
    user_context_.assign(static_cast<size_t>(model.num_users * c), 0.0f);
    std::vector<double> sums(user_context_.size(), 0.0);
    std::vector<Index> counts(static_cast<size_t>(model.num_users), 0);
    for (Index p = 0; p < train.size(); ++p) {
      const auto u = static_cast<size_t>(train.users[static_cast<size_t>(p)]);
      ++counts[u];
      for (Index j = 0; j < c; ++j)
        sums[u * static_cast<size_t>(c) + static_cast<size_t>(j)] +=
            train.context[static_cast<size_t>(p * c + j)];
    }
    for (size_t u = 0; u < counts.size(); ++u)
      for (Index j = 0; j < c; ++j)
        if (counts[u] > 0)
          user_context_[u * static_cast<size_t>(c) + static_cast<size_t>(j)] =
              static_cast<float>(sums[u * static_cast<size_t>(c) + static_cast<size_t>(j)] /
                                 static_cast<double>(counts[u]));
  }
}

NcfTrainer::~NcfTrainer() = default;

size_t NcfTrainer::planned_bytes(const models::Ncf<float>::Config& model, const NcfTrainConfig& cfg,
                                 const data::NcfPositives& train) {
  const NcfTrainConfig c = detail::checked(cfg);
  const int t = ThreadPool::resolve(c.threads);
  const Index rows = std::max(std::min((c.batch_size + t - 1) / t, kComputeChunkRows), c.eval_rows);
  // The same replicas as the constructor (optimizer slots as Adam's), measured.
  std::vector<std::unique_ptr<detail::NcfReplica>> replicas;
  size_t bytes = 0;
  for (int r = 0; r < t; ++r) {
    replicas.push_back(std::make_unique<detail::NcfReplica>(
        model, rows, c.batch_size, optim::Adam<float>({.lr = c.lr}).slots(), c.dense_embedding_adam,
        r == 0 ? nullptr : &replicas[0]->arena, c.batch_size));
    bytes += replicas.back()->arena.bytes();
  }
  const auto p = static_cast<size_t>(train.size());
  bytes += p * 2 * sizeof(int32_t) + train.context.size() * sizeof(float);  // train_
  bytes += data::NcfSampler::planned_bytes(train, c.negatives);
  bytes += static_cast<size_t>(model.num_users * model.context) * sizeof(float);
  return bytes;
}
models::Ncf<float>& NcfTrainer::model() {
  return replicas_[0]->model;
}
double NcfTrainer::executed_flops() const {
  double f = 0;
  for (const auto& r : replicas_) f += r->model.executed_flops();
  return f;
}
const Arena& NcfTrainer::arena() const {
  return replicas_[0]->arena;
}

void NcfTrainer::draw_epoch(int epoch) {
  profile::Zone zone(prof_, zones_.sample, sampler_.instances());
  sampler_.draw_epoch(epoch, pool_);
}

void NcfTrainer::set_profiler(profile::Recorder* rec, int model) {
  prof_ = rec;
  if (rec == nullptr) return;
  using profile::AffineCost;
  using profile::Category;
  for (auto& r : replicas_) {
    r->model.register_zones(*rec, model);
    r->rows.register_zones(*rec, model);
  }
  // Memory view: the first replica's arena holds the parameters, the others their own grads,
  // activations and scratch.
  profile::MemoryPlan plan = profile::memory_plan(replicas_[0]->arena, "ncf", model);
  for (size_t i = 1; i < replicas_.size(); ++i) profile::add_replica(plan, replicas_[i]->arena);
  rec->add_memory(std::move(plan));
  const double c = static_cast<double>(train_.context_cols());
  const int replicas = static_cast<int>(replicas_.size());
  // Per instance: a Philox draw or more, the bucket scatter and the materialised instance.
  zones_.sample = rec->zone("data.sample", Category::kData, {{0, 4 * 16}, {}}, model);
  // Per instance: its context row read and written, its row index.
  zones_.batch = rec->zone("data.batch", Category::kData, {{0, 8 * c + 4}, {}}, model);
  // Per batch instance (shares cut by id): its id of the split side read and its bin's count
  // read and written, then its four fields read, and written to the share.
  zones_.share = rec->zone("data.share", Category::kData, {{0, 4 + 8 + 4 * 4 + 4 * 4}, {}}, model);
  // The replica's table row grads of the last step's touched rows, zeroed (and, on threads
  // >= 1, its dense grads): lines the update on another core may just have read.
  zones_.zero_grad = rec->zone("optimizer.zero_grad", Category::kOptimizer, {}, model);
  // Rows: dense parameter elements (reduce the replicas' grads, Adam, zero).
  zones_.dense =
      rec->zone("optimizer.dense", Category::kOptimizer,
                {profile::adam_update(1) + profile::grad_reduce(1, replicas), {}}, model);
  // The touched rows are known only inside: no analytic cost.
  zones_.tables = rec->zone("optimizer.tables", Category::kOptimizer, {}, model);
  zones_.split_tables = rec->zone("optimizer.split_tables", Category::kOptimizer, {}, model);
  zones_.own_rows = rec->zone("optimizer.own_rows", Category::kOptimizer, {}, model);
  zones_.wait = rec->zone("pool.wait", Category::kIdle, {}, model);
  zones_.barrier = rec->zone("pool.barrier", Category::kIdle, {}, model);
  zones_.eval = rec->zone("eval", Category::kEval, {}, model);
}

void NcfTrainer::barrier() {
  profile::Zone zone(prof_, zones_.barrier);
  barrier_.arrive_and_wait(pool_.size());
}

void NcfTrainer::wait_for(const std::atomic<uint64_t>& flag, uint64_t value) {
  spin_until([&] { return flag.load(std::memory_order_acquire) >= value; });
}

// Thread tid's share of the batch (see train_chunks): the last step's gradients cleared, the
// share's instances selected, and its distinct rows listed and projected (NcfShareRows::begin).
void NcfTrainer::open_share(int tid, Index begin, Index n, const Ctx& base) {
  detail::NcfReplica& rep = *replicas_[static_cast<size_t>(tid)];
  const int nt = pool_.size();
  thread_loss_[static_cast<size_t>(tid)] = 0.0;
  rep.handed_valid = false;
  rep.share.count = 0;
  // The last step's table row grads, which the update only read: zeroed by this thread; so
  // are a replica's dense grads (replica 0's were cleared by the update).
  {
    profile::Zone zone(prof_, zones_.zero_grad);
    rep.model.clear_table_grads();
    if (tid > 0) std::fill_n(rep.arena.grads<float>(), rep.arena.dense_param_elems(), 0.0f);
  }
  const Index c = train_.context_cols();
  const auto off = static_cast<size_t>(begin), len = static_cast<size_t>(n);
  std::span<const int32_t> users = sampler_.users().subspan(off, len);
  std::span<const int32_t> items = sampler_.items().subspan(off, len);
  std::span<const int32_t> ctx_rows =
      c > 0 ? sampler_.context_rows().subspan(off, len) : std::span<const int32_t>{};
  const float* labels = sampler_.labels().data() + off;
  Index count = n;
  if (split_side_ < 0) {
    const Range r = split_range(n, tid, nt);
    const auto rb = static_cast<size_t>(r.begin), rn = static_cast<size_t>(r.size());
    users = users.subspan(rb, rn);
    items = items.subspan(rb, rn);
    if (c > 0) ctx_rows = ctx_rows.subspan(rb, rn);
    labels += r.begin;
    count = r.size();
  } else {
    // The share: the batch's instances of this thread's ids of the split side, in batch order.
    // The ids are cut into T ranges by the batch's own counts (detail::share_bins), so that
    // the shares are as equal as whole bins of ids allow (with fixed owners they differed by
    // ≈ √B instances, which the step's barrier paid). A row of the split side is then touched
    // by one replica in a step, and updated on this thread; a row near a cut changes threads
    // from batch to batch (the other side's rows do every step).
    profile::Zone zone(prof_, zones_.share, n);
    const std::span<const int32_t> keys = split_side_ == 0 ? users : items;
    const std::span<const int32_t> others = split_side_ == 0 ? items : users;
    int32_t* bins = rep.bins.view.data;
    const int shift = bin_shift_;
    const Index nbins = bins_;
    std::fill_n(bins, nbins, 0);
    for (const int32_t k : keys) ++bins[k >> shift];
    const Range r =
        detail::share_bins(std::span<const int32_t>(bins, static_cast<size_t>(nbins)), n, tid, nt);
    int32_t* su = rep.share_users.view.data;
    int32_t* si = rep.share_items.view.data;
    int32_t* sc = rep.share_ctx_rows.view.data;
    float* sl = rep.share_labels.view.data;
    const Index m = kernels::select_range(
        n, static_cast<int32_t>(r.begin << shift),
        static_cast<int32_t>(std::min<Index>(r.end << shift, std::numeric_limits<int32_t>::max())),
        keys.data(), others.data(), c > 0 ? ctx_rows.data() : nullptr, labels,
        split_side_ == 0 ? su : si, split_side_ == 0 ? si : su, sc, sl);
    count = m;
    const auto cm = static_cast<size_t>(m);
    users = std::span<const int32_t>(su, cm);
    items = std::span<const int32_t>(si, cm);
    if (c > 0) ctx_rows = std::span<const int32_t>(sc, cm);
    labels = sl;
  }
  if (count == 0) return;
  rep.share = {.users = users,
               .items = items,
               .ctx_rows = ctx_rows,
               .labels = labels,
               .count = count,
               .fraction = static_cast<double>(count) / static_cast<double>(n)};
  // The first chunk's context rows are fetched while the share's distinct MLP rows are
  // projected (once for all its chunks, NcfShareRows::begin). Later chunks' are not prefetched
  // during the chunk before them: from inside the fused pass, those prefetches cost the pass
  // more than they saved the gather.
  const float* table = train_.context.data();
  if (c > 0)
    for (Index i = 0; i < std::min(count, kComputeChunkRows); ++i)
      prefetch_span(table + static_cast<Index>(ctx_rows[static_cast<size_t>(i)]) * c, c);
  Ctx ctx = base;
  ctx.thread = tid;
  rep.rows.begin(ctx, users, items);
}

// The opened share in chunks of kComputeChunkRows rows: context gather, forward, loss,
// backward per chunk, so that a chunk's activations and their gradients (the tower input is
// 340 bytes per row) stay in L2 between forward and backward instead of streaming the whole
// share through memory. Dense grads and table row grads accumulate over the chunks (in chunk
// order: deterministic for a given thread count). Returns the share's summed loss.
double NcfTrainer::train_chunks(int tid, const Ctx& base) {
  detail::NcfReplica& rep = *replicas_[static_cast<size_t>(tid)];
  const detail::NcfReplica::Share& sh = rep.share;
  const Index count = sh.count;
  if (count == 0) return 0;
  const Index c = train_.context_cols();
  Ctx ctx = base;
  ctx.thread = tid;
  // The share's mean loss weighted by its share of the batch: the replicas' gradients then
  // sum to the gradient of the batch mean. Loss and dlogits in one fused pass (kernels/bce.h).
  const double rows = static_cast<double>(count);
  const auto scale = static_cast<float>(sh.fraction / rows);
  const float* table = train_.context.data();
  double sum = 0;
  for (Index c0 = 0; c0 < count; c0 += kComputeChunkRows) {
    const Index m = std::min(kComputeChunkRows, count - c0);
    const auto cu = static_cast<size_t>(c0), cm = static_cast<size_t>(m);
    // The context rows go straight into the tower input (forward then skips its copy).
    const MatView<float> context = c > 0 ? rep.model.context_slot(m) : MatView<float>{};
    if (c > 0) {
      profile::Zone zone(prof_, zones_.batch, m);
      // The rows are random positives of a large table: prefetch ahead, across the chunk's
      // end, every line of a row (at C = 21 a quarter of the rows span three lines; prefetching
      // two of them left the third to a demand miss: the gather took 10-20% longer).
      constexpr Index kAhead = 32;
      for (Index i = 0; i < m; ++i) {
        const Index ahead = c0 + i + kAhead;
        if (ahead < count)
          prefetch_span(table + static_cast<Index>(sh.ctx_rows[static_cast<size_t>(ahead)]) * c, c);
        copy_row(table + static_cast<Index>(sh.ctx_rows[cu + static_cast<size_t>(i)]) * c, c,
                 context.row(i));
      }
    }
    sum += rep.rows.train_chunk(ctx, sh.users.subspan(cu, cm), sh.items.subspan(cu, cm), context,
                                sh.labels + c0, scale);
  }
  return sum;
}

// The share's end after its chunks (sum: their loss): the distinct rows' backward
// (NcfShareRows::end), its loss, and the rows only this replica touched updated.
void NcfTrainer::close_share(int tid, const Ctx& base, double sum) {
  detail::NcfReplica& rep = *replicas_[static_cast<size_t>(tid)];
  const detail::NcfReplica::Share& sh = rep.share;
  if (sh.count == 0) return;
  Ctx ctx = base;
  ctx.thread = tid;
  rep.rows.end(ctx);
  thread_loss_[static_cast<size_t>(tid)] = sh.fraction * (sum / static_cast<double>(sh.count));
  rep.handed_valid = true;
  // The MLP and GMF rows only this replica touched, updated where their gradients were formed
  // (see the constructor); not when this share's loss is not finite (the step then throws).
  if (!std::isfinite(thread_loss_[static_cast<size_t>(tid)])) return;
  profile::Zone zone(prof_, zones_.own_rows);
  for (int s = 0; s < 2; ++s) {
    if (!own_side(s)) continue;
    const auto g = rep.rows.row_grads(s);
    if (g.rows.empty()) continue;
    update_rows(s, g);
  }
}

namespace {

// One thread's failure in a step: its work after a failure is skipped, but the thread still
// passes every barrier (so the others never wait for it), and the error is rethrown after the
// last one. `any` tells every thread that some share failed.
struct StepFailure {
  std::atomic<bool>& any;
  std::exception_ptr error;

  template <class Work>
  void guard(Work&& work) {
    if (error) return;
    try {
      work();
    } catch (...) {
      error = std::current_exception();
      any.store(true, std::memory_order_relaxed);
    }
  }
};

}  // namespace

// Rows by owner: the owner's projection of the batch's rows of its owned side.
void NcfTrainer::project_owned_rows(int tid, Index begin, Index n, const Ctx& base) {
  Ctx ctx = base;
  ctx.thread = tid;
  const std::span<const int32_t> ids = owned_side_ == 0 ? sampler_.users() : sampler_.items();
  replicas_[static_cast<size_t>(tid)]->rows.project_owned_rows(
      ctx, ids.subspan(static_cast<size_t>(begin), static_cast<size_t>(n)),
      owned_[owned_side_][static_cast<size_t>(tid)], owned_first_row_[static_cast<size_t>(tid)]);
}

// Rows by owner: the owned rows' backward, once every replica's owned sums of step `seq` are
// final; their dW lands in this replica's grads, which the dense update reads after the step's
// barrier.
NcfShareRows<float>::RowGrads NcfTrainer::backward_owned_rows(int tid, const Ctx& base) {
  constexpr int kMaxReplicas = 256;
  SHOAL_DCHECK(pool_.size() <= kMaxReplicas);
  NcfShareRows<float>* sharers[kMaxReplicas];
  size_t n_sharers = 0;
  for (const auto& r : replicas_)
    if (r->share.count > 0) sharers[n_sharers++] = &r->rows;
  Ctx ctx = base;
  ctx.thread = tid;
  return replicas_[static_cast<size_t>(tid)]->rows.backward_owned_rows(
      ctx, std::span(sharers, n_sharers));
}

void NcfTrainer::wait_for_owned_sums(uint64_t seq) {
  profile::Zone zone(prof_, zones_.barrier);
  for (const auto& r : replicas_) wait_for(r->owned_sums_step, seq);
}

// The replicas' dense grads summed into replica 0's over this thread's chunk, in replica order
// (a replica k >= 1 is only read: it clears its own grads at the start of its next share, so no
// core writes another replica's lines), Adam, and the chunk's grads cleared.
void NcfTrainer::update_dense(int tid) {
  profile::Zone zone(
      prof_, zones_.dense,
      split_range(arenas_[0]->dense_param_elems(), tid, pool_.size(), kParamGrain).size());
  const Range r =
      reduce_grads_chunk<float, false>(std::span<const Arena* const>(arenas_), tid, pool_.size());
  adam_.update(*arenas_[0], r.begin, r.end);
  zero_grads<float>(*arenas_[0], r);
}

// The embedding rows the step touched: the owned rows, the rows several replicas share, then the
// tables (those of the split side already, when they were updated before the barrier).
void NcfTrainer::update_row_tables(int tid, const NcfShareRows<float>::RowGrads& owned_rows) {
  profile::Zone zone(prof_, zones_.tables);
  if (!owned_rows.rows.empty()) update_rows(owned_side_, owned_rows);
  update_shared_rows(tid);
  update_tables(tid, early_split_updates() ? TableSet::kOtherSide : TableSet::kAll);
  // Every owner has read this replica's owned sums (before the last barrier).
  if (owned_side_ >= 0) replicas_[static_cast<size_t>(tid)]->rows.clear_owned_sums(share_rows_);
}

// One parallel region per step, in phases: each thread opens its share of the batch (with rows
// by owner, NcfShareRows::share_owned_rows, the owners first project the batch's rows of the
// owned side, behind one barrier), trains it and closes it (its split-side rows updated at
// once, while the others finish); with rows by owner it then marks its owned sums final and
// runs the backward of the rows it owns once every replica's are. One barrier: every share's
// loss and gradients are written. Every thread sums the shares' losses in the same order, so
// all agree whether the step is finite; a non-finite step skips the update and throws after the
// region, before it could poison the weights. Then the update: the dense parameters by chunk,
// then the touched embedding rows.
void NcfTrainer::step(Index begin, Index end) {
  const Index n = end - begin;
  Ctx base;
  base.seed = cfg_.seed;
  base.step = static_cast<uint64_t>(adam_.step_count());
  base.n_threads = pool_.size();
  base.profiler = prof_;
  adam_.begin_step();
  sparse_adam_.begin_step();
  const auto t0 = std::chrono::steady_clock::now();
  auto t1 = t0;
  bool finite = true;
  share_failed_.store(false, std::memory_order_relaxed);
  const uint64_t seq = ++step_seq_;
  {
    profile::Zone wait(prof_, zones_.wait);
    pool_.run([&](int tid) {
      const auto failed = [&] { return share_failed_.load(std::memory_order_relaxed); };
      StepFailure f{share_failed_, nullptr};
      f.guard([&] { open_share(tid, begin, n, base); });
      if (owned_side_ >= 0) {
        f.guard([&] { project_owned_rows(tid, begin, n, base); });
        barrier();
      }
      // Not after a failure before: rows by owner, its share's rows may be unprojected.
      double sum = 0;
      if (!failed()) f.guard([&] { sum = train_chunks(tid, base); });
      // Rows by owner: this replica's owned sums are final, whatever happened (the owners wait
      // for it).
      if (owned_side_ >= 0)
        replicas_[static_cast<size_t>(tid)]->owned_sums_step.store(seq, std::memory_order_release);
      if (!f.error) f.guard([&] { close_share(tid, base, sum); });
      // If another share's loss is not finite, the step throws after the barrier with these
      // rows already updated.
      if (!f.error && early_split_updates() &&
          std::isfinite(thread_loss_[static_cast<size_t>(tid)])) {
        profile::Zone zone(prof_, zones_.split_tables);
        update_tables(tid, TableSet::kSplitSide);
      }
      NcfShareRows<float>::RowGrads owned_rows;
      if (owned_side_ >= 0) {
        wait_for_owned_sums(seq);
        if (!failed()) f.guard([&] { owned_rows = backward_owned_rows(tid, base); });
      }
      barrier();
      if (f.error) std::rethrow_exception(f.error);
      if (failed()) return;
      double loss = 0;
      for (const double l : thread_loss_) loss += l;
      if (tid == 0) {
        t1 = std::chrono::steady_clock::now();
        finite = std::isfinite(loss);
      }
      if (!std::isfinite(loss)) return;
      update_dense(tid);
      update_row_tables(tid, owned_rows);
    });
  }
  if (!finite) throw_non_finite_loss(adam_.step_count(), arenas_);
  const auto t2 = std::chrono::steady_clock::now();
  compute_seconds_ += std::chrono::duration<double>(t1 - t0).count();
  update_seconds_ += std::chrono::duration<double>(t2 - t1).count();
  if (prof_ != nullptr) prof_->step();
}

NcfEpochReport NcfTrainer::train_epoch() {
  const auto t0 = std::chrono::steady_clock::now();
  ++epoch_;
  draw_epoch(epoch_);
  NcfEpochReport rep;
  rep.epoch = epoch_;
  rep.sample_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Index n = sampler_.instances();
  const double compute0 = compute_seconds_, update0 = update_seconds_;
  double loss_sum = 0;
  for (Index b = 0; b < n; b += cfg_.batch_size) {
    step(b, std::min(n, b + cfg_.batch_size));
    for (double l : thread_loss_) loss_sum += l;
    ++rep.steps;
  }
  rep.instances = n;
  rep.compute_seconds = compute_seconds_ - compute0;
  rep.update_seconds = update_seconds_ - update0;
  rep.loss = rep.steps > 0 ? loss_sum / static_cast<double>(rep.steps) : 0.0;
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

NcfMetrics NcfTrainer::evaluate(const data::NcfTestSet& test, Index k) {
  profile::Zone zone(prof_, zones_.eval, test.size());
  return detail::evaluate_replicas(pool_, replicas_, test, k,
                                   user_context_.empty() ? nullptr : user_context_.data());
}

// ---- NcfSyntheticRun ----

models::Ncf<float>::Config NcfSyntheticRun::model_config(const NcfSyntheticConfig& cfg) {
  return {.kind = models::NcfKind::kNeuMf,
          .num_users = cfg.users,
          .num_items = cfg.items,
          .factors = 8,
          .layers = {64, 32, 16, 8},
          .context = cfg.context};
}

NcfSyntheticRun::NcfSyntheticRun(const NcfSyntheticConfig& cfg)
    : data_(data::synth_ncf_positives(cfg.positives, cfg.users, cfg.items, cfg.context, cfg.seed)),
      batch_(cfg.batch_positives * (1 + cfg.negatives)) {
  NcfTrainConfig tc;
  tc.batch_size = batch_;
  tc.negatives = cfg.negatives;
  tc.seed = cfg.seed;
  tc.threads = cfg.threads;
  tc.pinning = cfg.pinning;
  trainer_ = std::make_unique<NcfTrainer>(model_config(cfg), tc, data_);
}

int64_t NcfSyntheticRun::run(int64_t steps) {
  const Index n = trainer_->instances_per_epoch();
  if (n == 0) return 0;
  int64_t done = 0;
  while (steps == 0 ? done == 0 || next_ < n : done < steps) {
    if (epoch_ == 0 || next_ >= n) {
      trainer_->draw_epoch(++epoch_);
      next_ = 0;
    }
    const Index end = std::min(n, next_ + batch_);
    trainer_->step(next_, end);
    next_ = end;
    ++done;
  }
  return done;
}

double profile_ncf_steps(profile::Recorder& rec, NcfSyntheticRun& run, int64_t steps) {
  run.trainer().set_profiler(&rec);
  const auto t0 = std::chrono::steady_clock::now();
  rec.start();
  run.run(steps);
  rec.stop();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  run.trainer().set_profiler(nullptr);
  return s;
}

}  // namespace shoal::train
