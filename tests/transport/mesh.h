#pragma once
// Test helper: connects n ranks, one thread each, over a FileStore in a fresh temp dir
// on loopback, and makes their Channels.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/temp_dir.h"
#include "transport/channel.h"
#include "transport/rendezvous.h"

namespace sparseps::testing {

inline RendezvousOptions loopbackOptions(const std::string& dir, int rank, int n) {
  return RendezvousOptions()
      .setRank(rank)
      .setWorldSize(n)
      .setRunId("test")
      .setStoreDir(dir)
      .setHostname("127.0.0.1")
      .setConnectTimeout(std::chrono::seconds(20));
}

inline std::vector<std::shared_ptr<gloo::Context>> connectMesh(int n) {
  const TempDir store("sparseps_transport_");  // only needed to connect
  const std::string dir = store.str();
  std::vector<std::shared_ptr<gloo::Context>> contexts(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto context = connectWithFileStore(loopbackOptions(dir, r, n));
      EXPECT_TRUE(context.ok()) << context.status();
      if (context.ok()) contexts[r] = *context;
    });
  }
  for (auto& t : threads) t.join();
  return contexts;
}

// Per-rank channel options may differ (e.g. the limit in the oversize test).
inline std::vector<std::unique_ptr<Channel>> makeChannels(
    const std::vector<std::shared_ptr<gloo::Context>>& contexts,
    const std::vector<ChannelOptions>& options) {
  std::vector<std::unique_ptr<Channel>> channels;
  for (size_t r = 0; r < contexts.size(); ++r) {
    auto channel = Channel::create(contexts[r], options[r]);
    EXPECT_TRUE(channel.ok()) << channel.status();
    channels.push_back(channel.ok() ? std::move(*channel) : nullptr);
  }
  return channels;
}

}  // namespace sparseps::testing
