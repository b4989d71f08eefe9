# Flags shared by every shoal target: warnings (as errors by default), the target ISA, math
# flags and the sanitizers of the asan preset.
function(shoal_apply_flags target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough
                                           # Configs are built with designated initializers that
                                           # leave defaulted members out on purpose.
                                           -Wno-missing-field-initializers
                                           # gcc 12 reports std::string concatenation at -O3
                                           # as overlapping memcpy (GCC bug 105329).
                                           -Wno-restrict)
  if(SHOAL_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(SHOAL_ARCH)
    target_compile_options(${target} PRIVATE -march=${SHOAL_ARCH})
  endif()
  # shoal never reads errno after a math call; without this gcc will not vectorise sqrt/exp.
  target_compile_options(${target} PRIVATE -fno-math-errno)
  target_include_directories(${target} SYSTEM PRIVATE ${RANDOM123_INCLUDE_DIR})
  if(SHOAL_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${SHOAL_SANITIZE} -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=${SHOAL_SANITIZE})
  endif()
endfunction()
