#include "compressors/cuda/threshold_cuda.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "compressors/cuda/cuda_status.h"
#include "compressors/cuda/launchers.h"

namespace sparseps::gpu {
namespace {

template <typename T>
cudaError_t readBack(const T* device, T* host, cudaStream_t stream) {
  cudaError_t err = cudaMemcpyAsync(host, device, sizeof(T), cudaMemcpyDeviceToHost, stream);
  return err != cudaSuccess ? err : cudaStreamSynchronize(stream);
}

template <typename T>
HostTable table(const std::vector<T>& host, T* device) {
  return {host.data(), device, host.size() * sizeof(T)};
}

}  // namespace

absl::StatusOr<size_t> thresholdFilterDevice(const float* x, size_t n, float thr, uint32_t* indices,
                                             float* values, DeviceScratch* scratch,
                                             cudaStream_t stream) {
  if (absl::Status s = checkSegmentSize(n); !s.ok()) return s;
  if (n == 0) return size_t{0};
  const auto n32 = static_cast<uint32_t>(n);
  ScratchCarver measure(nullptr);
  measure.take<uint32_t>(1);
  measure.take<char>(thresholdFilterTempBytes(n32));
  void* base = nullptr;
  SPARSEPS_CUDA_TRY(scratch->reserve(measure.used(), &base), "thresholdFilterDevice scratch");
  ScratchCarver carver(base);
  uint32_t* count = carver.take<uint32_t>(1);
  void* temp = carver.take<char>(thresholdFilterTempBytes(n32));
  SPARSEPS_CUDA_TRY(launchThresholdFilter(x, n32, thr, indices, values, count, temp, stream),
                    "thresholdFilterDevice");
  uint32_t host = 0;
  SPARSEPS_CUDA_TRY(readBack(count, &host, stream), "thresholdFilterDevice count");
  return size_t{host};
}

absl::Status SegmentedSampledThreshold::select(const float* x, size_t xSize,
                                               const std::vector<SampledRequest>& requests,
                                               const SampledThresholdOptions& options,
                                               uint32_t* indices, float* values,
                                               cudaStream_t stream) {
  if (std::string error = plan_.start(requests, xSize, options); !error.empty()) {
    return absl::InvalidArgumentError(error);
  }
  const auto entries = static_cast<uint32_t>(plan_.samples().size());
  if (entries == 0) {  // nothing to select: every k is 0
    plan_.ladders(nullptr);
    plan_.select(nullptr);
    return absl::OkStatus();
  }

  // Steps 1 and 2: the samples and their selection, the rounds' counts.
  const size_t tops =
      std::accumulate(plan_.sampleTops().begin(), plan_.sampleTops().end(), size_t{0},
                      [](size_t sum, const SegmentRequest& r) { return sum + r.k; });
  const size_t countSlots = size_t{entries} * kMaxSampledRounds;
  auto layoutSampling = [&](ScratchCarver& c, float** sample, uint32_t** topIdx, float** topVal,
                            SampleEntry** sampleTable, LadderEntry** ladderTable,
                            uint32_t** counts) {
    *sample = c.take<float>(plan_.sampleSize());
    *topIdx = c.take<uint32_t>(tops);
    *topVal = c.take<float>(tops);
    *sampleTable = c.take<SampleEntry>(entries);
    *ladderTable = c.take<LadderEntry>(entries);
    *counts = c.take<uint32_t>(countSlots);
  };
  float *sample, *topVal;
  uint32_t *topIdx, *counts;
  SampleEntry* sampleTable;
  LadderEntry* ladderTable;
  void* base = nullptr;
  ScratchCarver measure(nullptr);
  layoutSampling(measure, &sample, &topIdx, &topVal, &sampleTable, &ladderTable, &counts);
  SPARSEPS_CUDA_TRY(sampling_.reserve(measure.used(), &base), "sampled threshold scratch");
  ScratchCarver carver(base);
  layoutSampling(carver, &sample, &topIdx, &topVal, &sampleTable, &ladderTable, &counts);
  void* host = nullptr;
  SPARSEPS_CUDA_TRY(
      read_back_.reserve(std::max(tops * sizeof(float), countSlots * sizeof(uint32_t)), &host),
      "sampled threshold pinned buffer");

  SPARSEPS_CUDA_TRY(staging_.upload({table(plan_.samples(), sampleTable)}, stream),
                    "upload the samples");
  SPARSEPS_CUDA_TRY(
      launchSegmentedSample(x, sampleTable, entries, plan_.sampleBlocks(), sample, stream),
      "gather the samples");
  if (absl::Status s = sample_tops_.select(sample, plan_.sampleSize(), plan_.sampleTops(), topIdx,
                                           topVal, stream);
      !s.ok()) {
    return s;
  }
  SPARSEPS_CUDA_TRY(
      cudaMemcpyAsync(host, topVal, tops * sizeof(float), cudaMemcpyDeviceToHost, stream),
      "copy the samples' selection");
  SPARSEPS_CUDA_TRY(cudaStreamSynchronize(stream), "wait for the samples' selection");
  plan_.ladders(static_cast<const float*>(host));

  SPARSEPS_CUDA_TRY(staging_.upload({table(plan_.ladderEntries(), ladderTable)}, stream),
                    "upload the rounds");
  SPARSEPS_CUDA_TRY(
      launchLadderCounts(x, ladderTable, entries, plan_.ladderBlocks(), counts, stream),
      "count the rounds");
  SPARSEPS_CUDA_TRY(
      cudaMemcpyAsync(host, counts, countSlots * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream),
      "copy the rounds' counts");
  SPARSEPS_CUDA_TRY(cudaStreamSynchronize(stream), "wait for the rounds' counts");
  plan_.select(static_cast<const uint32_t*>(host));

  // Step 3: the exact branch's top-k into slots from 0, the filter's first k after them.
  if (absl::Status s = exact_tops_.select(x, xSize, plan_.exactTops(), indices, values, stream);
      !s.ok()) {
    return s;
  }
  const auto filters = static_cast<uint32_t>(plan_.filters().size());
  if (filters == 0) return absl::OkStatus();
  const auto n32 = static_cast<uint32_t>(xSize);  // below 2^32 (SampledPlan::start)
  auto layoutFiltering = [&](ScratchCarver& c, FilterEntry** filterTable, PlaceEntry** placeTable,
                             uint32_t** filtered, uint32_t** selected, void** temp) {
    *filterTable = c.take<FilterEntry>(filters);
    *placeTable = c.take<PlaceEntry>(filters);
    *filtered = c.take<uint32_t>(plan_.filtered());
    *selected = c.take<uint32_t>(1);
    *temp = c.take<char>(segmentFilterTempBytes(n32));
  };
  FilterEntry* filterTable;
  PlaceEntry* placeTable;
  uint32_t *filtered, *selected;
  void* temp;
  ScratchCarver measureFilter(nullptr);
  layoutFiltering(measureFilter, &filterTable, &placeTable, &filtered, &selected, &temp);
  SPARSEPS_CUDA_TRY(filtering_.reserve(measureFilter.used(), &base), "sampled filter scratch");
  ScratchCarver filterCarver(base);
  layoutFiltering(filterCarver, &filterTable, &placeTable, &filtered, &selected, &temp);
  SPARSEPS_CUDA_TRY(
      staging_.upload({table(plan_.filters(), filterTable), table(plan_.places(), placeTable)},
                      stream),
      "upload the filter and the placing");
  SPARSEPS_CUDA_TRY(
      launchSegmentFilter(x, n32, filterTable, filters, filtered, selected, temp, stream),
      "filter at the last thresholds");
  SPARSEPS_CUDA_TRY(launchPlaceSelected(x, filtered, placeTable, filters, plan_.placeBlocks(),
                                        indices, values, stream),
                    "place the filtered pairs");
  return absl::OkStatus();
}

}  // namespace sparseps::gpu
