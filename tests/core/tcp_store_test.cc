#include "core/torch/tcp_store.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "transport/rendezvous.h"

namespace sparseps {
namespace {

// A port free right now on 127.0.0.1.
int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

RendezvousOptions options(int rank, int port) {
  return RendezvousOptions()
      .setRank(rank)
      .setWorldSize(2)
      .setRunId("tcp")
      .setMaster("127.0.0.1", port)
      .setConnectTimeout(std::chrono::seconds(20));
}

TEST(TcpStore, ConnectsTwoRanksHostedByRankZero) {
  const int port = freePort();
  std::shared_ptr<void> contexts[2];  // each rank keeps its mesh until both have connected
  std::shared_ptr<KeyValueStore> stores[2];
  std::thread threads[2];
  for (int r = 0; r < 2; ++r) {
    threads[r] = std::thread([&, r] {
      auto store = makeTcpStore(options(r, port));
      ASSERT_TRUE(store.ok()) << store.status();
      stores[r] = std::move(*store);
      auto c = connectFullMesh(options(r, port), *stores[r]);
      ASSERT_TRUE(c.ok()) << c.status();
      contexts[r] = *c;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(contexts[0] && contexts[1]);
}

TEST(TcpStore, NeedsAMasterAddress) {
  auto store = makeTcpStore(options(1, 1).setMaster("", 1));
  EXPECT_NE(store.status().message().find("master_addr"), absl::string_view::npos);
}

}  // namespace
}  // namespace sparseps
