#include "compressors/cuda/sampled_plan.h"

#include <algorithm>

#include "compressors/cuda/block_plan.h"
#include "compressors/kernels/magnitude_key.h"
#include "compressors/segment_spec.h"
#include "compressors/threshold.h"

namespace sparseps::gpu {
namespace {

constexpr uint64_t kU32Range = uint64_t{1} << 32;

std::string checkRequests(const std::vector<SampledRequest>& requests, uint64_t xSize,
                          const SampledThresholdOptions& options) {
  if (options.max_rounds < 1 || options.max_rounds > kMaxSampledRounds) {
    return "the sampled threshold plays 1 to " + std::to_string(kMaxSampledRounds) +
           " rounds on a device, not " + std::to_string(options.max_rounds);
  }
  // The exact branch selects the segment's top k, which is the top k among those passing
  // only when more than k pass.
  if (!(options.upper >= 1.0)) return "the sampled threshold on a device needs upper >= 1";
  if (xSize >= kU32Range) {
    return "x of " + std::to_string(xSize) + " floats exceeds the u32 index range";
  }
  std::vector<const SampledRequest*> byOffset;
  for (const SampledRequest& r : requests) {
    if (r.offset > xSize || r.n > xSize - r.offset) {
      return "segment [" + std::to_string(r.offset) + ", " + std::to_string(r.offset + r.n) +
             ") outside x of " + std::to_string(xSize);
    }
    if (r.n > 0) byOffset.push_back(&r);
  }
  std::sort(byOffset.begin(), byOffset.end(),
            [](const SampledRequest* a, const SampledRequest* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < byOffset.size(); ++i) {
    if (byOffset[i]->offset < byOffset[i - 1]->offset + byOffset[i - 1]->n) {
      return "segments at " + std::to_string(byOffset[i - 1]->offset) + " and " +
             std::to_string(byOffset[i]->offset) + " overlap";
    }
  }
  return "";
}

}  // namespace

std::string SampledPlan::start(const std::vector<SampledRequest>& requests, uint64_t xSize,
                               const SampledThresholdOptions& options) {
  *this = SampledPlan{};
  if (std::string error = checkRequests(requests, xSize, options); !error.empty()) return error;
  options_ = options;
  requests_ = requests;
  results_.resize(requests.size());
  first_.assign(requests.size(), 0);
  for (size_t i = 0; i < requests.size(); ++i) {
    const SampledRequest& r = requests[i];
    results_[i].k = topkCount(r.n, r.density);
    room_ += results_[i].k;
    if (results_[i].k == 0) continue;
    const DgcSamplePlan plan = dgcSamplePlan(r.n, r.density, r.random_bits, options);
    SampleEntry e;
    e.offset = r.offset;
    e.start = static_cast<uint32_t>(plan.start);
    e.stride = static_cast<uint32_t>(plan.stride);
    e.count = static_cast<uint32_t>(plan.count);
    e.at = static_cast<uint32_t>(sample_size_);
    samples_.push_back(e);
    sample_tops_.push_back(SegmentRequest{sample_size_, plan.count, plan.top});
    sample_size_ += plan.count;
    active_.push_back(i);
  }
  sample_blocks_ =
      planBlocks(samples_.data(), samples_.size(), [](const SampleEntry& e) { return e.count; });
  return "";
}

void SampledPlan::ladders(const float* top_values) {
  ladders_.clear();
  first_thresholds_.clear();
  const float* at = top_values;
  for (size_t e = 0; e < active_.size(); ++e) {
    const SampledRequest& r = requests_[active_[e]];
    uint32_t smallest = magnitudeKey(at[0]);
    for (uint64_t j = 1; j < sample_tops_[e].k; ++j)
      smallest = std::min(smallest, magnitudeKey(at[j]));
    at += sample_tops_[e].k;
    const float first = keyToFloat(smallest);
    first_thresholds_.push_back(first);
    LadderEntry l;
    l.offset = r.offset;
    l.n = static_cast<uint32_t>(r.n);
    const std::vector<float> ladder = sampledLadder(first, options_);
    l.rounds = static_cast<uint32_t>(ladder.size());
    for (size_t q = 0; q < ladder.size(); ++q) l.keys[q] = magnitudeKey(ladder[q]);
    ladders_.push_back(l);
  }
  ladder_blocks_ =
      planBlocks(ladders_.data(), ladders_.size(), [](const LadderEntry& l) { return l.n; });
}

void SampledPlan::select(const uint32_t* counts) {
  exact_tops_.clear();
  filters_.clear();
  places_.clear();
  filtered_ = 0;
  std::vector<size_t> kept;  // entries the filter selects for
  std::vector<uint32_t> passing(active_.size(), 0);
  uint32_t exact_total = 0;
  for (size_t e = 0; e < active_.size(); ++e) {
    const size_t i = active_[e];
    const uint32_t* reaching = counts + e * kMaxSampledRounds;
    const std::vector<float> ladder = sampledLadder(first_thresholds_[e], options_);
    SampledThresholdResult& result = results_[i];
    result = playSampledRounds(
        ladder, result.k, [&](int round) { return size_t{reaching[round]}; }, options_);
    passing[e] = static_cast<uint32_t>(result.count);
    result.count = std::min(result.count, result.k);
    if (result.exact) {
      exact_tops_.push_back(SegmentRequest{requests_[i].offset, requests_[i].n, result.k});
      first_[i] = exact_total;
      exact_total += static_cast<uint32_t>(result.k);
    } else if (result.count > 0) {
      kept.push_back(e);
    }
  }
  // The filter's output runs segment after segment in index order.
  std::sort(kept.begin(), kept.end(), [&](size_t a, size_t b) {
    return requests_[active_[a]].offset < requests_[active_[b]].offset;
  });
  uint32_t out = exact_total;
  for (size_t e : kept) {
    const size_t i = active_[e];
    const SampledRequest& r = requests_[i];
    filters_.push_back(FilterEntry{r.offset, r.offset + r.n, magnitudeKey(results_[i].threshold)});
    const auto count = static_cast<uint32_t>(results_[i].count);
    PlaceEntry p;
    p.offset = r.offset;
    p.from = filtered_;
    p.count = count;
    p.out = out;
    places_.push_back(p);
    first_[i] = out;
    out += count;
    filtered_ += passing[e];
  }
  total_ = out;
  place_blocks_ =
      planBlocks(places_.data(), places_.size(), [](const PlaceEntry& p) { return p.count; });
}

}  // namespace sparseps::gpu
