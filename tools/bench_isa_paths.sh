#!/bin/sh
# The figures of docs/performance.md, "Run-time dispatch", in one sitting: the branch's `shoal`
# on its default (widest) path and with SHOAL_ISA=avx2, against another build (e.g. an older
# commit's) as it runs here and with its libraries pinned to their AVX2 kernels
# (LIBXSMM_TARGET=hsw OPENBLAS_CORETYPE=Haswell: what an AVX2 machine runs). The commands
# alternate within each round, so that the machine's drift hits all of them alike. Each binary
# keeps its machine cache in a HOME of its own (their cache formats differ).
#   tools/bench_isa_paths.sh NEW_SHOAL BASE_SHOAL OUT_DIR [ROUNDS]
set -eu
new=$1 base=$2 out=$3 rounds=${4:-3}
mkdir -p "$out/home_new" "$out/home_base"
run() {
  tag=$1
  shift
  case $tag in
    new512) HOME=$out/home_new "$new" "$@" ;;
    new2) HOME=$out/home_new SHOAL_ISA=avx2 "$new" "$@" ;;
    base) HOME=$out/home_base "$base" "$@" ;;
    basehsw) HOME=$out/home_base LIBXSMM_TARGET=hsw OPENBLAS_CORETYPE=Haswell "$base" "$@" ;;
  esac
}
{ date -u; uptime; grep -m1 "model name" /proc/cpuinfo; } > "$out/start.txt"
r=1
while [ "$r" -le "$rounds" ]; do
  for t in new512 new2 base basehsw; do run $t bench kernels > "$out/K_${t}_$r.txt" 2>&1; done
  for t in new2 basehsw new512 base; do
    run $t bench tsmixerx --fits 2 --step-reps 2 > "$out/T_${t}_$r.txt" 2>&1
  done
  for t in basehsw new2 base new512; do
    run $t bench ncf --positives 600000 --epochs 1 --threads-list 1 --warm-up 0.2 \
      > "$out/N_${t}_$r.txt" 2>&1
  done
  for t in new2 basehsw new512 base; do
    run $t bench models --models nlinear,dlinear,tide --threads-list 1 > "$out/M_${t}_$r.txt" 2>&1
  done
  for t in basehsw new2 base new512; do
    run $t bench models --models mlp,nhits --max-steps 30 --threads-list 1 \
      > "$out/H_${t}_$r.txt" 2>&1
  done
  r=$((r + 1))
done
for t in new512 new2; do run $t bench peak > "$out/P_${t}.txt" 2>&1; done
HOME=$out/home_new SHOAL_ISA=sse4 "$new" bench peak > "$out/P_sse4.txt" 2>&1
{ date -u; uptime; } >> "$out/start.txt"
