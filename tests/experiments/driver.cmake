# tests/experiments: the experiment driver end to end, through experiments/run.
find_package(nlohmann_json REQUIRED)
sparseps_test(driver_test SOURCES driver_test.cc DEPS nlohmann_json::nlohmann_json)
add_dependencies(driver_test sparseps_driver)
target_compile_definitions(driver_test PRIVATE
  SPARSEPS_DRIVER_BINARY="$<TARGET_FILE:sparseps_driver>")
sparseps_test(driver_stop_test SOURCES driver_stop_test.cc DEPS nlohmann_json::nlohmann_json absl::strings)
add_dependencies(driver_stop_test sparseps_driver)
target_compile_definitions(driver_stop_test PRIVATE
  SPARSEPS_DRIVER_BINARY="$<TARGET_FILE:sparseps_driver>")
sparseps_test(driver_divergence_test SOURCES driver_divergence_test.cc
  DEPS nlohmann_json::nlohmann_json)
add_dependencies(driver_divergence_test sparseps_driver)
target_compile_definitions(driver_divergence_test PRIVATE
  SPARSEPS_DRIVER_BINARY="$<TARGET_FILE:sparseps_driver>")
sparseps_test(netns_cluster_test SOURCES netns_cluster_test.cc
  DEPS nlohmann_json::nlohmann_json absl::strings)
add_dependencies(netns_cluster_test sparseps_driver)
target_compile_definitions(netns_cluster_test PRIVATE
  SPARSEPS_DRIVER_BINARY="$<TARGET_FILE:sparseps_driver>")
sparseps_test(batch_norm_stats_test SOURCES batch_norm_stats_test.cc DEPS sparseps_driver_lib)
sparseps_test(virtual_test SOURCES virtual_test.cc DEPS nlohmann_json::nlohmann_json absl::strings)
add_dependencies(virtual_test sparseps_driver)
target_compile_definitions(virtual_test PRIVATE
  SPARSEPS_DRIVER_BINARY="$<TARGET_FILE:sparseps_driver>")
sparseps_test(compute_slots_test SOURCES compute_slots_test.cc DEPS sparseps_driver_lib)
sparseps_test(evaluator_queue_test SOURCES evaluator_queue_test.cc DEPS sparseps_driver_lib)
sparseps_test(divergence_test SOURCES divergence_test.cc DEPS sparseps_driver_lib)
sparseps_test(driver_config_test SOURCES driver_config_test.cc DEPS sparseps_driver_lib)
sparseps_test(job_fronts_test SOURCES job_fronts_test.cc DEPS sparseps_driver_lib)
sparseps_test(own_method_driver_test SOURCES own_method_driver_test.cc DEPS sparseps_driver_lib)
sparseps_test(resume_records_test SOURCES resume_records_test.cc DEPS sparseps_driver_lib)
