// What the core can do, measured: its FP32 FMA peak (the roof every "% of peak" figure divides
// by, in the profiler and the benchmarks) and the cost of handing a cache line between two
// cores.
#pragma once

#include "shoal/kernels/isa.h"

namespace shoal::kernels {

// Single-core FP32 peak in GFLOP/s: 12 independent FMA chains of the widest vectors this CPU
// runs (widest_isa(): zmm with AVX-512, ymm with AVX2, else xmm), five runs of ~0.2 s, the best
// ~60 µs chunk of them (robust to time slices lost on a shared machine). The roof of every
// "% of peak", also when SHOAL_ISA narrows the kernels: a narrower path shows as a lower %.
double measure_peak_gflops();
// The same loop on the vectors of `isa` (which this CPU must run).
double measure_peak_gflops(Isa isa);

// Median cache-line round trip between two CPUs, in ns: two threads pinned to cpu_a and cpu_b
// hand a counter back and forth `round_trips` times, 9 times over. What a barrier or a cache
// line written on one core and read on the other costs; on a virtual machine whose host moves
// the vCPUs it can vary tenfold from second to second, one of the things that decide how well
// two threads of one model scale there (docs/ncf.md). Throws if a CPU cannot be pinned.
double measure_core_round_trip_ns(int cpu_a, int cpu_b, int round_trips = 20000);

}  // namespace shoal::kernels
