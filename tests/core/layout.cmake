# tests for core/ flat parameter layout (core/layout.cmake) and the model side of core/torch.
sparseps_test(param_layout_test SOURCES param_layout_test.cc DEPS sparseps_param_layout)
sparseps_test(flat_model_test SOURCES flat_model_test.cc DEPS sparseps_layout)
