# experiments/datasets: data set readers (torch-free) and the Dataset interface over tensors.
find_package(JPEG REQUIRED)
sparseps_library(sparseps_datasets SOURCES
    datasets/dataset_options.cc datasets/shard.cc datasets/idx_file.cc
    datasets/fashion_mnist.cc datasets/cifar10.cc datasets/synthetic.cc datasets/jpeg_decode.cc
    datasets/dataset.cc datasets/dense_dataset.cc datasets/imagenette_dataset.cc
    datasets/make_dataset.cc
  DEPS sparseps_torch ZLIB::ZLIB JPEG::JPEG absl::status absl::statusor absl::strings
    absl::span)
