// One rank of a transport test job, as its own process: the dead-peer and the tc/netns
// tests launch it (the latter inside network namespaces via `ip netns exec`).
//   channel_peer --store=DIR --run=ID --rank=R --world=N --host=ADDR --mode=MODE
//                [--messages=K] [--bytes=B] [--bandwidth=1gbit] [--latency=50us]
//                [--peer-timeout-ms=T]
// Modes: sender  (sends K messages of B bytes to rank 0, then shuts down),
//        receiver (rank 0: receives until every other rank has shut down and prints
//                  "goodput_bps=<payload bits per second from first to last delivery>"),
//        hang    (connects, then waits to be killed: it pulses but never receives),
//        stop    (connects, then stops itself with SIGSTOP: no pulse, nothing),
//        stop-in-send (starts sending one message of B bytes to rank 0, then stops itself
//                  with SIGSTOP before rank 0 can take it).

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "tests/transport/test_header.h"
#include "transport/channel.h"
#include "transport/link_shaping.h"
#include "transport/rendezvous.h"

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "channel_peer: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sparseps;
  std::map<std::string, std::string> args = {{"messages", "10"},
                                             {"bytes", "1048576"},
                                             {"bandwidth", "none"},
                                             {"latency", "0"},
                                             {"peer-timeout-ms", "30000"},
                                             {"host", "127.0.0.1"}};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    size_t eq = a.find('=');
    if (a.rfind("--", 0) != 0 || eq == std::string::npos) return fail("bad argument " + a);
    args[a.substr(2, eq - 2)] = a.substr(eq + 1);
  }
  int rank = 0, world = 0, messages = 0, peer_timeout_ms = 0;
  size_t bytes = 0;
  if (!absl::SimpleAtoi(args["rank"], &rank) || !absl::SimpleAtoi(args["world"], &world) ||
      !absl::SimpleAtoi(args["messages"], &messages) || !absl::SimpleAtoi(args["bytes"], &bytes) ||
      !absl::SimpleAtoi(args["peer-timeout-ms"], &peer_timeout_ms)) {
    return fail("--rank, --world, --messages, --bytes and --peer-timeout-ms must be integers");
  }
  absl::StatusOr<double> bandwidth = parseBandwidth(args["bandwidth"]);
  absl::StatusOr<int64_t> latency = parseDuration(args["latency"]);
  if (!bandwidth.ok()) return fail(std::string(bandwidth.status().message()));
  if (!latency.ok()) return fail(std::string(latency.status().message()));

  RendezvousOptions rv;
  rv.setRank(rank)
      .setWorldSize(world)
      .setRunId(args["run"])
      .setStoreDir(args["store"])
      .setHostname(args["host"])
      .setConnectTimeout(std::chrono::seconds(20));
  auto context = connectWithFileStore(rv);
  if (!context.ok()) return fail(std::string(context.status().message()));
  ChannelOptions options = testing::testChannelOptions(bytes).setPeerTimeout(
      std::chrono::milliseconds(peer_timeout_ms));
  if (*bandwidth > 0 || *latency > 0) {
    LinkSpec link{*bandwidth, *latency};
    options.setShaping(ShapingOptions{link, link});
  }
  auto channel = Channel::create(*context, options);
  if (!channel.ok()) return fail(std::string(channel.status().message()));

  const std::string& mode = args["mode"];
  if (mode == "hang") {
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  if (mode == "stop") {
    raise(SIGSTOP);
    return 0;
  }
  if (mode == "stop-in-send") {
    // The header's send notice goes out at once; rank 0 only posts its receive once we
    // are stopped, so the message stays half-delivered.
    std::thread stopper([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      raise(SIGSTOP);
    });
    std::vector<uint8_t> payload(bytes, static_cast<uint8_t>(rank));
    absl::Status s = (*channel)->send(0, testing::testMessage(bytes, payload));
    stopper.join();
    return s.ok() ? 0 : fail(std::string(s.message()));
  }
  if (mode == "sender") {
    std::vector<uint8_t> payload(bytes, static_cast<uint8_t>(rank));
    for (int i = 0; i < messages; ++i) {
      absl::Status s = (*channel)->send(0, testing::testMessage(bytes, payload));
      if (!s.ok()) return fail(std::string(s.message()));
    }
    (*channel)->shutdown();
    return 0;
  }
  if (mode == "receiver") {
    std::vector<int> others;
    for (int r = 1; r < world; ++r) others.push_back(r);
    size_t payload_bytes = 0;
    int data_messages = 0;
    auto first = std::chrono::steady_clock::now(), last = first;
    for (;;) {
      auto m = (*channel)->receive(others);
      if (!m.ok()) {
        if (absl::IsFailedPrecondition(m.status())) break;  // everyone has shut down
        return fail(std::string(m.status().message()));
      }
      if (!m->peer_status.ok()) {
        // A sender that is done closes; one that dies fails the run.
        if (absl::StrContains(m->peer_status.message(), "closed its connection")) continue;
        return fail(std::string(m->peer_status.message()));
      }
      last = std::chrono::steady_clock::now();
      // Goodput counts what arrived after the first message: n-1 messages in (last-first).
      if (data_messages++ == 0)
        first = last;
      else
        payload_bytes += m->payload.size();
    }
    const double seconds = std::chrono::duration<double>(last - first).count();
    std::printf("messages=%d goodput_bps=%.6g\n", data_messages,
                seconds > 0 ? payload_bytes * 8.0 / seconds : 0.0);
    (*channel)->shutdown();
    return 0;
  }
  return fail("unknown --mode=" + mode);
}
