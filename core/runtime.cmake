# The parameter-server runtime: server loop and state machine, worker client, shard plan,
# checkpoints, learning-rate schedule. LibTorch-free.
sparseps_library(sparseps_runtime
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cc
    ${CMAKE_CURRENT_LIST_DIR}/local_hub.cc
    ${CMAKE_CURRENT_LIST_DIR}/lr_schedule.cc
    ${CMAKE_CURRENT_LIST_DIR}/protocol.cc
    ${CMAKE_CURRENT_LIST_DIR}/server.cc
    ${CMAKE_CURRENT_LIST_DIR}/server_core.cc
    ${CMAKE_CURRENT_LIST_DIR}/shard_plan.cc
    ${CMAKE_CURRENT_LIST_DIR}/worker_client.cc
  DEPS sparseps_wire absl::status absl::statusor absl::strings absl::span ZLIB::ZLIB Threads::Threads)
