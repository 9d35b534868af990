# core/ flat parameter layout. sparseps_param_layout is LibTorch-free (the server and the
# wire format can use it alone); sparseps_layout adds FlatModel, the LibTorch adapter.
sparseps_library(sparseps_param_layout
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/param_layout.cc
  DEPS sparseps_compressors absl::status absl::statusor absl::strings)
sparseps_library(sparseps_layout
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/flat_model.cc
  DEPS sparseps_param_layout sparseps_torch absl::span)
