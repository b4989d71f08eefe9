// Internal to src/shoal/kernels: the constants of the BCE-with-logits polynomials (bce.h),
// shared by the reference (bce_ref.cpp) and the vector lanes (vec8.h's bce_logit, used by the
// column pass in bce.cpp and the fused NCF tower in relu_tower.cpp). Not a public header.
#pragma once

namespace shoal::kernels::detail {

// Cephes' expf polynomial, highest degree first.
inline constexpr float kExpPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                      4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
inline constexpr float kRound = 12582912.0f;  // 1.5·2^23
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
inline constexpr float kExpFloor = -87.0f;

}  // namespace shoal::kernels::detail
