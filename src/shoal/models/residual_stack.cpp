// The options the stacked models share (models/residual_stack.h); the stack's walks are
// residual_stack_impl.h's.
#include "shoal/models/residual_stack.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "shoal/core/error.h"

namespace shoal::models {

void StackOptions::visit_stacks(OptionVisitor& v, const char* stacks) {
  v("stack_types", stack_types, stacks);
  v("n_blocks", n_blocks, "Blocks per stack");
  v("mlp_units", mlp_units, "Hidden layers as flattened [in, out] pairs, e.g. 512,512,512,512");
}

void StackOptions::visit_theta(OptionVisitor& v, const char* dropout) {
  v("dropout_prob_theta", dropout_prob_theta, dropout);
  v.choice("activation", activation, kBlockActivations, "Hidden activation");
}

void StackOptions::validate_stacks(std::string_view model, std::span<const std::string_view> types,
                                   Index h) const {
  const size_t s = stack_types.size();
  SHOAL_CHECK(s > 0 && n_blocks.size() == s,
              "{}: stack_types and n_blocks need the same length, got {} and {}", model, s,
              n_blocks.size());
  for (size_t i = 0; i < s; ++i) {
    const std::string& t = stack_types[i];
    SHOAL_CHECK(std::find(types.begin(), types.end(), t) != types.end(),
                "{}: block type '{}' not found ({})", model, t, fmt::join(types, ", "));
    SHOAL_CHECK(h != 1 || (t != "trend" && t != "seasonality"),
                "{}: horizon h=1 is incompatible with seasonality or trend in stacks", model);
    if (n_blocks[i] < 0) option_out_of_range("n_blocks", "integers ≥ 0", double(n_blocks[i]));
  }
  validate_block_options(model, mlp_units, dropout_prob_theta, activation);
}

}  // namespace shoal::models
