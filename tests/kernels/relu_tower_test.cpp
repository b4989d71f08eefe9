// The fused NCF chunk (relu_tower.h) against its plain twin: both kernel shapes, chunks of one
// row, of whole and partial tiles and of several tiles, context widths that cover every tail of
// the context weight gradient's 4-row blocks (and none), a context row stride wider than the
// context, misaligned inputs and gradients (by one float), ids repeated and slots that are not
// the ids, gradients accumulated into earlier contents, and finite garbage in the context's
// padding rows (read by the last tile, adding nothing).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "shoal/core/rng.h"
#include "shoal/kernels/isa.h"
#include "shoal/kernels/relu_tower.h"

namespace shoal::kernels {
namespace relu_tower_test {

struct Widths {
  Index l1, l2, l3, f;
};

// Buffers of both runs: the same random contents, one float past a 32-byte boundary where
// `offset` (the scratch always aligned, as the kernel requires).
struct Buf {
  std::vector<float> mem;
  float* p = nullptr;
  Buf(Index n, Index offset, RngStream& rng) : mem(static_cast<size_t>(n + 16), 0.0f) {
    auto addr = reinterpret_cast<uintptr_t>(mem.data());
    const uintptr_t aligned = (addr + 31) / 32 * 32;
    p = mem.data() + (aligned - addr) / sizeof(float) + offset;
    for (Index i = 0; i < n; ++i) p[i] = rng.uniform(-1.0f, 1.0f);
  }
};

void check(const Widths& w, Index n, Index c, Index ld_ctx, Index offset, RngStream& rng) {
  SCOPED_TRACE(::testing::Message()
               << "widths " << w.l1 << "," << w.l2 << "," << w.l3 << " f " << w.f << " n " << n
               << " c " << c << " ld " << ld_ctx << " offset " << offset);
  const Index users = 11, items = 17, slots_u = 13, slots_i = 19;
  const Index padded = relu_tower_padded_rows(n);
  std::vector<int32_t> uid(static_cast<size_t>(n)), iid(static_cast<size_t>(n));
  std::vector<int32_t> slot_u(static_cast<size_t>(users)), slot_i(static_cast<size_t>(items));
  for (auto& s : slot_u) s = static_cast<int32_t>(rng.next_u32() % slots_u);
  for (auto& s : slot_i) s = static_cast<int32_t>(rng.next_u32() % slots_i);
  for (Index r = 0; r < n; ++r) {
    uid[static_cast<size_t>(r)] = static_cast<int32_t>(rng.next_u32() % users);
    iid[static_cast<size_t>(r)] = static_cast<int32_t>(rng.next_u32() % items);
  }
  std::vector<float> labels(static_cast<size_t>(n));
  for (float& y : labels) y = static_cast<float>(rng.next_u32() % 2);
  // Inputs (shared by both runs).
  Buf ctx(padded * ld_ctx, offset, rng), proj_u(slots_u * w.l1, offset, rng),
      proj_i(slots_i * w.l1, offset, rng), wc_t(std::max<Index>(c, 1) * w.l1, offset, rng),
      b1(w.l1, offset, rng), w2(w.l2 * w.l1, offset, rng), w2_t(w.l1 * w.l2, offset, rng),
      b2(w.l2, offset, rng), w3(w.l3 * w.l2, offset, rng), w3_t(w.l2 * w.l3, offset, rng),
      b3(w.l3, offset, rng), pg(users * w.f, offset, rng), qg(items * w.f, offset, rng),
      wp(w.f + w.l3, offset, rng);
  for (Index o = 0; o < w.l2; ++o)
    for (Index j = 0; j < w.l1; ++j) w2_t.p[j * w.l2 + o] = w2.p[o * w.l1 + j];
  for (Index o = 0; o < w.l3; ++o)
    for (Index j = 0; j < w.l2; ++j) w3_t.p[j * w.l3 + o] = w3.p[o * w.l2 + j];
  // Gradients and outputs, one set per run with the same earlier contents.
  struct Out {
    Buf dwc_t, db1, dw2, db2, dw3, db3, dwp, dbp, gpg, gqg, dz_u, dz_i, logits;
    Buf h1, h2, d1, d2, d3;
  };
  auto make_out = [&](uint64_t seed, Index padded_rows) {
    RngStream r(seed, 1);
    return Out{Buf(std::max<Index>(c, 1) * w.l1, offset, r),
               Buf(w.l1, offset, r),
               Buf(w.l2 * w.l1, offset, r),
               Buf(w.l2, offset, r),
               Buf(w.l3 * w.l2, offset, r),
               Buf(w.l3, offset, r),
               Buf(w.f + w.l3, offset, r),
               Buf(1, offset, r),
               Buf(slots_u * w.f, offset, r),
               Buf(slots_i * w.f, offset, r),
               Buf(slots_u * w.l1, offset, r),
               Buf(slots_i * w.l1, offset, r),
               Buf(n, offset, r),
               Buf(padded_rows * w.l1, 0, r),
               Buf(padded_rows * w.l2, 0, r),
               Buf(padded_rows * w.l1, 0, r),
               Buf(padded_rows * w.l2, 0, r),
               Buf(padded_rows * w.l3, 0, r)};
  };
  const uint64_t seed = rng.next_u32();
  Out fast = make_out(seed, padded), ref = make_out(seed, padded);
  auto args = [&](Out& o) {
    ReluTowerChunk a;
    a.n = n;
    a.c = c;
    a.ctx = ctx.p;
    a.ld_ctx = ld_ctx;
    a.users = uid.data();
    a.items = iid.data();
    a.proj_u = proj_u.p;
    a.slot_u = slot_u.data();
    a.proj_i = proj_i.p;
    a.slot_i = slot_i.data();
    a.wc_t = wc_t.p;
    a.b1 = b1.p;
    a.w2 = w2.p;
    a.w2_t = w2_t.p;
    a.b2 = b2.p;
    a.w3 = w3.p;
    a.w3_t = w3_t.p;
    a.b3 = b3.p;
    a.pg = pg.p;
    a.qg = qg.p;
    a.wp = wp.p;
    a.bp = 0.3f;
    a.labels = labels.data();
    a.scale = 1.0f / static_cast<float>(n);
    a.dwc_t = o.dwc_t.p;
    a.db1 = o.db1.p;
    a.dw2 = o.dw2.p;
    a.db2 = o.db2.p;
    a.dw3 = o.dw3.p;
    a.db3 = o.db3.p;
    a.dwp = o.dwp.p;
    a.dbp = o.dbp.p;
    a.gpg = o.gpg.p;
    a.gqg = o.gqg.p;
    a.dz_u = o.dz_u.p;
    a.dz_i = o.dz_i.p;
    a.logits = o.logits.p;
    a.h1 = o.h1.p;
    a.h2 = o.h2.p;
    a.d1 = o.d1.p;
    a.d2 = o.d2.p;
    a.d3 = o.d3.p;
    return a;
  };
  const double loss = relu_tower_chunk(w.l1, w.l2, w.l3, w.f, args(fast));
  const double loss_ref = relu_tower_chunk_ref(w.l1, w.l2, w.l3, w.f, args(ref));
  EXPECT_NEAR(loss, loss_ref, 1e-5 * std::abs(loss_ref));
  auto expect_near = [&](const char* name, const Buf& a, const Buf& b, Index count) {
    for (Index i = 0; i < count; ++i)
      ASSERT_NEAR(a.p[i], b.p[i], 1e-5f + 1e-4f * std::abs(b.p[i])) << name << " " << i;
  };
  expect_near("logits", fast.logits, ref.logits, n);
  expect_near("dwc_t", fast.dwc_t, ref.dwc_t, c * w.l1);
  expect_near("db1", fast.db1, ref.db1, w.l1);
  expect_near("dw2", fast.dw2, ref.dw2, w.l2 * w.l1);
  expect_near("db2", fast.db2, ref.db2, w.l2);
  expect_near("dw3", fast.dw3, ref.dw3, w.l3 * w.l2);
  expect_near("db3", fast.db3, ref.db3, w.l3);
  expect_near("dwp", fast.dwp, ref.dwp, w.f + w.l3);
  expect_near("dbp", fast.dbp, ref.dbp, 1);
  expect_near("gpg", fast.gpg, ref.gpg, slots_u * w.f);
  expect_near("gqg", fast.gqg, ref.gqg, slots_i * w.f);
  expect_near("dz_u", fast.dz_u, ref.dz_u, slots_u * w.l1);
  expect_near("dz_i", fast.dz_i, ref.dz_i, slots_i * w.l1);
}

TEST(ReluTower, FusedChunkEqualsItsTwin) {
  const Widths shapes[] = {{32, 16, 8, 8}, {64, 32, 16, 16}};
  for (const Widths& w : shapes) {
    if (!relu_tower_supported(w.l1, w.l2, w.l3, w.f))
      GTEST_SKIP() << "no fused NCF kernel in this build (needs AVX2 and FMA)";
  }
  RngStream rng(31, 0);
  const Index rows[] = {1, 5, 6, 7, 12, 13, 40};
  const Index contexts[] = {0, 1, 3, 5, 6, 21};
  for (const Widths& w : shapes)
    for (const Index n : rows)
      for (const Index c : contexts)
        for (const Index offset : {0, 1}) check(w, n, c, c + 3 * offset, offset, rng);
}

TEST(ReluTower, SupportedWidths) {
  // Highway code: every path has the fused kernels.
  EXPECT_TRUE(relu_tower_supported(32, 16, 8, 8));
  EXPECT_TRUE(relu_tower_supported(64, 32, 16, 16));
  EXPECT_FALSE(relu_tower_supported(32, 16, 8, 16));
  EXPECT_FALSE(relu_tower_supported(48, 16, 8, 8));
}

}  // namespace relu_tower_test
}  // namespace shoal::kernels
