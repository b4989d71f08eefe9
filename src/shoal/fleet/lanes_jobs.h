// Internal to src/shoal/fleet: the fleet's use of horizontal fusion. MLP jobs of one jobs-file
// line that differ only by seed and learning rate (a sweep) and whose shape is below the
// measured crossover (train::lanes_mlp_wins) are grouped 8 at a time; the first job of a group
// that a worker runs trains all of them in lockstep (train::LanesMlpTrainer) and every member
// returns its own lane's result. A member whose group another worker is training trains the
// next group nobody has started meanwhile, then waits. Jobs stay one per fit, so the journal,
// resume and outputs are unchanged. If the fused training throws (one lane diverging, say),
// every member falls back to its own per-model fit, so one bad seed fails alone as it would
// unfused.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "shoal/data/csv.h"
#include "shoal/fleet/fleet.h"
#include "shoal/train/mlp_trainer.h"

namespace shoal::fleet::detail {

struct LanesMlpFit {
  models::Mlp<float>::Config model;
  train::MlpTrainConfig train;  // seed and lr unused: each member has its own
  int epochs = 1;
  double val_fraction = 0;
  std::shared_ptr<const data::NumericTable> table;
  Index target = 0;
};

class LanesMlpGroups {
 public:
  LanesMlpGroups();

  // Adds a fit with this seed and learning rate to the open group of `group_key` (the settings
  // apart from those two) and returns its run(). `separate` is its per-model run, the fallback.
  std::function<JobOutput()> add(const std::string& group_key, const LanesMlpFit& fit,
                                 uint64_t seed, double lr, std::function<JobOutput()> separate);

 private:
  struct Group;
  struct Shared;
  std::map<std::string, std::shared_ptr<Group>> open_;  // the group each key is filling
  std::shared_ptr<Shared> shared_;
};

}  // namespace shoal::fleet::detail
