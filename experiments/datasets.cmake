# experiments/datasets: the data set file readers (torch-free, so their tests start fast) and
# the Dataset interface that turns them into tensor batches.
find_package(JPEG REQUIRED)
sparseps_library(sparseps_dataset_files SOURCES
    datasets/dataset_options.cc datasets/shard.cc datasets/idx_file.cc
    datasets/fashion_mnist.cc datasets/cifar10.cc datasets/synthetic.cc datasets/jpeg_decode.cc
  DEPS ZLIB::ZLIB JPEG::JPEG absl::status absl::statusor absl::strings absl::span)
sparseps_library(sparseps_datasets SOURCES
    datasets/dataset.cc datasets/dense_dataset.cc datasets/imagenette_dataset.cc
    datasets/make_dataset.cc
  DEPS sparseps_dataset_files sparseps_compressors sparseps_torch ZLIB::ZLIB JPEG::JPEG)
