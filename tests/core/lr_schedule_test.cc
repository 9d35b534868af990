#include "core/runtime/lr_schedule.h"

#include <gtest/gtest.h>

namespace sparseps {
namespace {

TEST(LrScheduleTest, StepDecayAtMilestones) {
  LrSchedule s{0.1, {30, 40}, 0.1, 0};
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(29.99), 0.1);
  EXPECT_NEAR(s.at(30), 0.01, 1e-12);
  EXPECT_NEAR(s.at(45), 0.001, 1e-12);
}

TEST(LrScheduleTest, LinearWarmup) {
  LrSchedule s{0.4, {}, 0.1, 2};
  EXPECT_NEAR(s.at(1), 0.2, 1e-6);
  EXPECT_DOUBLE_EQ(s.at(2), 0.4);
}

TEST(LrScheduleTest, ValidateNamesTheField) {
  EXPECT_NE(LrSchedule({-1, {}, 0.1, 0}).validate().message().find("lr"), std::string::npos);
  EXPECT_NE(LrSchedule({0.1, {40, 30}, 0.1, 0}).validate().message().find("milestones"),
            std::string::npos);
  EXPECT_NE(LrSchedule({0.1, {}, 2.0, 0}).validate().message().find("gamma"), std::string::npos);
  EXPECT_TRUE(LrSchedule({0.1, {30, 40}, 0.1, 0}).validate().ok());
}

}  // namespace
}  // namespace sparseps
