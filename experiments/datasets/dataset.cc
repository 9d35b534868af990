#include "experiments/datasets/dataset.h"

#include <algorithm>
#include <numeric>

#include "experiments/datasets/shard.h"

namespace sparseps {

BatchIterator::BatchIterator(const Dataset* dataset, Split split, std::vector<int64_t> order,
                             int64_t batch_size, bool drop_last, bool augment, uint64_t seed)
    : dataset_(dataset),
      split_(split),
      order_(std::move(order)),
      batch_size_(std::max<int64_t>(batch_size, 1)),
      drop_last_(drop_last),
      augment_(augment),
      seed_(seed) {}

int64_t BatchIterator::numBatches() const {
  const int64_t n = numExamples();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

absl::StatusOr<bool> BatchIterator::next(Batch* batch) {
  if (batch_number_ >= numBatches()) return false;
  const int64_t count = std::min(batch_size_, numExamples() - position_);
  absl::Span<const int64_t> indices(order_.data() + position_, static_cast<size_t>(count));
  absl::StatusOr<Batch> b =
      dataset_->getBatch(split_, indices, augment_, mixSeed(seed_, batch_number_));
  if (!b.ok()) return b.status();
  *batch = std::move(*b);
  position_ += count;
  ++batch_number_;
  return true;
}

void BatchIterator::skip(int64_t batches) {
  const int64_t n = std::min(std::max<int64_t>(batches, 0), numBatches() - batch_number_);
  position_ = std::min(position_ + n * batch_size_, numExamples());
  batch_number_ += n;
}

BatchIterator Dataset::trainBatches(int shard, int num_shards, int epoch, int64_t batch_size,
                                    bool drop_last) const {
  std::vector<int64_t> order = epochOrder(size(Split::kTrain), shard, num_shards, seed_, epoch);
  const uint64_t aug_seed =
      mixSeed(mixSeed(seed_, static_cast<uint64_t>(epoch)), 0x1000u + static_cast<uint64_t>(shard));
  return BatchIterator(this, Split::kTrain, std::move(order), batch_size, drop_last, augment_,
                       aug_seed);
}

absl::StatusOr<Dataset::Footprint> Dataset::checkAll() const {
  for (Split split : {Split::kTrain, Split::kTest}) {
    std::vector<int64_t> all(static_cast<size_t>(size(split)));
    std::iota(all.begin(), all.end(), 0);
    BatchIterator batches(this, split, std::move(all), 512, false, false, 0);
    Batch batch;
    for (;;) {
      absl::StatusOr<bool> more = batches.next(&batch);
      if (!more.ok()) return more.status();
      if (!*more) break;
    }
  }
  return Footprint{};
}

BatchIterator Dataset::testBatches(int64_t batch_size, int64_t limit) const {
  const int64_t n = size(Split::kTest);
  std::vector<int64_t> order;
  if (limit > 0 && limit < n) {
    order = shardIndices(n, 0, 1, mixSeed(seed_, 0x7e57u));
    order.resize(static_cast<size_t>(limit));
    std::sort(order.begin(), order.end());
  } else {
    order.resize(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
  }
  return BatchIterator(this, Split::kTest, std::move(order), batch_size, false, false, 0);
}

}  // namespace sparseps
