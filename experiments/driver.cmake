# experiments/driver: sparseps_driver, one rank of a training run (experiments/run starts them).
find_package(nlohmann_json REQUIRED)
sparseps_library(sparseps_driver_lib SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/driver/batch_norm_stats.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/compute_slots.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/device.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/divergence.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/driver_config.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/resolve_config.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/driver_flags.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/presets.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/print_model.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/dry_run.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/evaluate.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/evaluator.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/snapshot_queue.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/progress.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/rank_setup.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/resume_records.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/run_config.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/run_dir.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/server_role.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/summary.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/time_model_flags.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/virtual_role.cc
    ${CMAKE_CURRENT_LIST_DIR}/driver/worker_role.cc
  DEPS sparseps_connect sparseps_virtual sparseps_runtime sparseps_optim sparseps_models
       sparseps_datasets sparseps_ps_rank sparseps_cuda_install sparseps_layout nlohmann_json::nlohmann_json
       absl::status absl::statusor absl::strings absl::str_format)
add_executable(sparseps_driver ${CMAKE_CURRENT_LIST_DIR}/driver/main.cc)
target_compile_options(sparseps_driver PRIVATE ${SPARSEPS_WARNINGS})
target_link_libraries(sparseps_driver PRIVATE sparseps_driver_lib)
sparseps_gloo_first(sparseps_driver)
