#include "transport/rendezvous.h"

#include <gloo/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include "tests/transport/mesh.h"

namespace sparseps {
namespace {

TEST(RendezvousOptions, ValidateNamesTheField) {
  RendezvousOptions good = RendezvousOptions().setRank(1).setWorldSize(2).setRunId("r");
  EXPECT_TRUE(good.validate().ok());
  EXPECT_NE(RendezvousOptions(good).setWorldSize(0).validate().message().find("world_size"),
            absl::string_view::npos);
  EXPECT_NE(RendezvousOptions(good).setRank(2).validate().message().find("rank"),
            absl::string_view::npos);
  EXPECT_NE(RendezvousOptions(good).setRunId("").validate().message().find("run_id"),
            absl::string_view::npos);
  RendezvousOptions both = good;
  both.iface = "lo";
  EXPECT_NE(both.validate().message().find("exactly one"), absl::string_view::npos);
}

TEST(RendezvousOptions, FromEnvReadsOnlyTheUsualVariables) {
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "5", 1);
  setenv("MASTER_ADDR", "10.0.0.7", 1);
  setenv("MASTER_PORT", "29611", 1);
  auto options = rendezvousOptionsFromEnv(RendezvousOptions().setRunId("job"));
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->rank, 3);
  EXPECT_EQ(options->world_size, 5);
  EXPECT_EQ(options->master_addr, "10.0.0.7");
  EXPECT_EQ(options->master_port, 29611);
  EXPECT_EQ(options->run_id, "job");
  setenv("RANK", "three", 1);
  auto bad = rendezvousOptionsFromEnv(RendezvousOptions());
  EXPECT_NE(bad.status().message().find("RANK"), absl::string_view::npos) << bad.status();
  for (const char* v : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) unsetenv(v);
}

// A dead job's keys stay in the store directory; a new run with its own prefix connects
// regardless and never sees them.
TEST(Rendezvous, StaleKeysOfAnotherRunDoNotInterfere) {
  const testing::TempDir store("sparseps_transport_");
  const std::string dir = store.str();
  {
    gloo::rendezvous::FileStore store(dir);
    // What rank 1 of a dead run "old" left behind.
    store.set("old/rank_1", std::vector<char>(64, 'x'));
  }
  std::shared_ptr<gloo::Context> contexts[2];
  std::thread t([&] {
    auto c = connectWithFileStore(testing::loopbackOptions(dir, 1, 2).setRunId("new"));
    ASSERT_TRUE(c.ok()) << c.status();
    contexts[1] = *c;
  });
  auto c = connectWithFileStore(testing::loopbackOptions(dir, 0, 2).setRunId("new"));
  t.join();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->size, 2);
}

TEST(Rendezvous, MissingPeerIsAnErrorNotAHang) {
  const testing::TempDir store("sparseps_transport_");
  const std::string dir = store.str();
  auto c =
      connectWithFileStore(testing::loopbackOptions(dir, 0, 2).setRunId("alone").setConnectTimeout(
          std::chrono::milliseconds(500)));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("could not connect"), absl::string_view::npos) << c.status();
}

}  // namespace
}  // namespace sparseps
