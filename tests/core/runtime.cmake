sparseps_test(runtime_core_test
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/server_core_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/checkpoint_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/lr_schedule_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/shard_plan_test.cc
  DEPS sparseps_runtime)
sparseps_test(runtime_loop_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runtime_loop_test.cc
  DEPS sparseps_runtime)
