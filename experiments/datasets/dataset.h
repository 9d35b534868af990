#pragma once
// The data side of a parameter-server run. A Dataset holds a training and a test split and
// hands out batches as tensors: images float32 [B, C, H, W], normalized per channel with the
// data set's mean and std; labels int64 [B]. Every worker trains on its own shard (shard i of
// n: a disjoint piece of one seeded permutation of the training set), reshuffled each epoch
// with seed + epoch; training batches are augmented when DatasetOptions::augment is set.
// Everything random derives from DatasetOptions::seed, so a run is reproducible.
// Build one with makeDataset (make_dataset.h).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace sparseps {

enum class Split { kTrain, kTest };

struct Batch {
  at::Tensor images;  // float32 [B, C, H, W], normalized
  at::Tensor labels;  // int64 [B]
};

class Dataset;

// One pass over a list of examples in a fixed order, batch by batch. Holds a pointer to its
// Dataset, which must outlive it.
class BatchIterator {
 public:
  BatchIterator(const Dataset* dataset, Split split, std::vector<int64_t> order, int64_t batch_size,
                bool drop_last, bool augment, uint64_t seed);

  // Fills `batch` with the next batch and returns true, or returns false at the end of the
  // pass. The last batch is smaller unless drop_last. An error means data could not be read
  // (Imagenette decodes lazily).
  absl::StatusOr<bool> next(Batch* batch);
  // Passes over the next `batches` batches without reading them: the batches after are
  // those next() would give after as many calls (a resumed worker's place in its epoch).
  void skip(int64_t batches);

  int64_t numBatches() const;
  int64_t numExamples() const { return static_cast<int64_t>(order_.size()); }

 private:
  const Dataset* dataset_;
  Split split_;
  std::vector<int64_t> order_;
  int64_t batch_size_;
  bool drop_last_;
  bool augment_;
  uint64_t seed_;
  int64_t position_ = 0;
  int64_t batch_number_ = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual std::string name() const = 0;  // "cifar10", ...
  // What was loaded from where (files found, counts), for the run log.
  virtual std::string description() const = 0;
  virtual int64_t size(Split split) const = 0;
  virtual int64_t numClasses() const = 0;
  // {C, H, W} of the images in every batch (both splits).
  virtual std::vector<int64_t> imageShape() const = 0;
  // Labels of the whole split, in index order (int64 [size(split)]).
  virtual at::Tensor labels(Split split) const = 0;

  // The examples `indices` of `split` as one batch. With `augment`, applies the training
  // augmentation drawn from `seed` (the same seed gives the same batch).
  virtual absl::StatusOr<Batch> getBatch(Split split, absl::Span<const int64_t> indices,
                                         bool augment, uint64_t seed) const = 0;

  // Memory a data set adds as its examples are used, per split (0 for the sets that are
  // loaded whole when opened: the process holds them already).
  struct Footprint {
    int64_t train_bytes = 0;
    int64_t test_bytes = 0;
  };
  // Reads every example of both splits once and keeps nothing (a dry run's check that all of
  // the data is usable), and returns what caching every example would add (Imagenette's
  // decoded-image cache).
  virtual absl::StatusOr<Footprint> checkAll() const;

  // Epoch `epoch` of worker `shard` of `num_shards`: its shard shuffled with seed + epoch,
  // augmented when options.augment. A shard outside [0, num_shards) is empty; batch_size < 1
  // counts as 1.
  BatchIterator trainBatches(int shard, int num_shards, int epoch, int64_t batch_size,
                             bool drop_last = false) const;
  // The test split in index order, unaugmented. With 0 < limit < size(kTest), only `limit`
  // examples: the same seeded random sample at every call (in index order), so bounded
  // evaluations of one run score the same examples and every class is represented.
  BatchIterator testBatches(int64_t batch_size, int64_t limit = 0) const;

 protected:
  Dataset(uint64_t seed, bool augment) : seed_(seed), augment_(augment) {}

 private:
  uint64_t seed_;
  bool augment_;
};

}  // namespace sparseps
