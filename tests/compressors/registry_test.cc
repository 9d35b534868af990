#include "compressors/registry.h"

#include <gtest/gtest.h>

#include "compressors/dense.h"

namespace sparseps {
namespace {

TEST(Registry, BuiltinsByNameUnknownListsNamesDuplicateRejected) {
  CompressorRegistry r;
  registerBuiltinCompressors(&r);
  EXPECT_EQ(r.names(), (std::vector<std::string>{"dense", "randomk", "sampled", "topk"}));
  for (const std::string& name : r.names()) {
    auto c = r.make(name);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ((*c)->name(), name);
  }
  auto bad = r.make("nope");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(bad.status().message().find("dense, randomk, sampled, topk"), std::string::npos);
  EXPECT_EQ(r.add("topk", [] { return std::make_unique<DenseCompressor>(); }).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(r.add("mine", [] { return std::make_unique<DenseCompressor>(); }).ok());
  EXPECT_TRUE(r.make("mine").ok());
  EXPECT_FALSE(makeBuiltinCompressor("mine").ok());
}

}  // namespace
}  // namespace sparseps
