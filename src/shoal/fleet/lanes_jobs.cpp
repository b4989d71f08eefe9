#include "lanes_jobs.h"

#include <condition_variable>
#include <mutex>
#include <vector>

#include "shoal/train/lanes_mlp_trainer.h"

namespace shoal::fleet::detail {

struct LanesMlpGroups::Group {
  LanesMlpFit fit;
  std::vector<uint64_t> seeds;
  std::vector<double> lrs;
  enum class State { kWaiting, kTraining, kDone } state = State::kWaiting;  // under State::mutex
  bool failed = false;                                                      // set before kDone
  std::vector<JobOutput> outputs;

  // Trains the group; a throw (a diverging lane) marks it failed: its members then fit alone.
  void train_or_fail() {
    try {
      train_all();
    } catch (const std::exception&) {
      failed = true;
      outputs.clear();
    }
  }

  void train_all() {
    const Index in = fit.table->cols() - 1;
    const auto n_val = static_cast<Index>(static_cast<double>(fit.table->rows) * fit.val_fraction);
    const Index n_train = fit.table->rows - n_val;
    SHOAL_CHECK(n_train > 0, "no rows left for training");
    // Each seed's own shuffled copy, as the per-model job makes it.
    std::vector<std::vector<double>> xs(seeds.size()), ys(seeds.size());
    std::vector<train::LaneData> lanes;
    for (size_t l = 0; l < seeds.size(); ++l) {
      data::shuffled_xy(*fit.table, fit.target, seeds[l], xs[l], ys[l]);
      lanes.push_back({ConstMat<double>(xs[l].data(), n_train, in),
                       ConstMat<double>(ys[l].data(), n_train, 1), seeds[l], lrs[l]});
    }
    train::LanesMlpTrainer trainer(fit.model, fit.train, lanes);
    std::vector<double> loss;
    for (int e = 0; e < fit.epochs; ++e) loss = trainer.train_epoch();
    for (size_t l = 0; l < seeds.size(); ++l) {
      JobOutput o;
      o.metrics = {{"train_loss", loss[l]},
                   {"steps", trainer.steps()},
                   {"arena_bytes", trainer.arena().bytes()},
                   {"fused_lanes", seeds.size()}};
      if (n_val > 0) {
        const auto m = trainer.evaluate(static_cast<int>(l),
                                        ConstMat<double>(xs[l].data() + n_train * in, n_val, in),
                                        ConstMat<double>(ys[l].data() + n_train, n_val, 1));
        o.metrics["val_mse"] = m.mse;
        o.metrics["val_mae"] = m.mae;
        o.metrics["val_r2"] = m.r2;
      }
      outputs.push_back(std::move(o));
    }
  }
};

// Shared by every group of one build_jobs call, and by the job closures (which may outlive it).
struct LanesMlpGroups::Shared {
  std::mutex mutex;
  std::condition_variable done;
  std::vector<std::shared_ptr<Group>> groups;  // in job order
};

LanesMlpGroups::LanesMlpGroups() : shared_(std::make_shared<Shared>()) {}

std::function<JobOutput()> LanesMlpGroups::add(const std::string& group_key, const LanesMlpFit& fit,
                                               uint64_t seed, double lr,
                                               std::function<JobOutput()> separate) {
  auto& slot = open_[group_key];
  if (!slot || static_cast<Index>(slot->seeds.size()) == kernels::kLanes) {
    slot = std::make_shared<Group>();
    slot->fit = fit;
    shared_->groups.push_back(slot);
  }
  std::shared_ptr<Group> group = slot;
  const size_t lane = group->seeds.size();
  group->seeds.push_back(seed);
  group->lrs.push_back(lr);
  return [shared = shared_, group, lane, separate = std::move(separate)]() -> JobOutput {
    using State = Group::State;
    std::unique_lock<std::mutex> lock(shared->mutex);
    while (group->state != State::kDone) {
      // Train this member's group, or, while another worker trains it, the first group nobody
      // has started: a waiting worker does useful work instead of idling. Which worker trains
      // a group does not change its results, so the output stays deterministic.
      std::shared_ptr<Group> next;
      if (group->state == State::kWaiting) {
        next = group;
      } else {
        for (const auto& g : shared->groups)
          if (g->state == State::kWaiting) {
            next = g;
            break;
          }
      }
      if (!next) {
        shared->done.wait(lock);
        continue;
      }
      next->state = State::kTraining;
      lock.unlock();
      next->train_or_fail();
      lock.lock();
      next->state = State::kDone;
      shared->done.notify_all();
    }
    const bool failed = group->failed;
    JobOutput out = failed ? JobOutput{} : group->outputs[lane];
    lock.unlock();
    return failed ? separate() : out;
  };
}

}  // namespace shoal::fleet::detail
