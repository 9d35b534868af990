// MethodRegistry: the built-ins, duplicates, unknown names, a user's method.

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optim/builtin_methods.h"
#include "optim/method_registry.h"

namespace sparseps {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class NamedMethod : public Method {
 public:
  explicit NamedMethod(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::unique_ptr<ServerRule> makeServer(const SegmentSpecs&,
                                         const CheckedOptions&) const override {
    return nullptr;
  }

 protected:
  std::unique_ptr<WorkerRule> newWorker(const SegmentSpecs&, const CheckedOptions&,
                                        std::shared_ptr<const VectorOps>) const override {
    return nullptr;
  }

 private:
  std::string name_;
};

TEST(MethodRegistryTest, BuiltinsAreRegisteredByName) {
  MethodRegistry registry;
  ASSERT_TRUE(registerBuiltinMethods(registry).ok());
  EXPECT_THAT(registry.names(), ElementsAre("asgd", "dgc", "dgs", "gd", "msgd"));
  for (const std::string& name : registry.names()) {
    auto method = registry.find(name);
    ASSERT_TRUE(method.ok()) << method.status();
    EXPECT_EQ((*method)->name(), name);
  }
}

TEST(MethodRegistryTest, RegisteringTheBuiltinsTwiceFails) {
  MethodRegistry registry;
  ASSERT_TRUE(registerBuiltinMethods(registry).ok());
  absl::Status s = registerBuiltinMethods(registry);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
}

TEST(MethodRegistryTest, DuplicateNameIsRejectedAndTheFirstKept) {
  MethodRegistry registry;
  auto first = std::make_unique<NamedMethod>("mine");
  const Method* first_ptr = first.get();
  ASSERT_TRUE(registry.add(std::move(first)).ok());
  absl::Status s = registry.add(std::make_unique<NamedMethod>("mine"));
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'mine'"));
  EXPECT_EQ(*registry.find("mine"), first_ptr);
  EXPECT_FALSE(registry.add(nullptr).ok());
  EXPECT_FALSE(registry.add(std::make_unique<NamedMethod>("")).ok());
}

TEST(MethodRegistryTest, UnknownNameListsTheKnownOnes) {
  MethodRegistry registry;
  ASSERT_TRUE(registerBuiltinMethods(registry).ok());
  ASSERT_TRUE(registry.add(std::make_unique<NamedMethod>("mine")).ok());
  auto method = registry.find("dgs2");
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(method.status().message()),
              HasSubstr("unknown method 'dgs2'; known methods: asgd, dgc, dgs, gd, mine, msgd"));
}

}  // namespace
}  // namespace sparseps
