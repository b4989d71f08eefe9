#include <cmath>

#include "shoal/core/thread_pool.h"
#include "shoal/train/checks.h"
#include "shoal/train/ncf_trainer.h"

namespace shoal::train {

void NcfOptions::visit(OptionVisitor& v) {
  static constexpr std::string_view kKinds[] = {"neumf", "gmf", "mlp"};
  static constexpr std::string_view kEmbeddingAdam[] = {"lazy", "dense"};
  v.choice("kind", kind, kKinds, "Model: NeuMF, or its GMF or MLP part alone");
  v("factors", factors, "GMF predictive factors");
  v("layers", layers, "MLP layer sizes; layers[0]/2 is the embedding width");
  v("epochs", epochs, "Passes over the positives");
  v("batch_size", batch_size, "Instances (positives + negatives) per step");
  v("num_negatives", num_negatives, "Sampled negatives per positive and epoch");
  v("learning_rate", learning_rate, "Adam learning rate");
  v.choice("embedding_adam", embedding_adam, kEmbeddingAdam,
           "lazy: Adam on touched rows only; dense: torch.optim.Adam on whole tables");
  v("top_k", top_k, "K of HR@K and NDCG@K");
}

void NcfOptions::validate() const {
  if (factors < 1) option_out_of_range("factors", "an integer ≥ 1", double(factors));
  SHOAL_CHECK(!layers.empty(), "config 'layers' must list at least one width");
  if (layers.front() % 2 != 0)
    option_out_of_range("layers", "a first width that is even (two embeddings of half of it)",
                        double(layers.front()));
  if (epochs < 1) option_out_of_range("epochs", "an integer ≥ 1", double(epochs));
  // No negatives: every label is 1 and the model learns to say 1 to everything.
  if (num_negatives < 1 || num_negatives > 1000)
    option_out_of_range("num_negatives", "an integer in [1, 1000]", double(num_negatives));
  if (top_k < 1) option_out_of_range("top_k", "an integer ≥ 1", double(top_k));
  check_lr_and_batch(learning_rate, batch_size);
}

models::Ncf<float>::Config NcfOptions::model(Index num_users, Index num_items,
                                             Index context) const {
  return {.kind = models::parse_ncf_kind(kind),
          .num_users = num_users,
          .num_items = num_items,
          .factors = factors,
          .layers = layers,
          .context = context};
}

NcfTrainConfig NcfOptions::train(uint64_t seed, int threads, Pinning pinning) const {
  return {.batch_size = batch_size,
          .negatives = static_cast<int>(num_negatives),
          .lr = learning_rate,
          .seed = seed,
          .threads = checked_thread_count(threads, "threads"),
          .pinning = pinning,
          .dense_embedding_adam = embedding_adam == "dense"};
}

}  // namespace shoal::train
