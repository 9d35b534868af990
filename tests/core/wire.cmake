# tests/core/wire: the message format (round trips, sizes, every decode error), f16, varints.
sparseps_test(wire_test SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/wire_checksum_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/wire_roundtrip_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/wire_size_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/wire_varint_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/wire_errors_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/wire_coded_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/wire_borrow_test.cc
  DEPS sparseps_wire)
