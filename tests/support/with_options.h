// A Config with options set by a function: designated initializers cannot name the fields a
// Config inherits (models/mixing.h's MixerConfig: n_block, ff_dim, dropout, revin).
#pragma once

#include <utility>

namespace shoal::testing {

template <class Config, class Set>
Config with_options(Config c, Set&& set) {
  std::forward<Set>(set)(c);
  return c;
}

}  // namespace shoal::testing
