# tests for experiments/models (experiments/models.cmake).
sparseps_test(models_test SOURCES models_test.cc DEPS sparseps_models)
