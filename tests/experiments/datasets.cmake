# tests/experiments: data set readers, batches, and experiments/fetch-data. Only the batch
# suite loads LibTorch.
find_package(JPEG REQUIRED)
sparseps_test(dataset_files_test SOURCES dataset_files_test.cc DEPS sparseps_dataset_files)
sparseps_test(dataset_batches_test SOURCES dataset_batches_test.cc DEPS sparseps_datasets JPEG::JPEG)
sparseps_test(fetch_data_test SOURCES fetch_data_test.cc DEPS sparseps_dataset_files)
