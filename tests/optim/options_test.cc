// MethodOptions: defaults are valid, every bad field is named, the warm-up schedule.

#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "optim/method_options.h"

namespace sparseps {
namespace {

// `field` as validate() names it: "density" (MethodOptions.density) or "DgcOptions.x".
void expectNamesField(const MethodOptions& o, const std::string& field) {
  absl::Status s = o.validate();
  const std::string named =
      field.find('.') == std::string::npos ? "MethodOptions." + field : field;
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << field;
  EXPECT_NE(s.message().find(named + ":"), std::string::npos) << s;
}

TEST(MethodOptionsTest, DefaultsAreValidAndFollowMethodsMd) {
  MethodOptions o;
  EXPECT_TRUE(o.validate().ok()) << o.validate();
  EXPECT_DOUBLE_EQ(o.density, 0.01);
  EXPECT_DOUBLE_EQ(o.server_density, 0.01);
  EXPECT_DOUBLE_EQ(o.momentum, 0.9);
  EXPECT_DOUBLE_EQ(o.weight_decay, 5e-4);
  EXPECT_EQ(o.resync_every, 150);
}

TEST(OptionNamesTest, EachSpellingParsesToItsValueAndBack) {
  EXPECT_EQ(parseName(kDownlinkNames, "downlink", "sparse").value(), Downlink::kSparse);
  EXPECT_EQ(parseName(kDownlinkNames, "downlink", "dense").value(), Downlink::kDense);
  EXPECT_EQ(parseName(kSelectionNames, "selection", "sampled").value(), Selection::kSampled);
  EXPECT_EQ(parseName(kSelectionNames, "selection", "exact").value(), Selection::kExact);
  EXPECT_EQ(nameOf(kDownlinkNames, Downlink::kSparse), "sparse");
  EXPECT_EQ(nameOf(kSelectionNames, Selection::kExact), "exact");
  EXPECT_EQ(namesOf(kSelectionNames), (std::vector<std::string>{"exact", "sampled", "strict"}));
}

TEST(OptionNamesTest, AnUnknownSpellingNamesTheOptionAndTheKnownOnes) {
  const absl::Status s = parseName(kDownlinkNames, "downlink", "Sparse").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "downlink: 'Sparse'; use dense, sparse, auto");
}

TEST(MethodOptionsTest, EachBadFieldIsNamed) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expectNamesField(MethodOptions().setLr0(0), "lr0");
  expectNamesField(MethodOptions().setLr0(nan), "lr0");
  expectNamesField(MethodOptions().setMomentum(1.0), "momentum");
  expectNamesField(MethodOptions().setMomentum(-0.1), "momentum");
  expectNamesField(MethodOptions().setWeightDecay(-1), "weight_decay");
  expectNamesField(MethodOptions().setDensity(0), "density");
  expectNamesField(MethodOptions().setDensity(1.5), "density");
  expectNamesField(MethodOptions().setDensity(nan), "density");
  expectNamesField(MethodOptions().setServerDensity(0), "server_density");
  expectNamesField(MethodOptions().setResyncEvery(0), "resync_every");
  expectNamesField(MethodOptions().setNumWorkers(0), "num_workers");
  expectNamesField(MethodOptions().setDgc(DgcOptions().setClipNorm(-1)), "DgcOptions.clip_norm");
  expectNamesField(MethodOptions().setDgc(DgcOptions().setWarmup(true).setWarmupDensities({})),
                   "DgcOptions.warmup_densities");
  expectNamesField(
      MethodOptions().setDgc(DgcOptions().setWarmup(true).setWarmupDensities({0.5, 2.0})),
      "DgcOptions.warmup_densities[1]");
  expectNamesField(MethodOptions().setGd(GdOptions().setCompressor("nope")),
                   "GdOptions.compressor");
  // The schedule is only checked when it is used.
  EXPECT_TRUE(MethodOptions().setDgc(DgcOptions().setWarmupDensities({})).validate().ok());
}

TEST(MethodOptionsTest, DensityFollowsTheWarmupByEpoch) {
  DgcOptions o;
  EXPECT_DOUBLE_EQ(o.densityAt(0, 0.001), 0.001);  // warm-up off
  o.setWarmup(true);
  const double want[] = {0.25, 0.0625, 0.015625, 0.004, 0.001, 0.001};
  for (int epoch = 0; epoch < 6; ++epoch) {
    EXPECT_DOUBLE_EQ(o.densityAt(epoch, 0.001), want[epoch]) << epoch;
  }
  EXPECT_DOUBLE_EQ(o.densityAt(50, 0.001), 0.001);
}

// With the default target 0.01 the fixed schedule 0.25 ... 0.001 would drop below the
// target in epochs 3 and 4 and jump back up: the warm-up never goes below it.
TEST(MethodOptionsTest, WarmupNeverGoesBelowTheTarget) {
  const DgcOptions o = DgcOptions().setWarmup(true);
  const double want[] = {0.25, 0.0625, 0.015625, 0.01, 0.01, 0.01};
  for (int epoch = 0; epoch < 6; ++epoch) {
    EXPECT_DOUBLE_EQ(o.densityAt(epoch, 0.01), want[epoch]) << epoch;
  }
}

}  // namespace
}  // namespace sparseps
