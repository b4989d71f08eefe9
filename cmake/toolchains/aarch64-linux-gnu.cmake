# Cross build for 64-bit Arm Linux with Debian's cross compiler and the arm64 multiarch -dev
# packages (tools/test_aarch64.sh installs and drives it). Tests run through qemu-aarch64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Libraries and pkg-config files of the arm64 packages; headers of /usr/include (Random123,
# nlohmann/json, CLI11 are architecture-independent) are found as usual.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# ctest (and gtest_discover_tests) run the test binaries through user-mode qemu. The loader and
# libraries are the arm64 multiarch packages' (/lib/ld-linux-aarch64.so.1, /usr/lib/
# aarch64-linux-gnu, installed with the -dev packages), so no -L prefix: with
# `-L /usr/aarch64-linux-gnu`, qemu 7.2 hangs in the first pthread_create of a process.
# SHOAL_TEST_EMULATOR tells the few tests that check what an emulator does not pass through
# (huge pages: qemu keeps madvise to itself) to skip, saying so.
set(CMAKE_CROSSCOMPILING_EMULATOR env SHOAL_TEST_EMULATOR=qemu-aarch64 qemu-aarch64)
