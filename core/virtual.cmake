# core/virtual: a whole job in one process in simulated time (discrete events, link and
# server queues), with the real rules and wire format. LibTorch-free: the driver brings
# the models through VirtualWorkload.
sparseps_library(sparseps_virtual
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/virtual/time_model.cc
    ${CMAKE_CURRENT_LIST_DIR}/virtual/virtual_job.cc
  DEPS sparseps_runtime sparseps_transport absl::status absl::statusor absl::strings)
