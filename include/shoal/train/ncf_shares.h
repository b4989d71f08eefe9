// NCF's data-parallel protocol (NcfTrainer, train/ncf_trainer.h): how a batch is cut into the
// threads' shares, which thread owns each table row, and each replica's rows of its share.
//
// A share: the instances one replica trains in a step, in several chunks (Ncf::train_chunk with
// Rows) whose distinct MLP rows are listed and projected once (Ncf::open_rows) at the share's
// begin and back-propagated once (Ncf::close_rows) at its end.
//
// Hand-over of side s's row gradients (s: 0 users, 1 items): a share sums them per distinct
// row, the MLP table's (dZ·W_part) and, NeuMF, the GMF table's (Σ of dh ⊙ the other side's row
// over the share's instances of the row). When set, the share's end leaves its distinct rows and
// both tables' gradients in row_grads(s), valid until the next share opens, instead of adding
// them into the tables' grad buffers (Ncf::table_grad: those rows stay untouched there;
// hands_over_table(t) is then true). For a caller that updates those rows from the compact
// lists: where they were formed when no other replica touched them, else by merging the
// replicas' lists; no scatter into the buffers, flags or clearing either way.
//
// Rows by owner: several replicas training one batch (each a share of it) project and
// back-propagate each of the batch's rows of one side (the owned side: the items when the
// shares are cut by user, the users when they are cut by item) once, on the replica that owns
// the row, instead of once per share that has it. With the owner buffers planned (plan's
// owned_side) and share_owned_rows(holder) set, a share stamps its rows of the owned side
// without listing or projecting them. The owners give every such row of the batch a row of the
// holder's table (each owner a block of rows: its ids in ascending order) and project it there;
// a share's chunks read the projections there and sum their dz and GMF gradients into the same
// rows of their own replica's owned sums, so that an owner finds its rows' sums at its own rows
// in every replica. The step:
//   every replica: begin (the other side's rows projected, the owned side's stamped),
//            project_owned_rows
//   barrier; every replica: the share's chunks, then end
//   once every replica's chunks are done: backward_owned_rows on every replica (the other
//            replicas' sums of its rows added into its own, dW of the side's columns into its
//            own grads; returns the owned rows' MLP and GMF gradients for the caller's update)
//   barrier; the replicas' dense grads summed, the updates; clear_owned_sums on every replica.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "shoal/core/arena.h"
#include "shoal/core/ctx.h"
#include "shoal/core/thread_pool.h"
#include "shoal/models/ncf.h"
#include "shoal/models/ncf_row_set.h"
#include "shoal/profile/recorder.h"

namespace shoal::train {

namespace detail {
// The thread owning each row of a table: the rows, in id order, cut into threads·k blocks of
// near-equal total weight, block b owned by thread b % threads, with k = ⌈rows / (threads ·
// kOwnerBlock)⌉ (blocks of ≈ kOwnerBlock rows when the weights are equal). Why blocks of
// consecutive ids and not id % threads: ncf_shares.cpp.
inline constexpr Index kOwnerBlock = 256;
std::vector<uint16_t> block_owners(std::span<const double> weights, int threads);

// A batch split by the ids of one side (NcfTrainer::open_share): its instances are counted per
// bin of 2^shift consecutive ids, the shift the smallest that leaves at most max(batch, 64)
// bins (the per-step count and scan then cost no more than the batch); share t of T takes the
// bins between the cuts where the running count comes nearest t·n/T (ties: the later cut).
int bin_shift(Index rows, Index batch);
// The side (0 users, 1 items) whose id ranges split a batch into T shares, or -1 for contiguous
// shares. weights[s]: each row's expected instances per epoch (users: positives·(1 + neg);
// items: positives plus the negatives, taken as uniform over the items). A side qualifies when
// no bin of its rows (bin_shift) holds more than a tenth of a share's instances; of the sides
// that do, the one whose rows a batch is expected to have more of (batch_presence): the other
// side's rows, which every share can touch, are then fewer, and owned (rows by owner).
int split_side(const std::vector<double> (&weights)[2], Index batch, int threads);
// Each row's probability of being in a batch of `batch` instances drawn by weights (the epoch's
// instances are shuffled one by one): 1 − exp(−batch·w/Σw).
std::vector<double> batch_presence(std::span<const double> weights, Index batch);
// The bins [first, last) of share `share` of `shares`, from the batch's n instances counted
// per bin. The cuts depend only on the counts: every thread finds the same ones.
Range share_bins(std::span<const int32_t> counts, Index n, int share, int shares);
}  // namespace detail

// One replica's rows of its share (see the header comment). Without a factored first layer,
// begin and end do nothing and the chunks run as the model's own.
template <class T>
class NcfShareRows {
 public:
  using Model = models::Ncf<T>;
  using Id = int32_t;

  explicit NcfShareRows(Model& model) : model_(&model) {}
  NcfShareRows(const NcfShareRows&) = delete;
  NcfShareRows& operator=(const NcfShareRows&) = delete;

  // max_rows: the most instances of a share. owned_side (0 users, 1 items; -1 none): also plan
  // the buffers of rows by owner for that side's table.
  void plan(Planner& planner, Index max_rows, int owned_side = -1);
  Model& model() { return *model_; }

  // The share's ids, before its first chunk (each chunk's ids must be among them): the
  // distinct rows listed (zone mlp.0.rows.index) and projected (mlp.0.rows.forward, costed by
  // the distinct rows); by owner, the owned side's ids are only stamped (their owners list and
  // project them: project_owned_rows), and the share sums at the owners' rows.
  void begin(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items);
  // The share's chunks: the model's calls with the share's rows (without begin: the model's own).
  MatView<T> forward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                     ConstMat<T> context);
  void backward(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                ConstMat<T> dlogits);
  double train_chunk(const Ctx& ctx, std::span<const Id> users, std::span<const Id> items,
                     ConstMat<T> context, const T* labels, T scale);
  // After the share's last chunk: the distinct rows' weight and table gradients (zone
  // mlp.0.rows.backward); handed over or added into the tables' grad buffers.
  void end(const Ctx& ctx);

  // Hand-over of side s's row gradients (see the header comment).
  void set_hand_over(int s, bool on) { hand_over_[s] = on; }
  // Whether side s's rows are handed over (set_hand_over, and the first layer factored).
  bool hands_over(int s) const { return model_->factored() && hand_over_[s]; }
  struct RowGrads {
    std::span<const Id> rows;
    ConstMat<T> grads;      // [rows, L0/2]: the MLP table's
    ConstMat<T> gmf_grads;  // [rows, F]: the GMF table's (empty without GMF)
  };
  RowGrads row_grads(int s) const;
  // Whether table t's row gradients go to row_grads rather than Ncf::table_grad(t).
  bool hands_over_table(size_t t) const;

  // Rows by owner (see the header comment). holder may be this replica.
  void share_owned_rows(NcfShareRows* holder);
  bool rows_by_owner() const { return holder_ != nullptr; }
  // Projects the batch's rows of the owned side among `owned` (the ids this replica owns,
  // ascending) into the holder's table from first_row on (the number of ids the replicas
  // before this one own). batch_ids: every share's ids of that side, the whole batch.
  void project_owned_rows(const Ctx& ctx, std::span<const Id> batch_ids, std::span<const Id> owned,
                          Index first_row);
  // Zeroes this replica's owned sums in the rows of the step's owners (every replica, whose
  // project_owned_rows ran this step), once every owner has read them and this replica's
  // owned rows are updated.
  void clear_owned_sums(std::span<NcfShareRows* const> owners);
  // sharers: the replicas whose shares were open this step (begin ran), in replica order.
  RowGrads backward_owned_rows(const Ctx& ctx, std::span<NcfShareRows* const> sharers);

  // The zones of rows by owner: "{prefix}mlp.0.user_rows.index", ".forward" and ".backward"
  // (item_rows when the items are owned); the share's rows record in the model's zones
  // (Ncf::register_zones, registered first).
  void register_zones(profile::Recorder& rec, int model = 0, std::string_view prefix = "");

 private:
  Model* model_;
  models::NcfRowSet<T> rows_[2];  // the share's distinct rows per side
  // The open share's rows per side: their projections, each id's row there, and the share's
  // sums of their dz [·, L1] and GMF gradients [·, F] by the same rows. The share's own sets
  // (by its distinct rows), or, for the owned side, the holder's table and this replica's owned
  // sums (by the holder's rows).
  typename Model::Rows bound_;
  bool open_ = false;
  bool hand_over_[2] = {false, false};
  Index handed_[2] = {0, 0};        // rows whose gradients the last share handed over
  int owned_side_ = -1;             // planned (plan's owned_side)
  NcfShareRows* holder_ = nullptr;  // set (share_owned_rows)
  bool by_owner_ = false;           // the open share's owned side is by owner
  // Rows by owner: the holder's table of projections [R, L1] with each owned-side id's row in
  // it (R: that side's table rows); per replica its sums by those rows, and the owned rows the
  // step has with their row gradients.
  Buffer<T> owned_proj_;    // holder: [R, L1]
  Buffer<Id> owned_pslot_;  // holder: [R]
  struct OwnedRows {
    Buffer<T> dz;            // [R + block, L1]: this replica's dz sums, by the holder's rows
    Buffer<T> gmf_grads;     // [R, F]: its GMF gradient sums, likewise
    bool sums_clear = true;  // dz and gmf_grads are zero (clear_owned_sums ran)
    Buffer<Id> stamp;        // [R]: the generation of the batch that last had id i
    Id generation = 0;
    Buffer<Id> list;      // [R + 1]: the batch's owned ids, ascending
    Buffer<T> row_grads;  // [padded R, E]: their MLP table gradients
    Index count = 0;
    Index first_row = 0;  // their first row in the holder's table
  } owned_;
  struct Zones {
    profile::ZoneId owned_index = profile::kStepZone;
    profile::LayerZones owned_rows;
  } zones_;
  // The open share's side whose sums are the owned sums (-1: none).
  int owned_now() const { return by_owner_ ? owned_side_ : -1; }
  // A chunk adds into the open share's dz sums: its own sets are no longer zero (the owned
  // side's sums are the owned ones, which clear_owned_sums clears).
  void mark_dz_used() {
    for (int s = 0; s < 2; ++s)
      if (s != owned_now()) rows_[s].dz_clear = false;
  }
};

extern template class NcfShareRows<float>;
extern template class NcfShareRows<double>;

}  // namespace shoal::train
