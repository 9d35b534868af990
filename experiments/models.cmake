# experiments/models: the networks the experiments train, behind one factory.
sparseps_library(sparseps_models
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/models/resnet.cc
          ${CMAKE_CURRENT_LIST_DIR}/models/mlp.cc
          ${CMAKE_CURRENT_LIST_DIR}/models/model_factory.cc
  DEPS sparseps_torch absl::status absl::statusor absl::strings)
