#include <gtest/gtest.h>

#include <cstdint>

#include "shoal/core/arena.h"

namespace shoal {
namespace arena_test {

TEST(Arena, LaysOutRegionsAlignedWithDenseParamsFirst) {
  Param<float> a, table, b;
  Buffer<float> act;
  Buffer<int32_t> ids;
  Planner planner;
  planner.set_optim_slots(2);
  planner.param(a, "a", {3, 5});
  planner.param(table, "table", {10, 4}, ParamKind::kSparseRows);
  planner.param(b, "b", {7});
  planner.buffer(act, Region::kActivations, "act", {4, 9});
  planner.buffer(ids, Region::kScratch, "ids", {33});
  Arena arena(std::move(planner));

  // 15 floats -> 64 bytes, 7 floats -> 64 bytes: dense prefix is 32 elements, table after.
  EXPECT_EQ(a.offset, 0);
  EXPECT_EQ(b.offset, 16);
  EXPECT_EQ(table.offset, 32);
  EXPECT_EQ(arena.dense_param_elems(), 32);
  EXPECT_EQ(arena.param_elems(), 32 + 48);  // 40 floats padded to 48
  EXPECT_EQ(arena.region_bytes(Region::kGrads), 32 * sizeof(float));
  EXPECT_EQ(arena.region_bytes(Region::kOptimState), 2 * 80 * sizeof(float));
  for (const void* p :
       {static_cast<const void*>(a.value.data), static_cast<const void*>(b.grad.data),
        static_cast<const void*>(table.value.data), static_cast<const void*>(act.view.data),
        static_cast<const void*>(ids.view.data)})
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kArenaAlign, 0u);
  EXPECT_EQ(table.grad.data, nullptr);
  EXPECT_EQ(b.grad.data, arena.grads<float>() + b.offset);
  EXPECT_EQ(arena.optim_state<float>(1) + table.offset,
            arena.optim_state<float>(0) + arena.param_elems() + table.offset);
  // Everything starts zeroed and named lookup finds the same memory.
  for (float v : act.view) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(arena.find<float>("act").data, act.view.data);
  EXPECT_THROW(arena.find<double>("act"), Error);
  EXPECT_THROW(arena.find<float>("nope"), Error);
}

TEST(Arena, ScopesPrefixNamesAndDuplicatesAreRejected) {
  Param<float> w1, w2;
  Planner planner;
  planner.push_scope("block0.");
  planner.param(w1, "weight", {2});
  planner.pop_scope();
  planner.param(w2, "weight", {2});
  Param<float> w3;
  EXPECT_THROW(planner.param(w3, "weight", {2}), Error);
  Arena arena(std::move(planner));
  EXPECT_NE(arena.entry("block0.weight"), nullptr);
  EXPECT_NE(arena.entry("weight"), nullptr);
}

TEST(Arena, ParamsMustShareOneType) {
  Param<float> f;
  Param<double> d;
  Planner planner;
  planner.param(f, "f", {2});
  EXPECT_THROW(planner.param(d, "d", {2}), Error);
}

TEST(Arena, ReplicaSharesParamsAndOwnsGrads) {
  auto plan = [](Param<float>& w, Buffer<float>& act) {
    Planner p;
    p.set_optim_slots(2);
    p.param(w, "w", {4, 3});
    p.buffer(act, Region::kActivations, "act", {2, 2});
    return p;
  };
  Param<float> w_main, w_rep;
  Buffer<float> act_main, act_rep;
  Arena main_arena(plan(w_main, act_main));
  Arena replica(plan(w_rep, act_rep), main_arena);
  EXPECT_EQ(w_rep.value.data, w_main.value.data);
  EXPECT_NE(w_rep.grad.data, w_main.grad.data);
  EXPECT_NE(act_rep.view.data, act_main.view.data);
  EXPECT_EQ(replica.region_bytes(Region::kOptimState), 0u);
  EXPECT_EQ(replica.grads<float>() + w_rep.offset, w_rep.grad.data);
}

TEST(Arena, ReplicaMustMatchItsSource) {
  Param<float> a, b;
  Planner p1;
  p1.param(a, "a", {4});
  Arena source(std::move(p1));
  Planner p2;
  p2.param(b, "a", {5});
  EXPECT_THROW(Arena(std::move(p2), source), Error);
}

TEST(Shape, NumelAndChecks) {
  EXPECT_EQ((Shape{2, 3, 4}).numel(), 24);
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_EQ((Shape{2, 3}).str(), "[2, 3]");
  EXPECT_THROW((Shape{-1}), Error);
  EXPECT_THROW(check_shape(Shape{2, 3}, Shape{3, 2}, "x"), Error);
  EXPECT_NO_THROW(check_shape(Shape{2, 3}, Shape{2, 3}, "x"));
}

TEST(MatView, BlocksAreStridedViews) {
  float buf[4 * 6];
  for (int i = 0; i < 24; ++i) buf[i] = static_cast<float>(i);
  MatView<float> m(buf, 4, 6);
  auto right = m.cols_block(4, 2);
  EXPECT_EQ(right.ld, 6);
  EXPECT_EQ(right(1, 0), 10.0f);
  auto lower = m.rows_block(2, 2);
  EXPECT_EQ(lower(0, 0), 12.0f);
  EXPECT_FALSE(right.contiguous());
  EXPECT_TRUE(lower.contiguous());
}

TEST(Error, FormatsContext) {
  Error e("value is not a number", ErrorContext{.file = "data.csv",
                                                .line = 12,
                                                .column = 3,
                                                .field = "y",
                                                .expected = "a float",
                                                .actual = "'abc'"});
  EXPECT_STREQ(e.what(),
               "data.csv:12:3: field 'y': value is not a number (expected a float, got 'abc')");
  Error plain("boom");
  EXPECT_STREQ(plain.what(), "boom");
}

}  // namespace arena_test
}  // namespace shoal
