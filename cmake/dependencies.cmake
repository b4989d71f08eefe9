# Every dependency is a Debian package (see tools/install-deps.sh), found the ordinary way.
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(ZLIB REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(XSMM REQUIRED IMPORTED_TARGET libxsmm)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)

# Random123 is header-only and ships no CMake or pkg-config file.
find_path(RANDOM123_INCLUDE_DIR Random123/philox.h REQUIRED)

add_library(shoal::xsmm INTERFACE IMPORTED)
target_link_libraries(shoal::xsmm INTERFACE PkgConfig::XSMM)
add_library(shoal::blas INTERFACE IMPORTED)
target_link_libraries(shoal::blas INTERFACE PkgConfig::OPENBLAS)

if(SHOAL_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(SHOAL_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()
