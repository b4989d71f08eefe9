#include "shoal/models/ncf_row_set.h"

#include "shoal/core/error.h"
#include "shoal/core/prefetch.h"

namespace shoal::models {

// In ascending order when the ids could walk the table densely (dense_rows: the ids are
// marked, then the table's rows swept): the rows' gathers and updates then walk the tables
// forward, where the hardware prefetchers follow them. Otherwise in first-seen order (a sweep
// of a large table would cost more than the set).
template <class T>
void NcfRowSet<T>::list_ids(std::span<const Id> ids) {
  const Index cap = list.view.numel() - 1;
  const Index table_rows = slot.view.numel();
  SHOAL_CHECK(static_cast<Index>(ids.size()) <= cap || cap == table_rows,
              "NCF share of {} rows, planned for {}", ids.size(), cap);
  Id* slots = slot.view.data;
  Id* stamps = stamp.view.data;
  Id* rows = list.view.data;
  const Id gen = next_generation(stamps, table_rows, generation);
  Index m = 0;
  if (dense_rows(static_cast<Index>(ids.size()), table_rows)) {
    for (const Id id : ids) {
      SHOAL_DCHECK(id >= 0 && id < table_rows);
      stamps[id] = gen;
    }
    // Branch-free: rows[m] is overwritten until a listed row keeps it (list has a spare slot).
    for (Index r = 0; r < table_rows; ++r) {
      rows[m] = static_cast<Id>(r);
      slots[r] = static_cast<Id>(m);
      m += stamps[r] == gen ? 1 : 0;
    }
    count = m;
    ascending = true;
    return;
  }
  for (const Id id : ids) {
    SHOAL_DCHECK(id >= 0 && id < table_rows);
    // Branch-free (about half the ids are new, at random). Whether an id was seen is read
    // from its stamp, not from the list, so the only chain from one id to the next is m's
    // add and the loads of consecutive ids overlap. The slot is selected by a mask: written
    // as `seen ? slot : m`, gcc branched on seen, mispredicting on every other id.
    const Id seen = static_cast<Id>(stamps[id] == gen);
    stamps[id] = gen;
    const Id keep = -seen;
    slots[id] = (slots[id] & keep) | (static_cast<Id>(m) & ~keep);
    rows[m] = id;
    m += 1 - seen;
  }
  count = m;
  ascending = false;
}

template <class T>
void NcfRowSet<T>::stamp_ids(std::span<const Id> ids) {
  Id* stamps = stamp.view.data;
  const Id gen = next_generation(stamps, stamp.view.numel(), generation);
  for (const Id id : ids) {
    SHOAL_DCHECK(id >= 0 && id < stamp.view.numel());
    stamps[id] = gen;
  }
  count = 0;
}

template struct NcfRowSet<float>;
template struct NcfRowSet<double>;

}  // namespace shoal::models
