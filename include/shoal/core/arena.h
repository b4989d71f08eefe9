// One aligned allocation per model replica, laid out once at plan time.
//
// Regions, in order:  params | grads | optimizer state (k slots) | state | activations |
//                     activation grads | scratch
// `state` holds persistent values that are not trained (BatchNorm running statistics): they
// are saved with checkpoints, never touched by the optimizer and never reused as scratch.
// Params are ordered dense first, then sparse (embedding tables updated row-wise). Grads mirror
// the dense params only; optimizer state mirrors all params. Element offset o of a parameter is
// therefore also its offset in grads (if dense) and in every optimizer slot, so an optimizer is
// one flat loop over [0, dense_elems) plus a row loop per sparse table. Every entry starts on a
// 64-byte boundary; padding between entries is zero and stays zero under every optimizer.
//
// Binding: a layer registers its Param<T>/Buffer<T> members with the Planner by reference, and
// Arena construction writes the views into them. So a layer lists its memory once, and layers
// must not move between planning and allocation (models hold them in place).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "shoal/core/tensor.h"

namespace shoal {

enum class Region : uint8_t {
  kParams,
  kGrads,
  kOptimState,
  kState,
  kActivations,
  kActivationGrads,
  kScratch
};
inline constexpr int kRegionCount = 7;
const char* region_name(Region r);

enum class ParamKind : uint8_t {
  kDense,       // gradient written to the grads region, updated by the flat optimizer pass
  kSparseRows,  // embedding table: the layer keeps row gradients, the optimizer updates rows
};

template <class T>
struct Param {
  Shape shape;
  ParamKind kind = ParamKind::kDense;
  TensorView<T> value;
  TensorView<T> grad;  // empty for kSparseRows
  Index offset = -1;   // element offset in params (and grads, optimizer slots) once allocated
};

template <class T>
struct Buffer {
  TensorView<T> view;
  MatView<T> mat() const { return view.mat(); }
};

constexpr size_t kArenaAlign = 64;

struct ArenaEntry {
  std::string name;
  Region region;
  Shape shape;
  size_t elem_size;
  ParamKind kind = ParamKind::kDense;
  size_t offset_bytes = 0;  // from the start of its region
};

class Arena;

// This machine's physical memory in bytes (0 when unknown).
double physical_memory_bytes();

// Throws a shoal::Error naming `options` (the sizes that set `bytes`, e.g. "input_size, h") and
// their values `actual` when `bytes` is more than this machine's physical memory: a clear error
// before allocation, instead of std::bad_alloc or a run that swaps without end.
void check_fits_in_memory(double bytes, std::string_view options, std::string_view actual);

class Planner {
 public:
  // Registers a parameter; its value, grad and offset are filled when the Arena is built.
  template <class T>
  void param(Param<T>& p, std::string name, Shape shape, ParamKind kind = ParamKind::kDense) {
    check_param_type(typeid(T), sizeof(T));
    p.shape = shape;
    p.kind = kind;
    add({std::move(name), Region::kParams, shape, sizeof(T), kind}, &p, &bind_param<T>);
  }
  // Registers a buffer in a non-parameter region.
  template <class T>
  void buffer(Buffer<T>& b, Region region, std::string name, Shape shape) {
    SHOAL_CHECK(
        region != Region::kParams && region != Region::kGrads && region != Region::kOptimState,
        "buffer '{}' must live in state, activations, activation grads or scratch", name);
    add({std::move(name), region, shape, sizeof(T)}, &b, &bind_buffer<T>);
  }
  // Number of optimizer-state copies of the params (0 plain, 1 momentum, 2 Adam).
  void set_optim_slots(int k);
  // Prefix applied to names registered from now on ("block0.ff1."); models nest it.
  void push_scope(std::string_view s);
  void pop_scope();

 private:
  friend class Arena;
  struct Target {
    void* object;
    void (*bind)(void* object, const Arena& arena, const ArenaEntry& entry);
  };
  void add(ArenaEntry e, void* object, void (*bind)(void*, const Arena&, const ArenaEntry&));
  void check_param_type(const std::type_info& t, size_t size);

  template <class T>
  static void bind_param(void* object, const Arena& arena, const ArenaEntry& e);
  template <class T>
  static void bind_buffer(void* object, const Arena& arena, const ArenaEntry& e);

  std::vector<ArenaEntry> entries_;
  std::vector<Target> targets_;
  std::vector<std::string> scope_;
  int optim_slots_ = 0;
  const std::type_info* param_type_ = nullptr;
  size_t param_size_ = 0;
};

class Arena {
 public:
  Arena() = default;
  // Lays out, allocates (zeroed) and binds everything the planner registered.
  explicit Arena(Planner&& planner);
  // A replica for data-parallel training: its params are `source`'s (same names, shapes and
  // order, checked), while grads, activations and scratch are its own. It has no optimizer
  // state: the optimizer runs on the source after replica grads are reduced into it.
  Arena(Planner&& planner, const Arena& source);

  size_t bytes() const { return total_bytes_; }
  size_t region_bytes(Region r) const { return region_size_[static_cast<size_t>(r)]; }
  std::byte* region_base(Region r) const;
  const std::vector<ArenaEntry>& entries() const { return entries_; }
  int optim_slots() const { return optim_slots_; }
  // Elements of the dense prefix of the params (including alignment padding).
  Index dense_param_elems() const { return dense_elems_; }
  Index param_elems() const { return param_elems_; }
  // Typed flat spans of the parameter regions.
  template <class T>
  T* params() const {
    return reinterpret_cast<T*>(region_base(Region::kParams));
  }
  template <class T>
  T* grads() const {
    return reinterpret_cast<T*>(region_base(Region::kGrads));
  }
  template <class T>
  T* optim_state(int slot) const;
  // Named lookup (checkpoints, tests, inspection); throws if absent or of another type.
  template <class T>
  TensorView<T> find(std::string_view name) const;
  const ArenaEntry* entry(std::string_view name) const;

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  void layout();
  void allocate_and_bind(Planner& planner);

  std::unique_ptr<std::byte, Free> memory_;
  const Arena* param_source_ = nullptr;
  std::vector<ArenaEntry> entries_;
  size_t region_offset_[kRegionCount] = {};
  size_t region_size_[kRegionCount] = {};
  size_t total_bytes_ = 0;
  Index dense_elems_ = 0;
  Index param_elems_ = 0;
  size_t param_size_ = 0;
  int optim_slots_ = 0;
};

template <class T>
T* Arena::optim_state(int slot) const {
  SHOAL_CHECK(slot >= 0 && slot < optim_slots_, "optimizer slot {} not planned ({} slots)", slot,
              optim_slots_);
  return reinterpret_cast<T*>(region_base(Region::kOptimState) +
                              static_cast<size_t>(slot) * static_cast<size_t>(param_elems_) *
                                  param_size_);
}

template <class T>
TensorView<T> Arena::find(std::string_view name) const {
  const ArenaEntry* e = entry(name);
  SHOAL_CHECK(e != nullptr, "no arena entry named '{}'", name);
  SHOAL_CHECK(e->elem_size == sizeof(T), "arena entry '{}' has element size {}, not {}", name,
              e->elem_size, sizeof(T));
  return {reinterpret_cast<T*>(region_base(e->region) + e->offset_bytes), e->shape};
}

template <class T>
void Planner::bind_param(void* object, const Arena& arena, const ArenaEntry& e) {
  auto& p = *static_cast<Param<T>*>(object);
  p.offset = static_cast<Index>(e.offset_bytes / sizeof(T));
  p.value = {reinterpret_cast<T*>(arena.region_base(Region::kParams) + e.offset_bytes), e.shape};
  if (e.kind == ParamKind::kDense)
    p.grad = {reinterpret_cast<T*>(arena.region_base(Region::kGrads) + e.offset_bytes), e.shape};
  else
    p.grad = {};
}

template <class T>
void Planner::bind_buffer(void* object, const Arena& arena, const ArenaEntry& e) {
  auto& b = *static_cast<Buffer<T>*>(object);
  b.view = {reinterpret_cast<T*>(arena.region_base(e.region) + e.offset_bytes), e.shape};
}

// Plans `layer` for `rows` input rows under the parameter scope `prefix` (its state_dict name).
template <class Layer>
void plan_layer(Planner& planner, std::string_view prefix, Layer& layer, Index rows) {
  planner.push_scope(prefix);
  layer.plan(planner, rows);
  planner.pop_scope();
}

}  // namespace shoal
