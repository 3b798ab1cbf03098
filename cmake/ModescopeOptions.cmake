# Project options. All prefixed MODESCOPE_.
set(MODESCOPE_WITH_CUDA "AUTO" CACHE STRING "Build the CUDA backend: AUTO, ON or OFF")
set_property(CACHE MODESCOPE_WITH_CUDA PROPERTY STRINGS AUTO ON OFF)
set(MODESCOPE_WITH_GUI "AUTO" CACHE STRING "Build the desktop app and views (Qt 6, Graphviz): AUTO, ON or OFF")
set_property(CACHE MODESCOPE_WITH_GUI PROPERTY STRINGS AUTO ON OFF)
set(MODESCOPE_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address,undefined")
option(MODESCOPE_BUILD_TESTS "Build the tests" ON)
option(MODESCOPE_WARNINGS_AS_ERRORS "Treat warnings as errors" OFF)
# Unity builds: each target compiles its sources in batches, one translation unit per batch, so the
# heavy headers (the standard library, Eigen, oneDNN, nlohmann-json, GoogleTest, Qt) are parsed and
# their inline code compiled once per batch instead of once per file. A cold build takes about half
# the time. Files that must stay alone set SKIP_UNITY_BUILD_INCLUSION; names at file scope in one
# batch share a translation unit, so helpers in anonymous namespaces need distinct names.
option(MODESCOPE_UNITY_BUILD "Compile each target's sources in unity batches" ON)
set(MODESCOPE_UNITY_BATCH_SIZE 8 CACHE STRING "Sources per unity batch")
if(MODESCOPE_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE ${MODESCOPE_UNITY_BATCH_SIZE})
endif()

if(NOT CMAKE_CXX_COMPILER_LAUNCHER)
  find_program(CCACHE_PROGRAM ccache)
  if(CCACHE_PROGRAM)
    set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
    set(CMAKE_C_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  endif()
endif()

# Warnings for our own targets.
add_library(modescope_warnings INTERFACE)
target_compile_options(modescope_warnings INTERFACE
                       $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-unused-parameter>
                       $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${MODESCOPE_WARNINGS_AS_ERRORS}>>:-Werror>)

# libFuzzer builds (clang; the `fuzz` preset): every target gets coverage instrumentation and the
# fuzz targets (tests/fuzz) link libFuzzer's main.
option(MODESCOPE_FUZZ "Build tests/fuzz as libFuzzer binaries (clang)" OFF)
if(MODESCOPE_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(MODESCOPE_SANITIZE)
  message(STATUS "Modescope: building with -fsanitize=${MODESCOPE_SANITIZE}")
  add_compile_options(-fsanitize=${MODESCOPE_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${MODESCOPE_SANITIZE})
endif()
