sparseps_test(runtime_core_test
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/shard_core_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/push_guard_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/checkpoint_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/lr_schedule_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/shard_plan_test.cc
    ${CMAKE_CURRENT_LIST_DIR}/diverged_push_test.cc
  DEPS sparseps_runtime)
# LocalHub (local_hub.h): ranks as threads of one process, for the tests only.
sparseps_test(runtime_loop_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/runtime_loop_test.cc ${CMAKE_CURRENT_LIST_DIR}/local_hub.cc
  DEPS sparseps_runtime)
sparseps_test(session_identity_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/session_identity_test.cc ${CMAKE_CURRENT_LIST_DIR}/local_hub.cc
  DEPS sparseps_virtual)
sparseps_test(misbehaving_worker_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/misbehaving_worker_test.cc ${CMAKE_CURRENT_LIST_DIR}/local_hub.cc
  DEPS sparseps_virtual)
sparseps_test(ps_worker_sgd_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/ps_worker_sgd_test.cc ${CMAKE_CURRENT_LIST_DIR}/local_hub.cc
  DEPS sparseps_ps_rank)

# Real multi-process jobs: ps_job_rank is one rank, ps_job_test launches whole jobs.
add_executable(ps_job_rank ${CMAKE_CURRENT_LIST_DIR}/ps_job_rank.cc)
target_compile_options(ps_job_rank PRIVATE ${SPARSEPS_WARNINGS})
target_link_libraries(ps_job_rank PRIVATE sparseps_connect)
sparseps_test(ps_job_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/ps_job_test.cc
  DEPS sparseps_runtime)
# rogue_rank: a worker that breaks the protocol, for the rogue-peer cases of ps_job_test.
add_executable(rogue_rank ${CMAKE_CURRENT_LIST_DIR}/rogue_rank.cc)
target_compile_options(rogue_rank PRIVATE ${SPARSEPS_WARNINGS})
target_link_libraries(rogue_rank PRIVATE sparseps_connect)
target_compile_definitions(ps_job_test PRIVATE SPARSEPS_PS_JOB_RANK="$<TARGET_FILE:ps_job_rank>"
                                               SPARSEPS_ROGUE_RANK="$<TARGET_FILE:rogue_rank>")
add_dependencies(ps_job_test ps_job_rank rogue_rank)
# Its own process: glibc's malloc thresholds are per process.
sparseps_test(allocator_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/allocator_test.cc
  DEPS sparseps_runtime)
sparseps_test(virtual_job_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/virtual_job_test.cc
  DEPS sparseps_virtual)
sparseps_test(own_method_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/own_method_test.cc
  DEPS sparseps_virtual)
sparseps_test(own_compressor_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/own_compressor_test.cc
  DEPS sparseps_virtual)
sparseps_test(f16_state_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/f16_state_test.cc
  DEPS sparseps_runtime)
sparseps_test(ps_rank_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/ps_rank_test.cc
  DEPS sparseps_ps_rank)

# The TCP store (LibTorch's c10d) as the rendezvous store of two ranks.
sparseps_test(tcp_store_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/tcp_store_test.cc
  DEPS sparseps_tcp_store)
