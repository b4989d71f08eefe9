#include "shoal/train/ncf_trainer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <span>
#include <thread>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "shoal/core/copy_row.h"
#include "shoal/core/prefetch.h"
#include "shoal/train/checks.h"
#include "shoal/train/data_parallel.h"

namespace shoal::train {

namespace {
// Rows per forward/backward chunk of a thread's share (see train_chunks).
constexpr Index kComputeChunkRows = 256;

// dst[0, n) += src[0, n): a row gradient summed into another (the replicas' sums).
void add_row(float* __restrict dst, const float* __restrict src, Index n) {
  for (Index j = 0; j < n; ++j) dst[j] += src[j];
}

// Waits for done(): spins first (the other threads are normally a few µs behind), then yields
// the core: on a loaded machine the thread waited for may be waiting for this very core.
template <class Done>
void spin_until(Done done) {
  for (int spin = 0; !done(); ++spin) {
    if (spin < 4096) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }
}

// The instances k < n whose key (the split side's id) is in [lo, hi), in order: their four
// fields (key, the other side's id, context row, label) copied to the out arrays (room for n
// each). Returns their count. With AVX2, eight instances at a time: the selected lanes packed
// to the front by one permutation per field and stored (the stores past the count are
// overwritten by the next ones), a third of the scalar loop's time.
Index select_range(Index n, int32_t lo, int32_t hi, const int32_t* keys, const int32_t* others,
                   const int32_t* ctx_rows, const float* labels, int32_t* out_keys,
                   int32_t* out_others, int32_t* out_ctx_rows, float* out_labels) {
  Index m = 0, k = 0;
#if defined(__AVX2__)
  // Per 8-bit lane mask: the selected lanes' indices, in order, one per nibble.
  static constexpr auto kPack = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t mask = 0; mask < 256; ++mask) {
      uint32_t packed = 0, j = 0;
      for (uint32_t l = 0; l < 8; ++l)
        if ((mask >> l) & 1u) packed |= l << (4 * j++);
      t[mask] = packed;
    }
    return t;
  }();
  const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m256i below = _mm256_set1_epi32(lo - 1), last = _mm256_set1_epi32(hi - 1);
  for (; k + 8 <= n; k += 8) {
    const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(keys + k));
    const __m256i in =
        _mm256_andnot_si256(_mm256_cmpgt_epi32(u, last), _mm256_cmpgt_epi32(u, below));
    const auto mask = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(in)));
    // permutevar8x32 reads only each lane's low three bits: no mask after the shift.
    const __m256i perm =
        _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(kPack[mask])), shifts);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out_keys + m),
                        _mm256_permutevar8x32_epi32(u, perm));
    _mm256_storeu_si256(
        reinterpret_cast<__m256i*>(out_others + m),
        _mm256_permutevar8x32_epi32(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(others + k)), perm));
    if (ctx_rows != nullptr)
      _mm256_storeu_si256(
          reinterpret_cast<__m256i*>(out_ctx_rows + m),
          _mm256_permutevar8x32_epi32(
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ctx_rows + k)), perm));
    _mm256_storeu_ps(out_labels + m, _mm256_permutevar8x32_ps(_mm256_loadu_ps(labels + k), perm));
    m += std::popcount(mask);
  }
#endif
  for (; k < n; ++k) {
    const int32_t u = keys[k];
    out_keys[m] = u;
    out_others[m] = others[k];
    if (ctx_rows != nullptr) out_ctx_rows[m] = ctx_rows[k];
    out_labels[m] = labels[k];
    m += u >= lo && u < hi ? 1 : 0;
  }
  return m;
}
}  // namespace

namespace detail {

// One thread's model and buffers. Replica 0 owns params and optimizer state; the others share
// its params. merge_*, grad_ptrs are the thread's scratch for the sparse table updates.
struct NcfReplica {
  models::Ncf<float> model;
  Buffer<int32_t> users, items;            // [R] evaluation candidates
  Buffer<float> context;                   // [R, C]
  std::vector<Buffer<int32_t>> merge_ids;  // per table [U]: the step's touched rows
  std::vector<Buffer<float>> merge_grad;  // per table [min(B, U), D]: rows several replicas touched
  std::vector<const float*> grad_ptrs;    // [max over tables of min(B, U)]: the rows' gradients
  std::vector<Buffer<int32_t>> all_ids;   // per table [U] = 0..U-1, dense_embedding_adam
  // The merge of a side's handed-over rows (NcfTrainer::update_shared_rows), per table row of
  // side s: the merge that last saw it (stamp, against gen), its MLP and GMF gradient rows, and
  // its row in merge_grad once several replicas' gradients are summed (-1 until then).
  struct SharedRows {
    std::vector<int32_t> stamp, merged;
    std::vector<const float*> mlp, gmf;
    int32_t gen = 0;
  } shared[2];
  std::vector<const float*> gmf_ptrs;  // [U of the side]: beside grad_ptrs, the GMF rows'
  // Whether share_row_grads holds this step's share (a thread with no instances in a batch
  // opens no share; its lists are then the last step's).
  bool handed_valid = false;
  // With several threads: this thread's share of a batch, the instances of its users
  // (NcfTrainer::open_share), gathered from the epoch's arrays [B].
  Buffer<int32_t> share_users, share_items, share_ctx_rows;
  Buffer<float> share_labels;
  Buffer<int32_t> bins;  // [bins ≤ rows of the split side]: the batch's instances per bin
  // The step's share (NcfTrainer::open_share, train_chunks, close_share): its instances, and its
  // fraction of the batch. count 0: no share opened this step.
  struct Share {
    std::span<const int32_t> users, items, ctx_rows;
    const float* labels = nullptr;
    Index count = 0;
    double fraction = 0;
  } share;
  // Rows by owner: the last step (NcfTrainer::step_seq_) whose owned sums this replica has
  // finished; the owners wait for it before their backward.
  alignas(64) std::atomic<uint64_t> owned_sums_step{0};
  Arena arena;

  // rows: per forward/backward chunk; share_rows: a thread's share of a batch (0: rows).
  // owned_side: plan for Ncf::share_owned_rows.
  NcfReplica(const models::Ncf<float>::Config& cfg, Index rows, Index merge_rows, int optim_slots,
             bool dense_tables, const Arena* source, Index share_rows = 0, int owned_side = -1)
      : model(cfg) {
    Planner planner;
    planner.set_optim_slots(source ? 0 : optim_slots);
    model.plan(planner, rows, share_rows, owned_side);
    if (share_rows > 0) {
      planner.buffer(share_users, Region::kScratch, "share.users", {share_rows});
      planner.buffer(share_items, Region::kScratch, "share.items", {share_rows});
      planner.buffer(share_ctx_rows, Region::kScratch, "share.context_rows", {share_rows});
      planner.buffer(share_labels, Region::kScratch, "share.labels", {share_rows});
      planner.buffer(bins, Region::kScratch, "share.bins",
                     {std::max(cfg.num_users, cfg.num_items)});
    }
    planner.buffer(users, Region::kActivations, "batch.users", {rows});
    planner.buffer(items, Region::kActivations, "batch.items", {rows});
    planner.buffer(context, Region::kActivations, "batch.context",
                   {rows, std::max<Index>(cfg.context, 1)});
    const size_t nt = model.tables().size();
    merge_ids.resize(nt);
    merge_grad.resize(nt);
    if (merge_rows > 0 && !dense_tables) {
      for (size_t t = 0; t < nt; ++t) {
        const auto& e = model.tables()[t];
        const Index m = std::min(merge_rows, e.layer.cfg.num_embeddings);
        planner.buffer(merge_ids[t], Region::kScratch, e.name + ".merge_ids",
                       {e.layer.cfg.num_embeddings});
        planner.buffer(merge_grad[t], Region::kScratch, e.name + ".merge_grad",
                       {m, e.layer.cfg.embedding_dim});
        grad_ptrs.resize(std::max(grad_ptrs.size(), static_cast<size_t>(m)));
      }
    }
    if (merge_rows > 0 && !dense_tables && model.has_mlp() && cfg.factored_first_layer) {
      for (int side = 0; side < 2; ++side) {
        const auto rows_of_side = static_cast<size_t>(side == 0 ? cfg.num_users : cfg.num_items);
        SharedRows& sr = shared[side];
        sr.stamp.assign(rows_of_side, 0);
        sr.merged.assign(rows_of_side, -1);
        sr.mlp.assign(rows_of_side, nullptr);
        sr.gmf.assign(rows_of_side, nullptr);
        grad_ptrs.resize(std::max(grad_ptrs.size(), rows_of_side));
        gmf_ptrs.resize(std::max(gmf_ptrs.size(), rows_of_side));
      }
    }
    if (dense_tables && source == nullptr) {
      all_ids.resize(nt);
      for (size_t t = 0; t < nt; ++t) {
        const auto& e = model.tables()[t];
        planner.buffer(all_ids[t], Region::kScratch, e.name + ".all_ids",
                       {e.layer.cfg.num_embeddings});
      }
    }
    arena = source ? Arena(std::move(planner), *source) : Arena(std::move(planner));
    for (auto& ids : all_ids)
      for (Index i = 0; i < ids.view.numel(); ++i) ids.view.data[i] = static_cast<int32_t>(i);
  }
};

namespace {

// Validates before any member (the optimizer checks lr too, with a less specific message).
const NcfTrainConfig& checked(const NcfTrainConfig& c) {
  check_lr_and_batch(c.lr, c.batch_size);
  return c;
}

using ReplicaList = std::vector<std::unique_ptr<NcfReplica>>;

// Rank of candidate `pos` under the evaluate.py rule (see the header).
Index rank_of(const float* scores, Index count, Index pos) {
  const float s = scores[pos];
  Index rank = 0;
  for (Index c = 0; c < count; ++c) rank += (scores[c] > s || (scores[c] == s && c < pos)) ? 1 : 0;
  return rank;
}

NcfMetrics evaluate_replicas(ThreadPool& pool, ReplicaList& reps, const data::NcfTestSet& test,
                             Index k, const float* user_context) {
  const auto t0 = std::chrono::steady_clock::now();
  const Index kneg = test.negatives_per_user;
  const Index cands = kneg + 1;
  const Index rows = reps[0]->users.view.numel();
  SHOAL_CHECK(rows >= cands, "evaluation needs {} rows per chunk, planned {}", cands, rows);
  SHOAL_CHECK(k > 0, "top-k must be > 0, got {}", k);
  const auto& cfg = reps[0]->model.config();
  SHOAL_CHECK(test.num_users <= cfg.num_users && test.num_items <= cfg.num_items,
              "test ids (users < {}, items < {}) exceed the model's {} users and {} items",
              test.num_users, test.num_items, cfg.num_users, cfg.num_items);
  const Index per_chunk = rows / cands;
  const int nt = pool.size();
  constexpr int kMaxThreads = 256;  // fixed arrays: evaluation allocates nothing
  SHOAL_CHECK(nt <= kMaxThreads, "at most {} threads, got {}", kMaxThreads, nt);
  double hr[kMaxThreads] = {}, ndcg[kMaxThreads] = {};
  pool.run([&](int tid) {
    NcfReplica& rep = *reps[static_cast<size_t>(tid)];
    const Range r = split_range(test.size(), tid, nt);
    Ctx ctx;
    ctx.training = false;
    ctx.thread = tid;
    ctx.n_threads = nt;
    Index pos_at[1024];  // per chunk user: the positive's candidate index
    Index count_at[1024];
    const Index chunk_users = std::min<Index>(per_chunk, 1024);
    for (Index u0 = r.begin; u0 < r.end; u0 += chunk_users) {
      const Index nu = std::min(chunk_users, r.end - u0);
      Index n = 0;
      for (Index j = 0; j < nu; ++j) {
        const auto row = static_cast<size_t>(u0 + j);
        const int32_t user = test.users[row], item = test.items[row];
        const int32_t* neg = test.negatives.data() + row * static_cast<size_t>(kneg);
        Index pos = -1;
        const Index start = n;
        for (Index c = 0; c < kneg; ++c) {
          if (neg[c] == item && pos < 0) pos = n - start;
          rep.users.view.data[n] = user;
          rep.items.view.data[n] = neg[c];
          ++n;
        }
        if (pos < 0) {
          pos = n - start;
          rep.users.view.data[n] = user;
          rep.items.view.data[n] = item;
          ++n;
        }
        pos_at[j] = pos;
        count_at[j] = n - start;
        if (cfg.context > 0)
          for (Index c = start; c < n; ++c)
            std::copy_n(user_context + static_cast<Index>(user) * cfg.context, cfg.context,
                        rep.context.view.data + c * cfg.context);
      }
      const MatView<float> out = rep.model.forward(
          ctx, std::span<const int32_t>(rep.users.view.data, static_cast<size_t>(n)),
          std::span<const int32_t>(rep.items.view.data, static_cast<size_t>(n)),
          ConstMat<float>(rep.context.view.data, n, cfg.context));
      Index off = 0;
      for (Index j = 0; j < nu; ++j) {
        const Index rank = rank_of(out.data + off, count_at[j], pos_at[j]);
        if (rank < k) {
          hr[static_cast<size_t>(tid)] += 1.0;
          ndcg[static_cast<size_t>(tid)] += std::log(2.0) / std::log(static_cast<double>(rank) + 2);
        }
        off += count_at[j];
      }
    }
  });
  NcfMetrics m;
  m.users = test.size();
  for (int t = 0; t < nt; ++t) {
    m.hr += hr[static_cast<size_t>(t)];
    m.ndcg += ndcg[static_cast<size_t>(t)];
  }
  if (m.users > 0) {
    m.hr /= static_cast<double>(m.users);
    m.ndcg /= static_cast<double>(m.users);
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

}  // namespace
}  // namespace detail

// ---- NcfEvaluator ----

NcfEvaluator::NcfEvaluator(const models::Ncf<float>::Config& cfg, int threads, Index rows,
                           Pinning pinning)
    : pool_(threads, pinning) {
  for (int t = 0; t < pool_.size(); ++t)
    replicas_.push_back(std::make_unique<detail::NcfReplica>(
        cfg, rows, 0, 0, false, t == 0 ? nullptr : &replicas_[0]->arena));
}
NcfEvaluator::~NcfEvaluator() = default;
models::Ncf<float>& NcfEvaluator::model() {
  return replicas_[0]->model;
}
const Arena& NcfEvaluator::arena() const {
  return replicas_[0]->arena;
}
NcfMetrics NcfEvaluator::evaluate(const data::NcfTestSet& test, Index k,
                                  const float* user_context) {
  return detail::evaluate_replicas(pool_, replicas_, test, k, user_context);
}

// ---- NcfTrainer ----

// Rows are owned in blocks of consecutive ids, not by id % threads: a core's prefetchers also
// fetch the lines next to those it touches, so with interleaved owners every row a thread
// updated pulled in lines of the neighbouring rows, which the other thread was writing, and
// those lines went back and forth between the cores. Two threads on the user-shaped data:
// 82 ns per MLP user row updated against 24 ns on one thread; with blocks of ≈ 64 rows a step
// was 12% faster, and blocks of up to 256 rows (≈ 160 users, ≈ 190 items at the user's scale)
// gained 3% more (docs/ncf-speed-log.md, Session 10).
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
  // share has it (docs/ncf-speed-log.md, Sessions 19 and 22).
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
  for (auto& r : replicas_) models_.push_back(&r->model);
  if (owned_side_ >= 0) {
    Index first = 0;
    for (int r = 0; r < t; ++r) {
      owned_first_row_.push_back(first);
      first += static_cast<Index>(owned_[owned_side_][static_cast<size_t>(r)].size());
      replicas_[static_cast<size_t>(r)]->model.share_owned_rows(&replicas_[0]->model);
    }
  }
  // Lazy update, MLP or NeuMF: every share hands its rows' gradients over in compact lists
  // (Ncf::set_hand_over). Rows one replica alone touches (every row on one thread, the split
  // side's rows with several: own_side) are updated by its thread as soon as its share ends;
  // the others by their owners after the barrier, from the replicas' lists
  // (update_shared_rows).
  for (auto& r : replicas_) {
    const bool lazy = !cfg.dense_embedding_adam && r->model.has_mlp();
    r->model.set_hand_over(0, lazy);
    r->model.set_hand_over(1, lazy);
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
  for (auto& r : replicas_) r->model.register_zones(*rec, model);
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
  const int n = pool_.size();
  if (n == 1) return;
  const uint32_t phase = barrier_phase_.load(std::memory_order_acquire);
  if (barrier_count_.fetch_add(1, std::memory_order_acq_rel) == n - 1) {
    barrier_count_.store(0, std::memory_order_relaxed);
    barrier_phase_.store(phase + 1, std::memory_order_release);
    return;
  }
  spin_until([&] { return barrier_phase_.load(std::memory_order_acquire) != phase; });
}

void NcfTrainer::wait_for(const std::atomic<uint64_t>& flag, uint64_t value) {
  spin_until([&] { return flag.load(std::memory_order_acquire) >= value; });
}

// Thread tid's share of the batch (see train_chunks): the last step's gradients cleared, the
// share's instances selected, and its distinct rows listed and projected (Ncf::begin_share).
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
    const Index m = select_range(
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
  // projected (once for all its chunks, Ncf::begin_share). Later chunks' are not prefetched
  // during the chunk before them: from inside the fused pass, those prefetches cost the pass
  // more than they saved the gather (docs/ncf-speed-log.md, Session 12).
  const float* table = train_.context.data();
  if (c > 0)
    for (Index i = 0; i < std::min(count, kComputeChunkRows); ++i)
      prefetch_span(table + static_cast<Index>(ctx_rows[static_cast<size_t>(i)]) * c, c);
  Ctx ctx = base;
  ctx.thread = tid;
  rep.model.begin_share(ctx, users, items);
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
  // sum to the gradient of the batch mean. Loss and dlogits in one fused pass (bce_fused.h).
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
    sum += rep.model.train_chunk(ctx, sh.users.subspan(cu, cm), sh.items.subspan(cu, cm), context,
                                 sh.labels + c0, scale);
  }
  return sum;
}

// The share's end after its chunks (sum: their loss): the distinct rows' backward
// (Ncf::end_share), its loss, and the rows only this replica touched updated.
void NcfTrainer::close_share(int tid, const Ctx& base, double sum) {
  detail::NcfReplica& rep = *replicas_[static_cast<size_t>(tid)];
  const detail::NcfReplica::Share& sh = rep.share;
  if (sh.count == 0) return;
  Ctx ctx = base;
  ctx.thread = tid;
  rep.model.end_share(ctx);
  thread_loss_[static_cast<size_t>(tid)] = sh.fraction * (sum / static_cast<double>(sh.count));
  rep.handed_valid = true;
  // The MLP and GMF rows only this replica touched, updated where their gradients were formed
  // (see the constructor); not when this share's loss is not finite (the step then throws).
  if (!std::isfinite(thread_loss_[static_cast<size_t>(tid)])) return;
  profile::Zone zone(prof_, zones_.own_rows);
  for (int s = 0; s < 2; ++s) {
    if (!own_side(s)) continue;
    const auto g = rep.model.share_row_grads(s);
    if (g.rows.empty()) continue;
    update_rows(s, g);
  }
}

// Sparse Adam on side s's rows from their compact MLP and GMF gradients.
void NcfTrainer::update_rows(int s, const models::Ncf<float>::RowGrads& g) {
  auto& model = replicas_[0]->model;
  using Rows = optim::SparseAdam<float>::TableRows;
  const Rows tables[] = {
      {&model.mlp_table(s).layer.p.weight, g.grads},
      {model.has_gmf() ? &model.gmf_table(s).layer.p.weight : nullptr, g.gmf_grads}};
  sparse_adam_.update_rows(replicas_[0]->arena, g.rows,
                           std::span<const Rows>(tables, model.has_gmf() ? 2 : 1));
}

// One parallel region per step: the shares are opened and trained, one barrier (every share's
// loss and gradients are written), then the update. With rows by owner (Ncf::share_owned_rows)
// the owners project the batch's rows of the owned side before the shares train, behind one
// more barrier; each replica marks its owned sums final after its chunks, and each owner runs
// its rows' backward once every replica's are, before the step's barrier (so its dW is in the
// grads the dense reduction reads after it). Every thread
// sums the shares' losses in the same order, so all agree whether the step is finite; a
// non-finite step skips the update and throws after the region, before it could poison the
// weights. A thread whose work throws still passes every barrier (and marks its owned sums), so
// the others never wait for it; the exception is rethrown after the region.
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
      std::exception_ptr error;
      auto guarded = [&](auto&& work) {
        if (error) return;
        try {
          work();
        } catch (...) {
          error = std::current_exception();
          share_failed_.store(true, std::memory_order_relaxed);
        }
      };
      auto sync = [&] {
        profile::Zone zone(prof_, zones_.barrier);
        barrier();
      };
      guarded([&] { open_share(tid, begin, n, base); });
      if (owned_side_ >= 0) {
        guarded([&] {
          Ctx ctx = base;
          ctx.thread = tid;
          const std::span<const int32_t> ids =
              owned_side_ == 0 ? sampler_.users() : sampler_.items();
          replicas_[static_cast<size_t>(tid)]->model.project_owned_rows(
              ctx, ids.subspan(static_cast<size_t>(begin), static_cast<size_t>(n)),
              owned_[owned_side_][static_cast<size_t>(tid)],
              owned_first_row_[static_cast<size_t>(tid)]);
        });
        sync();
      }
      // Not after a failure before: rows by owner, its share's rows may be unprojected.
      double sum = 0;
      if (!share_failed_.load(std::memory_order_relaxed))
        guarded([&] { sum = train_chunks(tid, base); });
      // Rows by owner: this replica's owned sums are final (whatever happened: the owners
      // wait for it).
      if (owned_side_ >= 0)
        replicas_[static_cast<size_t>(tid)]->owned_sums_step.store(seq, std::memory_order_release);
      if (!error) guarded([&] { close_share(tid, base, sum); });
      // The split side's rows of a share are this thread's alone: it updates them while the
      // others finish their shares. Not when its own loss is not finite; if another share's is
      // not, the step throws after the barrier with these rows already updated.
      if (!error && early_split_updates() &&
          std::isfinite(thread_loss_[static_cast<size_t>(tid)])) {
        profile::Zone zone(prof_, zones_.split_tables);
        update_tables(tid, TableSet::kSplitSide);
      }
      models::Ncf<float>::RowGrads owned_rows;
      if (owned_side_ >= 0) {
        // The owned rows' backward as soon as every replica's owned sums are final, before the
        // barrier; their dW lands in this replica's grads, which the dense reduction reads
        // after it.
        {
          profile::Zone zone(prof_, zones_.barrier);
          for (const auto& r : replicas_) wait_for(r->owned_sums_step, seq);
        }
        constexpr int kMaxReplicas = 256;
        SHOAL_DCHECK(pool_.size() <= kMaxReplicas);
        models::Ncf<float>* sharers[kMaxReplicas];
        size_t n_sharers = 0;
        for (const auto& r : replicas_)
          if (r->share.count > 0) sharers[n_sharers++] = &r->model;
        if (!share_failed_.load(std::memory_order_relaxed))
          guarded([&] {
            Ctx ctx = base;
            ctx.thread = tid;
            owned_rows = replicas_[static_cast<size_t>(tid)]->model.backward_owned_rows(
                ctx, std::span(sharers, n_sharers));
          });
      }
      sync();
      if (error) std::rethrow_exception(error);
      if (share_failed_.load(std::memory_order_relaxed)) return;
      double loss = 0;
      for (const double l : thread_loss_) loss += l;
      if (tid == 0) {
        t1 = std::chrono::steady_clock::now();
        finite = std::isfinite(loss);
      }
      if (!std::isfinite(loss)) return;
      {
        profile::Zone zone(
            prof_, zones_.dense,
            split_range(arenas_[0]->dense_param_elems(), tid, pool_.size(), kParamGrain).size());
        // The replicas' grads summed into replica 0's over this thread's chunk, in replica
        // order; a replica k >= 1 is only read here (it clears its own grads at the start of
        // its next share, so no core writes another replica's lines).
        const Range r =
            split_range(arenas_[0]->dense_param_elems(), tid, pool_.size(), kParamGrain);
        float* __restrict dst = arenas_[0]->grads<float>();
        for (size_t k = 1; k < arenas_.size(); ++k) {
          const float* __restrict g = arenas_[k]->grads<float>();
          for (Index i = r.begin; i < r.end; ++i) dst[i] += g[i];
        }
        adam_.update(*arenas_[0], r.begin, r.end);
        zero_grads<float>(*arenas_[0], r);
      }
      profile::Zone zone(prof_, zones_.tables);
      if (!owned_rows.rows.empty()) update_rows(owned_side_, owned_rows);
      update_shared_rows(tid);
      update_tables(tid, early_split_updates() ? TableSet::kOtherSide : TableSet::kAll);
      // Every owner has read this replica's owned sums (before the last barrier).
      if (owned_side_ >= 0) replicas_[static_cast<size_t>(tid)]->model.clear_owned_sums(models_);
    });
  }
  if (!finite) throw_non_finite_loss(adam_.step_count(), arenas_);
  const auto t2 = std::chrono::steady_clock::now();
  compute_seconds_ += std::chrono::duration<double>(t1 - t0).count();
  update_seconds_ += std::chrono::duration<double>(t2 - t1).count();
  if (prof_ != nullptr) prof_->step();
}

// Thread tid's share of every table's rows: the replicas' row grads of the touched rows summed
// in replica order and the rows updated. Lazy mode only reads the replicas' buffers (each
// replica clears its own rows at its next step); a user table's touched rows are the thread's
// own (its replica alone touched them), an item table's are shared out by count;
// dense mode takes a slice of row ids, sums into replica 0's buffer and clears what it summed.
void NcfTrainer::update_tables(int tid, TableSet set) {
  detail::NcfReplica& mine = *replicas_[static_cast<size_t>(tid)];
  detail::NcfReplica& src = *replicas_[0];
  const int nt = pool_.size();
  auto& tables = src.model.tables();
  constexpr int kMaxReplicas = 256;
  SHOAL_DCHECK(nt <= kMaxReplicas);
  MatView<float> grads[kMaxReplicas];
  uint8_t* touched[kMaxReplicas];
  const bool dense = cfg_.dense_embedding_adam;
  for (size_t t = 0; t < tables.size(); ++t) {
    const int side = tables[t].is_user ? 0 : 1;
    if ((set == TableSet::kSplitSide && side != split_side_) ||
        (set == TableSet::kOtherSide && side == split_side_) || src.model.hands_over_table(t))
      continue;
    const auto& emb = tables[t].layer;
    const Index d = emb.cfg.embedding_dim;
    for (int r = 0; r < nt; ++r) {
      const auto tg = replicas_[static_cast<size_t>(r)]->model.table_grad(t);
      grads[r] = tg.grad;
      touched[r] = tg.touched;
    }
    if (dense) {
      // torch.optim.Adam on the whole slice: untouched rows get a zero gradient. Slices of 64
      // rows: no cache line of flags (or of row grads) is written by two threads.
      const Range slice = split_range(emb.cfg.num_embeddings, tid, nt, 64);
      if (slice.size() == 0) continue;
      const MatView<float> g0 = grads[0];
      for (Index row = slice.begin; row < slice.end; ++row) {
        for (int r = 1; r < nt; ++r) {
          if (!touched[r][row]) continue;
          float* __restrict dst = g0.row(row);
          float* __restrict g = grads[r].row(row);
          add_row(dst, g, d);
          std::fill_n(g, d, 0.0f);
          touched[r][row] = 0;
        }
      }
      sparse_adam_.update_rows(src.arena, emb.p.weight,
                               std::span<const int32_t>(src.all_ids[t].view.data + slice.begin,
                                                        static_cast<size_t>(slice.size())),
                               ConstMat<float>(g0.row(slice.begin), slice.size(), d));
      std::fill_n(g0.row(slice.begin), slice.size() * d, 0.0f);
      std::fill_n(touched[0] + slice.begin, slice.size(), uint8_t{0});
      continue;
    }
    // Lazy: read only (each replica clears its own rows at its next step,
    // Ncf::clear_table_grads). A thread updates the touched rows it owns (owned_), in
    // ascending order: always the same rows, so a row's weights and moments
    // stay in its owner's cache from step to step (a split of the touched list by count moved
    // them between cores with the list). A row touched by one replica is updated straight from
    // that replica's buffer; only rows touched by several are summed (in replica order) into
    // the thread's scratch first.
    const Index table_rows = emb.cfg.num_embeddings;
    int32_t* ids = mine.merge_ids[t].view.data;  // [table_rows]
    Index total = 0;
    // The split side's rows were touched by one replica only (open_share), so this thread
    // updates the rows its own replica touched, from its own buffer; the same holds trivially
    // on one thread.
    const bool own = own_side(side);
    const std::vector<int32_t>& owned = owned_[side][static_cast<size_t>(tid)];
    // Branch-free: most rows are touched, at random.
    if (own) {
      const uint8_t* f = touched[tid];
      for (Index row = 0; row < table_rows; ++row) {
        ids[total] = static_cast<int32_t>(row);
        total += f[row];
      }
    } else {
      for (const int32_t row : owned) {
        unsigned any = 0;
        for (int r = 0; r < nt; ++r) any |= touched[r][row];
        ids[total] = row;
        total += any;
      }
    }
    const Range share{0, total};
    if (share.size() == 0) continue;
    const float** ptrs = mine.grad_ptrs.data();
    if (own) {
      for (Index k = share.begin; k < share.end; ++k)
        ptrs[k - share.begin] = grads[tid].row(ids[k]);
    } else {
      const MatView<float> merged = mine.merge_grad[t].mat();
      // The rows ascend through the thread's blocks: where they are dense, the hardware
      // prefetchers follow them (core/prefetch.h).
      constexpr Index kAhead = 8;
      const bool prefetch = !dense_rows(share.size(), static_cast<Index>(owned.size()));
      for (Index k = share.begin; k < share.end; ++k) {
        if (prefetch && k + kAhead < share.end) {
          const int32_t ahead = ids[k + kAhead];
          for (int r = 0; r < nt; ++r)
            if (touched[r][ahead]) prefetch_span(grads[r].row(ahead), d);
        }
        const int32_t row = ids[k];
        const float* single = nullptr;
        float* __restrict dst = nullptr;
        for (int r = 0; r < nt; ++r) {
          if (!touched[r][row]) continue;
          const float* __restrict g = grads[r].row(row);
          if (dst != nullptr) {
            add_row(dst, g, d);
          } else if (single == nullptr) {
            single = g;
          } else {
            dst = merged.row(k - share.begin);
            for (Index j = 0; j < d; ++j) dst[j] = single[j] + g[j];
          }
        }
        ptrs[k - share.begin] = dst != nullptr ? dst : single;
      }
    }
    const auto count = static_cast<size_t>(share.size());
    sparse_adam_.update_rows(src.arena, emb.p.weight,
                             std::span<const int32_t>(ids + share.begin, count),
                             std::span<const float* const>(ptrs, count));
  }
}

int NcfTrainer::table_index(int s, bool gmf) const {
  auto& model = replicas_[0]->model;
  const auto& table = gmf ? model.gmf_table(s) : model.mlp_table(s);
  return static_cast<int>(&table - model.tables().data());
}

// The handed-over rows of the sides several replicas touch (several threads: the side the
// shares are not cut by, or both for contiguous shares, less the side by owner). Each thread
// takes the rows it owns from every replica's
// compact lists, sums a row's gradients in replica order (a row one replica touched is read in
// place), and updates the MLP and GMF rows in one pass, in ascending order. The lists are only
// read; each replica overwrites its own at its next share. The sums are those update_tables
// forms from the tables' grad buffers, in the same order, so the weights are the same bits.
void NcfTrainer::update_shared_rows(int tid) {
  detail::NcfReplica& mine = *replicas_[static_cast<size_t>(tid)];
  auto& model = replicas_[0]->model;
  for (int s = 0; s < 2; ++s) {
    if (own_side(s) || !model.hands_over(s) || s == owned_side_) continue;
    const std::vector<uint16_t>& owner = owner_[s];
    detail::NcfReplica::SharedRows& sr = mine.shared[s];
    if (sr.gen == std::numeric_limits<int32_t>::max()) {
      std::fill(sr.stamp.begin(), sr.stamp.end(), 0);
      sr.gen = 0;
    }
    const int32_t gen = ++sr.gen;
    const bool gmf = model.has_gmf();
    const auto& mlp_table = model.mlp_table(s).layer;
    const Index dm = mlp_table.cfg.embedding_dim,
                dg = gmf ? model.gmf_table(s).layer.cfg.embedding_dim : 0;
    const MatView<float> merged_mlp =
        mine.merge_grad[static_cast<size_t>(table_index(s, false))].mat();
    const MatView<float> merged_gmf =
        gmf ? mine.merge_grad[static_cast<size_t>(table_index(s, true))].mat() : MatView<float>{};
    int32_t summed = 0;
    for (const auto& rep : replicas_) {
      if (!rep->handed_valid) continue;
      const auto g = rep->model.share_row_grads(s);
      for (size_t k = 0; k < g.rows.size(); ++k) {
        const auto row = static_cast<size_t>(g.rows[k]);
        if (owner[row] != tid) continue;
        const float* gm = g.grads.row(static_cast<Index>(k));
        const float* gg = gmf ? g.gmf_grads.row(static_cast<Index>(k)) : nullptr;
        if (sr.stamp[row] != gen) {
          sr.stamp[row] = gen;
          sr.mlp[row] = gm;
          sr.gmf[row] = gg;
          sr.merged[row] = -1;
          continue;
        }
        // Seen in an earlier replica: on the second sighting the first replica's gradients are
        // copied into this thread's scratch; every later replica's are added there, in order.
        if (sr.merged[row] < 0) {
          sr.merged[row] = summed++;
          float* dst = merged_mlp.row(sr.merged[row]);
          std::copy_n(sr.mlp[row], dm, dst);
          sr.mlp[row] = dst;
          if (gmf) {
            float* dst_gmf = merged_gmf.row(sr.merged[row]);
            std::copy_n(sr.gmf[row], dg, dst_gmf);
            sr.gmf[row] = dst_gmf;
          }
        }
        add_row(merged_mlp.row(sr.merged[row]), gm, dm);
        if (gmf) add_row(merged_gmf.row(sr.merged[row]), gg, dg);
      }
    }
    // The thread's rows in ascending order (a sweep of its blocks of the table).
    int32_t* ids = mine.merge_ids[static_cast<size_t>(table_index(s, false))].view.data;
    const float** pm = mine.grad_ptrs.data();
    const float** pg = mine.gmf_ptrs.data();
    Index count = 0;
    for (const int32_t row : owned_[s][static_cast<size_t>(tid)]) {
      const auto r = static_cast<size_t>(row);
      ids[count] = row;
      pm[count] = sr.mlp[r];
      pg[count] = sr.gmf[r];
      count += sr.stamp[r] == gen ? 1 : 0;
    }
    if (count == 0) continue;
    const auto n = static_cast<size_t>(count);
    using Rows = optim::SparseAdam<float>::TableRows;
    const Rows tables[] = {
        {.table = &mlp_table.p.weight, .row_ptrs = std::span<const float* const>(pm, n)},
        {.table = gmf ? &model.gmf_table(s).layer.p.weight : nullptr,
         .row_ptrs = std::span<const float* const>(pg, n)}};
    sparse_adam_.update_rows(replicas_[0]->arena, std::span<const int32_t>(ids, n),
                             std::span<const Rows>(tables, gmf ? 2 : 1));
  }
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
