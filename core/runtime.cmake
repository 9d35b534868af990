# The parameter-server runtime: server state machine, checkpoints, learning-rate schedule.
sparseps_library(sparseps_runtime
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cc
    ${CMAKE_CURRENT_LIST_DIR}/lr_schedule.cc
    ${CMAKE_CURRENT_LIST_DIR}/server_core.cc
    ${CMAKE_CURRENT_LIST_DIR}/shard_plan.cc
  DEPS absl::status absl::statusor absl::strings absl::span ZLIB::ZLIB)
