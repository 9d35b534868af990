// Checks the Channel's simulated 100 Mbit/s against a real one: two network namespaces
// joined by a veth pair shaped with tc's token bucket filter (the project's own test
// hosts 10.200.<n>.1 and .2/30, inside the namespaces only), with channel_peer as sender
// and receiver, versus both on loopback with the Channel's own shaping at the same rate
// (both count Ethernet frames).
// Needs root, ip and tc; skipped otherwise. The namespaces are always removed.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "tests/transport/mesh.h"

namespace sparseps {
namespace {

bool run(const std::string& command) {
  return std::system((command + " >/dev/null 2>&1").c_str()) == 0;
}

// Runs a command, returns its stdout.
std::string capture(const std::string& command) {
  std::string out;
  if (FILE* p = popen(command.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  return out;
}

double goodputOf(const std::string& output) {
  const size_t at = output.find("goodput_bps=");
  return at == std::string::npos ? 0 : std::stod(output.substr(at + 12));
}

class NamespacePair {
 public:
  explicit NamespacePair(int id) : id_(id) {
    a_ = "spsA" + std::to_string(id);
    b_ = "spsB" + std::to_string(id);
  }
  ~NamespacePair() {
    run("ip netns del " + a_);  // removes its end of the veth pair and so the pair
    run("ip netns del " + b_);
  }
  bool setUp(const std::string& rate) {
    const std::string va = "vA" + std::to_string(id_), vb = "vB" + std::to_string(id_);
    const std::string net = "10.200." + std::to_string(id_ % 250) + ".";
    addr_a_ = net + "1";
    addr_b_ = net + "2";
    const std::string tbf = " root tbf rate " + rate + " burst 32kbit latency 400ms";
    return run("ip netns add " + a_) && run("ip netns add " + b_) &&
           run("ip link add " + va + " type veth peer name " + vb) &&
           run("ip link set " + va + " netns " + a_) && run("ip link set " + vb + " netns " + b_) &&
           run("ip -n " + a_ + " addr add " + addr_a_ + "/30 dev " + va) &&
           run("ip -n " + b_ + " addr add " + addr_b_ + "/30 dev " + vb) &&
           run("ip -n " + a_ + " link set " + va + " up") &&
           run("ip -n " + b_ + " link set " + vb + " up") &&
           run("tc -n " + a_ + " qdisc add dev " + va + tbf) &&
           run("tc -n " + b_ + " qdisc add dev " + vb + tbf);
  }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }
  const std::string& addrA() const { return addr_a_; }
  const std::string& addrB() const { return addr_b_; }

 private:
  int id_;
  std::string a_, b_, addr_a_, addr_b_;
};

// Runs receiver (rank 0) and sender (rank 1), each optionally inside a namespace; returns
// the receiver's goodput in bit/s.
double measure(const std::string& ns_receiver, const std::string& host_receiver,
               const std::string& ns_sender, const std::string& host_sender,
               const std::string& shaping) {
  const testing::TempDir store("sparseps_transport_");
  const std::string dir = store.str();
  auto peer = [&](const std::string& ns, const std::string& host, int rank, const char* mode) {
    return (ns.empty() ? "" : "ip netns exec " + ns + " ") + "timeout 15 " CHANNEL_PEER_PATH +
           " --store=" + dir + " --run=netns --world=2 --rank=" + std::to_string(rank) +
           " --host=" + host + " --mode=" + mode + " --messages=10 --bytes=1048576" + shaping;
  };
  const std::string command = peer(ns_sender, host_sender, 1, "sender") + " & " +
                              peer(ns_receiver, host_receiver, 0, "receiver") + "; wait";
  return goodputOf(capture("sh -c '" + command + "'"));
}

TEST(TcNetns, ShapedLoopbackMatchesATbfShapedVethPair) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to create network namespaces";
  if (!run("command -v ip") || !run("command -v tc")) GTEST_SKIP() << "needs ip and tc (iproute2)";
  NamespacePair pair(getpid() % 10000);
  if (!pair.setUp("100mbit")) GTEST_SKIP() << "cannot create namespaces/veth/tbf here";
  // tbf and the Channel's shaping both cap the rate: a busy machine (ctest runs suites in
  // parallel) can only slow a transfer below its cap, so the fastest of three runs is the
  // estimate of each cap.
  double real = 0, simulated = 0;
  for (int run = 0; run < 3; ++run) {
    real = std::max(real, measure(pair.b(), pair.addrB(), pair.a(), pair.addrA(), ""));
    simulated = std::max(
        simulated, measure("", "127.0.0.1", "", "127.0.0.1", " --bandwidth=100mbit --latency=0"));
  }
  ASSERT_GT(real, 0) << "the namespace run printed no goodput";
  ASSERT_GT(simulated, 0) << "the loopback run printed no goodput";
  // tbf meters whole Ethernet frames, and so does the Channel's shaping (frameBytes).
  std::printf("tc/netns goodput %.2f Mbit/s, shaped loopback %.2f Mbit/s\n", real / 1e6,
              simulated / 1e6);
  EXPECT_NEAR(simulated / real, 1.0, 0.10);
}

}  // namespace
}  // namespace sparseps
