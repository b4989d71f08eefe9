// Trains one NCF model (GMF / MLP / NeuMF, optional context) with all cores, and evaluates it
// by leave-one-out HR@K / NDCG@K.
//
// Step (batch of B instances of the shuffled epoch, see data/ncf_sampler.h):
//   1. each thread runs forward/backward on its share of the batch on its own replica (shared
//      params): with T threads, the batch's instances of a range of ids of the split side (users
//      or items, whichever a batch has more distinct rows of: see split_side()), the ranges cut
//      where the batch's own counts split it most evenly (detail::share_bins), so that a row of
//      that side is used, and updated, by one thread in a step (contiguous shares instead when a
//      bin of rows holds more than a tenth of a share's instances); BCE-with-logits, each
//      thread's mean weighted by its share so that the sum of the replicas' gradients is the
//      gradient of the batch mean. Rows its replica alone touched are then updated by the
//      thread before the barrier (lazy update): the MLP and GMF rows straight from the share's
//      row gradients (NcfShareRows::set_hand_over; every row on one thread, the split side's with
//      several), or, without a factored first layer (GMF), the split side's rows from the grad
//      buffer (several threads);
//   2. after one barrier in the same parallel region (one fork-join per step), one fused pass
//      per thread: (a) dense params: the chunk's replica grads summed in replica order into
//      replica 0's, Adam, zero; (b) embedding tables: each replica's backward left dense row
//      grads and touched-row flags (Ncf::table_grad); every thread lists the touched rows it
//      owns by their flags (no sort, no merge; none left in a table step 1 updated): of the
//      split side's tables, the rows its own replica touched, of the other side's, the rows in
//      its blocks of ids, so that a row's weights and moments stay on one core; it sums each row's
//      grads in replica order
//      (a row one replica touched is read where it lies) and updates those rows only with
//      Adam arithmetic (lazy: untouched rows and their moments are left alone, as TF's
//      LazyAdam), or, with dense_embedding_adam, takes a slice of row ids and updates every row
//      of it with a zero gradient where untouched (torch.optim.Adam semantics on the whole
//      table). Each replica clears its own touched rows and its own dense grads (replicas ≥ 1)
//      at the start of its next share, so the lazy update only reads other threads' buffers.
//      The sums have a fixed order, so a given thread count is bitwise deterministic. No
//      allocation after construction.
// A share runs in chunks of 256 rows (Ncf::train_chunk: forward, loss, backward, fused where
// the model has a kernel); the model's first tower layer is factored by distinct rows over the
// whole share (NcfShareRows::begin / end, train/ncf_shares.h).
// Evaluation: for each test user the candidates are the K negatives in file order, then the
// positive unless it already appears among them (the authors' evaluate.py keys scores by
// item). rank = #{c: s_c > s_pos} + #{c before pos: s_c = s_pos} (heapq.nlargest keeps the
// earlier of equal scores); HR@k = [rank < k], NDCG@k = ln 2 / ln(rank + 2) if rank < k.
// With context features, a test candidate gets its user's mean training context.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "shoal/core/options.h"
#include "shoal/core/spin_barrier.h"
#include "shoal/core/thread_pool.h"
#include "shoal/data/ncf.h"
#include "shoal/data/ncf_sampler.h"
#include "shoal/models/ncf.h"
#include "shoal/optim/adam.h"
#include "shoal/optim/sparse_adam.h"
#include "shoal/profile/recorder.h"
#include "shoal/train/ncf_recommend.h"
#include "shoal/train/ncf_shares.h"

namespace shoal::train {

struct NcfTrainConfig {
  Index batch_size = 256;  // instances (positives and negatives) per optimizer step
  int negatives = 4;       // sampled negatives per positive and epoch
  double lr = 1e-3;
  uint64_t seed = 1;
  int threads = 1;  // 0 = all allowed CPUs
  Pinning pinning = Pinning::kWorkers;
  bool dense_embedding_adam = false;  // see the header comment
  Index eval_rows = 1024;             // rows per evaluation chunk and thread
};

struct NcfEpochReport {
  int epoch = 0;               // 1-based
  double loss = 0;             // mean BCE over the epoch's steps
  double seconds = 0;          // whole epoch (sampling included)
  double sample_seconds = 0;   // drawing negatives and shuffling
  double compute_seconds = 0;  // steps' phase 1: batch gather, forward, loss, backward
  double update_seconds = 0;   // steps' phase 2: grad reduce, Adam, table row merge + update
  int64_t steps = 0;
  Index instances = 0;
};

// What a user sets for an NCF recommender, with the defaults written once (the model's and the
// trainer's where they hold one): `shoal ncf`'s flags, a jobs file's config keys and Python's
// NCF(...) all read this struct (core/options.h).
struct NcfOptions {
  std::string kind = models::ncf_kind_name(models::Ncf<float>::Config{}.kind);
  int64_t factors = models::Ncf<float>::Config{}.factors;
  std::vector<int64_t> layers = models::Ncf<float>::Config{}.layers;
  int64_t epochs = 20;
  int64_t batch_size = NcfTrainConfig{}.batch_size;
  int64_t num_negatives = NcfTrainConfig{}.negatives;
  double learning_rate = NcfTrainConfig{}.lr;
  std::string embedding_adam = "lazy";
  int64_t top_k = 10;

  void visit(OptionVisitor& v);
  // Throws shoal::Error naming the first option out of range.
  void validate() const;
  models::Ncf<float>::Config model(Index num_users, Index num_items, Index context) const;
  NcfTrainConfig train(uint64_t seed, int threads, Pinning pinning) const;
};

struct NcfMetrics {
  double hr = 0;
  double ndcg = 0;
  Index users = 0;
  double seconds = 0;
};

namespace detail {
struct NcfReplica;  // one thread's model, batch buffers and arena (ncf_trainer.cpp)
}  // namespace detail

// Evaluation without training (pretrained weights): one replica per thread, shared params.
// `rows` (≥ 1 + K) is the rows per chunk and thread.
class NcfEvaluator {
 public:
  NcfEvaluator(const models::Ncf<float>::Config& cfg, int threads, Index rows = 1024,
               Pinning pinning = Pinning::kWorkers);
  ~NcfEvaluator();
  // The source replica's model and arena: load or init weights here.
  models::Ncf<float>& model();
  const Arena& arena() const;
  // user_context [U, C] row-major (nullptr when the model has no context).
  NcfMetrics evaluate(const data::NcfTestSet& test, Index k = 10,
                      const float* user_context = nullptr);
  // The K best items per request row (train/ncf_recommend.h; ncf_recommend.cpp).
  NcfTopK top_k(const NcfTopKRequest& request);

 private:
  ThreadPool pool_;
  std::vector<std::unique_ptr<detail::NcfReplica>> replicas_;
};

class NcfTrainer {
 public:
  // `train` must outlive the trainer (the sampler reads it every epoch).
  NcfTrainer(const models::Ncf<float>::Config& model, const NcfTrainConfig& cfg,
             const data::NcfPositives& train);
  ~NcfTrainer();

  // Bytes a trainer for these settings holds (replica arenas, its copy of the positives, the
  // sampler's epoch arrays, the mean contexts), for the fleet's --memory-limit. Builds the
  // small replica arenas to measure them; the data-sized parts are computed.
  static size_t planned_bytes(const models::Ncf<float>::Config& model, const NcfTrainConfig& cfg,
                              const data::NcfPositives& train);

  NcfEpochReport train_epoch();
  NcfMetrics evaluate(const data::NcfTestSet& test, Index k = 10);
  // The K best items per request row (train/ncf_recommend.h; without request.context, a
  // contextual model uses each user's mean training context).
  NcfTopK top_k(const NcfTopKRequest& request);
  models::Ncf<float>& model();
  const Arena& arena() const;
  int threads() const { return pool_.size(); }
  int64_t steps() const { return adam_.step_count(); }
  Index instances_per_epoch() const { return sampler_.instances(); }
  const data::NcfSampler& sampler() const { return sampler_; }
  // The side whose id ranges split a batch between the threads (0 users, 1 items; -1:
  // contiguous shares, and on one thread; see the header comment and detail::split_side).
  int split_side() const { return split_side_; }
  // The side whose rows of a batch are projected and back-propagated by their owners
  // (NcfShareRows::share_owned_rows; -1: none).
  int owned_side() const { return owned_side_; }
  // Mean training context per user [U, C] (empty without context).
  const std::vector<float>& user_context() const { return user_context_; }
  // One optimizer step on instances [begin, end) of the current epoch (exposed for tests).
  void step(Index begin, Index end);
  // Wall seconds spent in step()'s two phases since construction (see NcfEpochReport).
  double compute_seconds() const { return compute_seconds_; }
  double update_seconds() const { return update_seconds_; }
  // Training FLOPs the replicas' models have executed (Ncf::executed_flops, summed; evaluation's
  // forwards included).
  double executed_flops() const;
  void draw_epoch(int epoch);

  // Records zones into `rec` (null: off): data.sample (negatives + shuffle), data.batch (the
  // batch's context rows), the model's layers (Ncf::register_zones), loss.forward (the fused
  // BCE pass: loss and dlogits),
  // optimizer.dense (grad reduce + Adam) and optimizer.tables (touched-row merge + sparse
  // Adam), pool.wait (the caller's wait in a fork-join region) and eval; marks a profiler step
  // after every optimizer step. Registers the zones, so call it before rec->start().
  void set_profiler(profile::Recorder* rec, int model = 0);

 private:
  void open_share(int tid, Index begin, Index n, const Ctx& base);
  double train_chunks(int tid, const Ctx& base);
  void close_share(int tid, const Ctx& base, double sum);
  // Until flag >= value (spinning, then yielding, as barrier() does).
  static void wait_for(const std::atomic<uint64_t>& flag, uint64_t value);
  void update_rows(int s, const NcfShareRows<float>::RowGrads& g);
  // Which tables update_tables updates: all; the split side's, whose touched rows are this
  // thread's own (lazy update, several threads: before the step's barrier); the other side's
  // (after it).
  enum class TableSet : uint8_t { kAll, kSplitSide, kOtherSide };
  bool early_split_updates() const {
    return split_side_ >= 0 && !cfg_.dense_embedding_adam && pool_.size() > 1;
  }
  void update_tables(int tid, TableSet set);
  // Whether side s's rows (0 users, 1 items) are touched by one replica only: every row on one
  // thread, the split side's with several. Handed-over rows of such a side are updated by the
  // thread that formed them (close_share); the others by update_shared_rows.
  bool own_side(int s) const { return pool_.size() == 1 || s == split_side_; }
  void update_shared_rows(int tid);
  // The index in the model's tables of side s's MLP or GMF table.
  int table_index(int s, bool gmf) const;
  // The phases of step(), each for pool thread tid inside its parallel region.
  void project_owned_rows(int tid, Index begin, Index n, const Ctx& base);
  void wait_for_owned_sums(uint64_t seq);
  NcfShareRows<float>::RowGrads backward_owned_rows(int tid, const Ctx& base);
  void update_dense(int tid);
  void update_row_tables(int tid, const NcfShareRows<float>::RowGrads& owned_rows);
  void barrier();  // all pool threads, inside step()'s parallel region

  profile::Recorder* prof_ = nullptr;
  struct Zones {
    profile::ZoneId sample, batch, dense, tables, split_tables, own_rows, wait, barrier, eval,
        share, zero_grad;
  } zones_{};

  double compute_seconds_ = 0, update_seconds_ = 0;  // wall, summed over step() calls

  NcfTrainConfig cfg_;
  const data::NcfPositives& train_;
  ThreadPool pool_;
  data::NcfSampler sampler_;
  std::vector<std::unique_ptr<detail::NcfReplica>> replicas_;
  std::vector<NcfShareRows<float>*> share_rows_;  // the replicas' share rows, in replica order
  std::vector<const Arena*> arenas_;
  optim::Adam<float> adam_;
  optim::SparseAdam<float> sparse_adam_;
  std::vector<float> user_context_;
  std::vector<double> thread_loss_;
  // Per side (0 users, 1 items), [rows]: the thread owning each row, by blocks of equal
  // expected instances (detail::block_owners): it sums and updates the rows several replicas
  // touched (the side the shares are not cut by).
  std::vector<uint16_t> owner_[2];
  // Per side, [thread]: the ids each thread owns, ascending.
  std::vector<std::vector<int32_t>> owned_[2];
  // The split side (detail::split_side; -1: contiguous shares), its ids per bin of the batch's
  // count (detail::bin_shift), and its bins.
  int split_side_ = -1;
  int bin_shift_ = 0;
  Index bins_ = 0;
  // Rows by owner (NcfShareRows::share_owned_rows; several threads, rows handed over): the side not
  // split (the items with contiguous shares), or -1. Thread t's owned rows take the rows from
  // owned_first_row_[t] on in replica 0's projection table.
  int owned_side_ = -1;
  std::vector<Index> owned_first_row_;
  int epoch_ = 0;
  SpinBarrier barrier_;
  std::atomic<bool> share_failed_{false};
  uint64_t step_seq_ = 0;  // step() calls so far (the replicas' owned_sums_step)
};

// NCF training on synthetic data of the contextual user's shape (data::synth_ncf_positives:
// NeuMF-8, [64,32,16,8], 21 context columns, 4 negatives, 256 positives per batch), for
// benchmarks: `shoal bench ncf` and the profiler's benchmark. Building it synthesises the data
// and plans the trainer (not part of any timing).
struct NcfSyntheticConfig {
  Index positives = 3647614;
  Index users = 654;
  Index items = 1127;
  Index context = 21;
  Index batch_positives = 256;
  int negatives = 4;
  int threads = 1;
  uint64_t seed = 1;
  Pinning pinning = Pinning::kAll;
};

class NcfSyntheticRun {
 public:
  explicit NcfSyntheticRun(const NcfSyntheticConfig& cfg);
  NcfTrainer& trainer() { return *trainer_; }
  const data::NcfPositives& data() const { return data_; }
  Index batch() const { return batch_; }
  static models::Ncf<float>::Config model_config(const NcfSyntheticConfig& cfg);
  // Runs `steps` optimizer steps (0: to the end of the current epoch), drawing the next
  // epoch's instances first whenever the current one is used up (also on the first call).
  // Returns the steps run.
  int64_t run(int64_t steps = 0);

 private:
  data::NcfPositives data_;
  Index batch_ = 0;
  std::unique_ptr<NcfTrainer> trainer_;
  int epoch_ = 0;
  Index next_ = 0;  // next instance of the current epoch
};

// The profiler's entry point: `steps` NCF training steps (0: one epoch) of `run` recorded into
// `rec`: registers the zones, rec.start(), the steps, rec.stop(). Returns the wall seconds
// between start and stop. `rec` must not have been started.
double profile_ncf_steps(profile::Recorder& rec, NcfSyntheticRun& run, int64_t steps);

}  // namespace shoal::train
