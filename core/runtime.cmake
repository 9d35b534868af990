# The parameter-server runtime: server loop and state machine, worker client, shard plan,
# checkpoints, learning-rate schedule. LibTorch-free.
sparseps_library(sparseps_runtime
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/allocator.cc
    ${CMAKE_CURRENT_LIST_DIR}/checkpoint.cc
    ${CMAKE_CURRENT_LIST_DIR}/job.cc
    ${CMAKE_CURRENT_LIST_DIR}/lr_schedule.cc
    ${CMAKE_CURRENT_LIST_DIR}/protocol.cc
    ${CMAKE_CURRENT_LIST_DIR}/server.cc
    ${CMAKE_CURRENT_LIST_DIR}/server_core.cc
    ${CMAKE_CURRENT_LIST_DIR}/shard_plan.cc
    ${CMAKE_CURRENT_LIST_DIR}/worker_client.cc
  DEPS sparseps_wire sparseps_optim absl::status absl::statusor absl::strings absl::span ZLIB::ZLIB Threads::Threads)

# The drop-in LibTorch optimizer over the runtime.
sparseps_library(sparseps_ps_optimizer
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/ps_optimizer.cc
  DEPS sparseps_runtime sparseps_layout)

# The runtime over transport/: Gloo rendezvous, channel, handshake.
sparseps_library(sparseps_connect
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/channel_endpoint.cc
    ${CMAKE_CURRENT_LIST_DIR}/connect.cc
  DEPS sparseps_runtime sparseps_transport)

# The TCP store for rendezvous across machines, from LibTorch (c10d::TCPStore).
sparseps_library(sparseps_tcp_store
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tcp_store.cc
  DEPS sparseps_transport sparseps_torch)

# One call per rank from a LibTorch model (ps_rank.h) and its options (rank_options.h).
sparseps_library(sparseps_ps_rank
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/ps_rank.cc
    ${CMAKE_CURRENT_LIST_DIR}/rank_options.cc
  DEPS sparseps_connect sparseps_layout sparseps_runtime sparseps_tcp_store sparseps_optim)
