# Every dependency is a Debian package (see tools/install-deps.sh), found the ordinary way.
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
# libxsmm: JIT GEMM kernels for x86 only (Debian packages it for amd64 alone). On x86 it is
# required unless SHOAL_XSMM is switched off; elsewhere it is not looked for.
if(SHOAL_X86)
  option(SHOAL_XSMM "Use libxsmm's JIT GEMM kernels (x86)" ON)
else()
  set(SHOAL_XSMM OFF)
endif()
if(SHOAL_XSMM)
  pkg_check_modules(XSMM REQUIRED IMPORTED_TARGET libxsmm)
endif()
pkg_check_modules(OPENBLAS REQUIRED openblas)
# Highway: the portable SIMD layer every hand-written kernel is written over, compiled per
# target and dispatched at run time (src/shoal/kernels/dispatch.h, docs/kernels.md).
pkg_check_modules(HWY REQUIRED IMPORTED_TARGET libhwy)

# Random123 is header-only and ships no CMake or pkg-config file.
find_path(RANDOM123_INCLUDE_DIR Random123/philox.h REQUIRED)

# libxsmm's GEMM fallback refers to the Fortran BLAS (sgemm_, dgemm_, ...). shoal only asks it
# for JIT kernels, never for that fallback, so libxsmm's own stubs stand in for them (after
# libxsmm on the link line, as both are static).
add_library(shoal::xsmm INTERFACE IMPORTED)
if(SHOAL_XSMM)
  find_library(XSMM_NOBLAS_LIBRARY xsmmnoblas HINTS ${XSMM_LIBRARY_DIRS} REQUIRED)
  target_link_libraries(shoal::xsmm INTERFACE PkgConfig::XSMM ${XSMM_NOBLAS_LIBRARY})
endif()
# OpenBLAS is not linked: src/shoal/kernels/blas_loader.cpp loads it on first use, after
# choosing its core type from the CPU's features (OpenBLAS fixes that choice as it is loaded).
# Only its cblas.h is needed at build time.
add_library(shoal::blas INTERFACE IMPORTED)
target_include_directories(shoal::blas INTERFACE ${OPENBLAS_INCLUDE_DIRS})
target_link_libraries(shoal::blas INTERFACE ${CMAKE_DL_LIBS})

if(SHOAL_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(SHOAL_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
