#include "transport/handshake.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "tests/transport/mesh.h"
#include "tests/transport/test_header.h"

namespace sparseps {
namespace {

Hello serverHello() {
  Hello h;
  h.protocol_version = 3;
  h.layout_fingerprint = 0xab;
  h.method = "dgs";
  h.world_size = 3;
  h.num_server_shards = 1;
  h.mode = "async";
  return h;
}

TEST(Hello, EncodesAndDecodesEveryField) {
  Hello h = serverHello();
  h.layout_fingerprint = 0x0123456789abcdefULL;
  auto bytes = encodeHello(h, 0);
  ASSERT_TRUE(bytes.ok());
  auto back = decodeHello(*bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->protocol_version, h.protocol_version);
  EXPECT_EQ(back->layout_fingerprint, h.layout_fingerprint);
  EXPECT_EQ(back->method, h.method);
  EXPECT_EQ(back->world_size, h.world_size);
  EXPECT_EQ(back->num_server_shards, h.num_server_shards);
  EXPECT_EQ(back->mode, h.mode);
}

TEST(Hello, RejectsLongNamesAndForeignBytes) {
  Hello h = serverHello();
  h.method = std::string(kHelloMaxName + 1, 'x');
  EXPECT_FALSE(encodeHello(h, 0).ok());
  std::vector<uint8_t> junk(kHelloBytes, 0);
  EXPECT_FALSE(decodeHello(junk).ok());
}

// A handshake's bound on each peer where the test is not about it.
constexpr std::chrono::milliseconds kBound = std::chrono::seconds(20);

// The first refusal among the peers (or the call's own error); OK when every peer passed.
absl::Status firstRefusal(const absl::StatusOr<std::vector<absl::Status>>& result) {
  if (!result.ok()) return result.status();
  for (const absl::Status& s : *result) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

struct FieldCase {
  const char* field;
  std::function<void(Hello&)> change;
};

class HandshakeMismatch : public ::testing::TestWithParam<FieldCase> {};

// Rank 0 is the server, ranks 1 and 2 workers; rank 2's Hello differs in one field. Both
// rank 0 and rank 2 refuse the other naming the field; the server passes rank 1.
TEST_P(HandshakeMismatch, IsAnErrorOnBothSidesNamingTheField) {
  auto contexts = testing::connectMesh(3);
  auto channels = testing::makeChannels(
      contexts, std::vector<ChannelOptions>(3, testing::testChannelOptions(16)));
  Hello bad = serverHello();
  GetParam().change(bad);
  absl::Status status[3];
  std::vector<absl::Status> server;
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    auto r =
        handshake(*channels[0], serverHello(), /*is_server=*/true, std::vector<int>{1, 2}, kBound);
    ASSERT_TRUE(r.ok()) << r.status();
    server = *r;
  });
  threads.emplace_back([&] {
    status[1] =
        firstRefusal(handshake(*channels[1], serverHello(), false, std::vector<int>{0}, kBound));
  });
  threads.emplace_back([&] {
    status[2] = firstRefusal(handshake(*channels[2], bad, false, std::vector<int>{0}, kBound));
  });
  for (auto& t : threads) t.join();
  ASSERT_EQ(server.size(), 2u);
  EXPECT_TRUE(server[0].ok()) << server[0];
  status[0] = server[1];
  const std::string expected =
      std::string("handshake: ") + GetParam().field + " mismatch: server 0 ";
  EXPECT_TRUE(status[1].ok()) << status[1];
  for (int r : {0, 2}) {
    SCOPED_TRACE(r);
    EXPECT_TRUE(absl::IsFailedPrecondition(status[r])) << status[r];
    EXPECT_EQ(status[r].message().rfind(expected, 0), 0u) << status[r];
    EXPECT_NE(status[r].message().find(" worker 2 "), absl::string_view::npos) << status[r];
  }
  EXPECT_EQ(status[0].message(), status[2].message());
}

INSTANTIATE_TEST_SUITE_P(
    Fields, HandshakeMismatch,
    ::testing::Values(FieldCase{"protocol version", [](Hello& h) { h.protocol_version = 4; }},
                      FieldCase{"layout fingerprint",
                                [](Hello& h) { h.layout_fingerprint = 0xcd; }},
                      FieldCase{"method", [](Hello& h) { h.method = "topk"; }},
                      FieldCase{"world size", [](Hello& h) { h.world_size = 5; }},
                      FieldCase{"server shards", [](Hello& h) { h.num_server_shards = 2; }},
                      FieldCase{"mode", [](Hello& h) { h.mode = "sync"; }}),
    [](const ::testing::TestParamInfo<FieldCase>& info) {
      std::string name = info.param.field;
      for (char& c : name)
        if (c == ' ') c = '_';
      return name;
    });

TEST(Handshake, FingerprintMessageShowsBothValues) {
  Hello worker = serverHello();
  worker.layout_fingerprint = 0xcd;
  EXPECT_EQ(compareHello(serverHello(), 0, worker, 3).message(),
            "handshake: layout fingerprint mismatch: server 0 0x00000000000000ab worker 3 "
            "0x00000000000000cd");
}

TEST(Handshake, MatchingHellosPass) {
  auto contexts = testing::connectMesh(2);
  auto channels = testing::makeChannels(
      contexts, std::vector<ChannelOptions>(2, testing::testChannelOptions(16)));
  absl::Status worker;
  std::thread t([&] {
    worker =
        firstRefusal(handshake(*channels[1], serverHello(), false, std::vector<int>{0}, kBound));
  });
  EXPECT_TRUE(
      firstRefusal(handshake(*channels[0], serverHello(), true, std::vector<int>{1}, kBound)).ok());
  t.join();
  EXPECT_TRUE(worker.ok()) << worker;
}

// Rank 0 holds the run's secret. A worker with the same secret passes; one with another
// secret, or none, is refused by the server, and refuses the server in turn (its tag
// cannot match either).
TEST(Handshake, ARankWithoutTheRunSecretIsRefused) {
  for (const std::string& worker_secret :
       {std::string("s3cret"), std::string("guess"), std::string()}) {
    SCOPED_TRACE("worker secret \"" + worker_secret + "\"");
    auto contexts = testing::connectMesh(2);
    auto channels = testing::makeChannels(
        contexts, std::vector<ChannelOptions>(2, testing::testChannelOptions(16)));
    Hello server = serverHello(), worker = serverHello();
    server.run_secret = "s3cret";
    worker.run_secret = worker_secret;
    absl::Status worker_status;
    std::thread t([&] {
      worker_status =
          firstRefusal(handshake(*channels[1], worker, false, std::vector<int>{0}, kBound));
    });
    absl::Status server_status =
        firstRefusal(handshake(*channels[0], server, true, std::vector<int>{1}, kBound));
    t.join();
    if (worker_secret == "s3cret") {
      EXPECT_TRUE(server_status.ok()) << server_status;
      EXPECT_TRUE(worker_status.ok()) << worker_status;
      continue;
    }
    EXPECT_TRUE(absl::IsPermissionDenied(server_status)) << server_status;
    EXPECT_EQ(server_status.message().rfind(
                  "handshake: rank 1 did not present this run's secret; it is refused", 0),
              0u)
        << server_status;
    EXPECT_TRUE(absl::IsPermissionDenied(worker_status)) << worker_status;
  }
}

// A worker that never handshakes (its channel up and pulsing) is refused at the bound, and
// the worker that handshakes passes: one mute peer holds up nobody for good.
TEST(Handshake, APeerThatNeverAnswersIsRefusedAtTheBound) {
  constexpr auto kTimeout = std::chrono::milliseconds(600);
  auto contexts = testing::connectMesh(3);
  auto channels = testing::makeChannels(
      contexts,
      std::vector<ChannelOptions>(3, testing::testChannelOptions(16).setPeerTimeout(kTimeout)));
  // Rank 1 is mute; rank 2, after it in the server's list, answers at once and must not be
  // held to the bound with it.
  absl::Status worker;
  std::thread t([&] {
    worker =
        firstRefusal(handshake(*channels[2], serverHello(), false, std::vector<int>{0}, kBound));
  });
  const auto start = std::chrono::steady_clock::now();
  auto server = handshake(*channels[0], serverHello(), true, std::vector<int>{1, 2}, kTimeout);
  const auto took = std::chrono::steady_clock::now() - start;
  t.join();
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_TRUE((*server)[1].ok()) << (*server)[1];
  EXPECT_TRUE(worker.ok()) << worker;
  EXPECT_TRUE(channels[0]->isLive(2));
  EXPECT_TRUE(absl::IsUnavailable((*server)[0])) << (*server)[0];
  EXPECT_NE((*server)[0].message().find("rank 1 is dropped: it did not complete the handshake"),
            absl::string_view::npos)
      << (*server)[0];
  EXPECT_FALSE(channels[0]->isLive(1));
  EXPECT_GE(took, kTimeout);
  EXPECT_LT(took, 4 * kTimeout);
}

// The secret itself never travels, and a tag is bound to its sender's rank and secret.
TEST(Hello, CarriesATagOfTheSecretNotTheSecret) {
  Hello h = serverHello();
  h.run_secret = "correct horse battery";
  auto bytes = encodeHello(h, 2);
  ASSERT_TRUE(bytes.ok());
  const std::string wire(bytes->begin(), bytes->end());
  EXPECT_EQ(wire.find("horse"), std::string::npos);
  auto back = decodeHello(*bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->secret_tag, secretTag(h.run_secret, 2));
  EXPECT_NE(back->secret_tag, secretTag(h.run_secret, 1));
  EXPECT_NE(back->secret_tag, secretTag("correct horse batterz", 2));
  EXPECT_NE(back->secret_tag, SecretTag{});
  EXPECT_EQ(secretTag("", 2), SecretTag{});  // no secret: an all-zero tag
}

}  // namespace
}  // namespace sparseps
