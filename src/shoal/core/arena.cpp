#include "shoal/core/arena.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace shoal {
namespace {

size_t align_up(size_t n) {
  return (n + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
}

size_t entry_bytes(const ArenaEntry& e) {
  return align_up(static_cast<size_t>(e.shape.numel()) * e.elem_size);
}

}  // namespace

const char* region_name(Region r) {
  switch (r) {
    case Region::kParams:
      return "params";
    case Region::kGrads:
      return "grads";
    case Region::kOptimState:
      return "optimizer state";
    case Region::kState:
      return "state";
    case Region::kActivations:
      return "activations";
    case Region::kActivationGrads:
      return "activation grads";
    case Region::kScratch:
      return "scratch";
  }
  return "?";
}

void Planner::add(ArenaEntry e, void* object,
                  void (*bind)(void*, const Arena&, const ArenaEntry&)) {
  std::string full;
  for (const auto& s : scope_) full += s;
  e.name = full + e.name;
  for (const auto& other : entries_)
    SHOAL_CHECK(other.name != e.name, "arena entry '{}' registered twice", e.name);
  entries_.push_back(std::move(e));
  targets_.push_back({object, bind});
}

void Planner::check_param_type(const std::type_info& t, size_t size) {
  if (param_type_ == nullptr) {
    param_type_ = &t;
    param_size_ = size;
  }
  SHOAL_CHECK(*param_type_ == t, "all parameters of one arena must share one element type");
}

void Planner::set_optim_slots(int k) {
  SHOAL_CHECK(k >= 0 && k <= 4, "optimizer slots must be in [0, 4], got {}", k);
  optim_slots_ = k;
}

void Planner::push_scope(std::string_view s) {
  scope_.emplace_back(s);
}
void Planner::pop_scope() {
  SHOAL_CHECK(!scope_.empty(), "pop_scope without push_scope");
  scope_.pop_back();
}

void Arena::Free::operator()(std::byte* p) const {
  std::free(p);
}

Arena::Arena(Planner&& planner)
    : entries_(std::move(planner.entries_)),
      param_size_(planner.param_size_),
      optim_slots_(planner.optim_slots_) {
  layout();
  allocate_and_bind(planner);
}

Arena::Arena(Planner&& planner, const Arena& source)
    : param_source_(&source),
      entries_(std::move(planner.entries_)),
      param_size_(planner.param_size_),
      optim_slots_(0) {
  layout();
  std::vector<const ArenaEntry*> mine, theirs;
  for (const auto& e : entries_)
    if (e.region == Region::kParams) mine.push_back(&e);
  for (const auto& e : source.entries_)
    if (e.region == Region::kParams) theirs.push_back(&e);
  SHOAL_CHECK(mine.size() == theirs.size(), "replica has {} params, its source {}", mine.size(),
              theirs.size());
  for (size_t i = 0; i < mine.size(); ++i) {
    SHOAL_CHECK(mine[i]->name == theirs[i]->name && mine[i]->shape == theirs[i]->shape &&
                    mine[i]->offset_bytes == theirs[i]->offset_bytes,
                "replica param '{}' {} does not match source param '{}' {}", mine[i]->name,
                mine[i]->shape.str(), theirs[i]->name, theirs[i]->shape.str());
  }
  allocate_and_bind(planner);
}

void Arena::layout() {
  // Dense params first, then sparse tables, each group in registration order.
  std::vector<size_t> order(entries_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return static_cast<int>(entries_[a].kind) < static_cast<int>(entries_[b].kind);
  });
  size_t dense_bytes = 0;
  for (size_t i : order) {
    ArenaEntry& e = entries_[i];
    size_t& cursor = region_size_[static_cast<size_t>(e.region)];
    e.offset_bytes = cursor;
    cursor += entry_bytes(e);
    if (e.region == Region::kParams && e.kind == ParamKind::kDense) dense_bytes = cursor;
  }
  const size_t params_bytes = region_size_[static_cast<size_t>(Region::kParams)];
  region_size_[static_cast<size_t>(Region::kGrads)] = dense_bytes;
  region_size_[static_cast<size_t>(Region::kOptimState)] =
      static_cast<size_t>(optim_slots_) * params_bytes;
  if (param_size_ != 0) {
    dense_elems_ = static_cast<Index>(dense_bytes / param_size_);
    param_elems_ = static_cast<Index>(params_bytes / param_size_);
  }
  if (param_source_) region_size_[static_cast<size_t>(Region::kParams)] = 0;
  size_t offset = 0;
  for (int r = 0; r < kRegionCount; ++r) {
    region_offset_[r] = offset;
    offset += region_size_[r];
  }
  total_bytes_ = offset;
}

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? double(pages) * double(page) : 0.0;
}

void check_fits_in_memory(double bytes, std::string_view options, std::string_view actual) {
  const double ram = physical_memory_bytes();
  if (ram <= 0 || bytes <= ram) return;
  throw Error(
      fmt::format("the sizes need {:.1f} GiB of memory, more than this machine's {:.1f} GiB",
                  bytes / 1073741824.0, ram / 1073741824.0),
      ErrorContext{.field = std::string(options),
                   .expected = "sizes whose buffers fit in memory",
                   .actual = std::string(actual)});
}

void Arena::allocate_and_bind(Planner& planner) {
  // Models are planned before anything is allocated: one too big for the machine is named here.
  check_fits_in_memory(double(total_bytes_), "model sizes",
                       fmt::format("a {}-byte arena", total_bytes_));
  const size_t bytes = std::max<size_t>(total_bytes_, kArenaAlign);
  void* raw = std::aligned_alloc(kArenaAlign, bytes);
  SHOAL_CHECK(raw != nullptr, "could not allocate a {}-byte arena", total_bytes_);
  std::memset(raw, 0, bytes);
  memory_.reset(static_cast<std::byte*>(raw));
  for (size_t i = 0; i < entries_.size(); ++i)
    planner.targets_[i].bind(planner.targets_[i].object, *this, entries_[i]);
}

std::byte* Arena::region_base(Region r) const {
  if (r == Region::kParams && param_source_) return param_source_->region_base(r);
  return memory_.get() + region_offset_[static_cast<size_t>(r)];
}

const ArenaEntry* Arena::entry(std::string_view name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

}  // namespace shoal
