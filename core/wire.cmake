# core/wire: the message format (header, per-segment encodings, validating decoder).
set(SPARSEPS_WIRE_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/wire.cc
  ${CMAKE_CURRENT_LIST_DIR}/wire_checksum.cc
  ${CMAKE_CURRENT_LIST_DIR}/wire_encoding.cc
  ${CMAKE_CURRENT_LIST_DIR}/wire_header.cc)
set(SPARSEPS_WIRE_ABSL_DEPS absl::status absl::statusor absl::span absl::strings absl::bits)
sparseps_library(sparseps_wire SOURCES ${SPARSEPS_WIRE_SOURCES}
  DEPS sparseps_compressors ${SPARSEPS_WIRE_ABSL_DEPS} xxhash::xxhash)

# The decoder's libFuzzer target (scripts/fuzz builds it with clang in build-fuzz/). It
# compiles the wire sources itself so that they, and only they, carry the sanitizers.
# The compressors/ kernels the wire sources call come along, sanitized too.
if(SPARSEPS_FUZZ)
  list(APPEND SPARSEPS_WIRE_SOURCES ${CMAKE_SOURCE_DIR}/compressors/half.cc
       ${CMAKE_SOURCE_DIR}/compressors/simd.cc ${CMAKE_SOURCE_DIR}/compressors/stream_copy.cc)
  set(SPARSEPS_FUZZ_FLAGS -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -g -O1)
  add_executable(fuzz_wire_decode ${CMAKE_SOURCE_DIR}/fuzz/fuzz_wire_decode.cc ${SPARSEPS_WIRE_SOURCES})
  target_compile_options(fuzz_wire_decode PRIVATE ${SPARSEPS_WARNINGS} ${SPARSEPS_FUZZ_FLAGS})
  target_link_options(fuzz_wire_decode PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_wire_decode PRIVATE ${SPARSEPS_WIRE_ABSL_DEPS} xxhash::xxhash)
  # Writes a seed corpus of valid messages (plain build, same sources).
  add_executable(fuzz_wire_seeds ${CMAKE_SOURCE_DIR}/fuzz/fuzz_wire_seeds.cc ${SPARSEPS_WIRE_SOURCES})
  target_compile_options(fuzz_wire_seeds PRIVATE ${SPARSEPS_WARNINGS})
  target_link_libraries(fuzz_wire_seeds PRIVATE ${SPARSEPS_WIRE_ABSL_DEPS} xxhash::xxhash)
endif()
