#include "core/runtime/param_layout.h"

#include <gtest/gtest.h>

namespace sparseps {
namespace {

ParamLayout convLayout() {
  ParamLayout layout;
  layout.add("conv.weight", {4, 3, 3, 3});
  layout.add("conv.bias", {4});
  return layout;
}

TEST(ParamLayoutTest, SegmentsAreContiguousInOrder) {
  ParamLayout layout;
  layout.add("a.weight", {8, 5});
  layout.add("a.bias", {8});
  layout.add("b.weight", {2, 8, 3, 3});
  layout.add("scalar", {});
  ASSERT_EQ(layout.size(), 4u);
  EXPECT_EQ(layout[0].offset, 0u);
  EXPECT_EQ(layout[0].numel, 40u);
  EXPECT_EQ(layout[1].offset, 40u);
  EXPECT_EQ(layout[1].numel, 8u);
  EXPECT_EQ(layout[2].offset, 48u);
  EXPECT_EQ(layout[2].numel, 144u);
  EXPECT_EQ(layout[3].offset, 192u);
  EXPECT_EQ(layout[3].numel, 1u);
  EXPECT_EQ(layout.numel(), 193u);
  EXPECT_EQ(layout[2].shape, (std::vector<int64_t>{2, 8, 3, 3}));
}

TEST(ParamLayoutTest, OnlyTensorsWithMoreThanOneDimAreCompressedByDefault) {
  ParamLayout layout;
  layout.add("w", {8, 5});
  layout.add("b", {8});
  layout.add("forced_dense", {3, 3}, /*compressed=*/false);
  EXPECT_TRUE(layout[0].compressed);
  EXPECT_FALSE(layout[1].compressed);
  EXPECT_FALSE(layout[2].compressed);
  EXPECT_EQ(layout.compressedNumel(), 40u);
}

TEST(ParamLayoutTest, IndexOfFindsNamesAndReportsMissingOnes) {
  ParamLayout layout = convLayout();
  ASSERT_TRUE(layout.indexOf("conv.bias").ok());
  EXPECT_EQ(*layout.indexOf("conv.bias"), 1u);
  absl::StatusOr<size_t> missing = layout.indexOf("fc.weight");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(ParamLayoutTest, SegmentSpecsCarryIndexIdsOffsetsAndFlags) {
  ParamLayout layout = convLayout();
  SegmentSpecs specs = toSegmentSpecs(layout);
  ASSERT_EQ(specs.size(), 2u);
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(specs[i].id, i);
    EXPECT_EQ(specs[i].offset, layout[i].offset);
    EXPECT_EQ(specs[i].numel, layout[i].numel);
    EXPECT_EQ(specs[i].compressed, layout[i].compressed);
  }
}

// Golden values from an independent FNV-1a 64 in Python over the documented byte
// sequence; a changed value means workers of different builds no longer agree.
TEST(ParamLayoutTest, FingerprintMatchesGoldenValues) {
  EXPECT_EQ(ParamLayout().fingerprint(), 0x44dcbbe1c789652dULL);
  EXPECT_EQ(convLayout().fingerprint(), 0xcdf1b8e15d421de1ULL);
}

TEST(ParamLayoutTest, FingerprintChangesWithNameShapeOrFlag) {
  const uint64_t base = convLayout().fingerprint();
  EXPECT_EQ(convLayout().fingerprint(), base);

  ParamLayout renamed;
  renamed.add("conv.weight", {4, 3, 3, 3});
  renamed.add("conv.biaz", {4});
  EXPECT_NE(renamed.fingerprint(), base);

  ParamLayout reshaped;  // same numel, other shape
  reshaped.add("conv.weight", {4, 27});
  reshaped.add("conv.bias", {4});
  EXPECT_NE(reshaped.fingerprint(), base);

  ParamLayout dense;
  dense.add("conv.weight", {4, 3, 3, 3}, /*compressed=*/false);
  dense.add("conv.bias", {4});
  EXPECT_NE(dense.fingerprint(), base);

  ParamLayout reordered;
  reordered.add("conv.bias", {4});
  reordered.add("conv.weight", {4, 3, 3, 3});
  EXPECT_NE(reordered.fingerprint(), base);

  ParamLayout split;  // names that concatenate to the same bytes
  split.add("conv.weigh", {4, 3, 3, 3});
  split.add("tconv.bias", {4});
  EXPECT_NE(split.fingerprint(), base);
}

}  // namespace
}  // namespace sparseps
