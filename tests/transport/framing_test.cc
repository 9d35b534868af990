#include "transport/framing.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/transport/test_header.h"

namespace sparseps {
namespace {

using testing::kTestHeaderBytes;
using testing::testMessage;
using testing::testPayloadSize;

constexpr size_t kMax = 64;

Framing framing() { return Framing(kTestHeaderBytes, testPayloadSize, kMax); }

std::vector<uint8_t> bytes(size_t n, uint8_t first) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(first + 7 * i);
  return v;
}

TEST(Framing, SplitsAMessageWhoseHeaderAnnouncesItsPayload) {
  const std::vector<uint8_t> payload = bytes(20, 1);
  const std::vector<uint8_t> message = testMessage(20, payload);
  absl::StatusOr<Framing::Outgoing> out = framing().split(3, message);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->header.size(), kTestHeaderBytes);
  EXPECT_EQ(std::vector<uint8_t>(out->payload.begin(), out->payload.end()), payload);
}

TEST(Framing, RefusesToSendWhatItsHeaderDoesNotAnnounce) {
  const std::vector<uint8_t> payload = bytes(20, 1);
  auto error = [](absl::Span<const uint8_t> message) {
    return std::string(framing().split(3, message).status().message());
  };
  EXPECT_EQ(error(testMessage(21, payload)),
            "channel: send to rank 3: header announces 21 bytes, payload has 20, limit 64");
  EXPECT_EQ(error(testMessage(kMax + 1, bytes(kMax + 1, 0))),
            "channel: send to rank 3: header announces 65 bytes, payload has 65, limit 64");
  EXPECT_EQ(error(std::vector<uint8_t>(3)),
            "channel: a message of 3 bytes is shorter than the 8-byte header");
}

TEST(Framing, ParsesTheHeaderMessageItsPeerWrote) {
  const std::vector<uint8_t> payload = bytes(20, 5);
  const std::vector<uint8_t> message = testMessage(20, payload);
  std::vector<uint8_t> wire(channel_wire::headerMessageBytes(kTestHeaderBytes));
  channel_wire::writeHeaderMessage(wire.data(), 12345, absl::MakeSpan(message).subspan(0, 8),
                                   payload);
  const Framing::Incoming in = framing().parse(wire);
  EXPECT_EQ(in.stamp, 12345);
  EXPECT_EQ(std::vector<uint8_t>(in.header.begin(), in.header.end()),
            std::vector<uint8_t>(message.begin(), message.begin() + 8));
  // The tail is the payload's last 8 bytes.
  EXPECT_EQ(std::vector<uint8_t>(in.tail.begin(), in.tail.end()),
            std::vector<uint8_t>(payload.end() - 8, payload.end()));
}

TEST(Framing, AnnouncedSizeOverTheLimitNamesWhatTheSenderDid) {
  uint64_t n = kMax + 1;
  uint8_t header[8];
  std::memcpy(header, &n, 8);
  EXPECT_EQ(framing().announced(header).status().message(),
            "announced a payload of 65 bytes, more than the limit of 64");
  n = kMax;
  std::memcpy(header, &n, 8);
  EXPECT_EQ(*framing().announced(header), kMax);
}

// What a receive of `arrived` bytes leaves in a buffer marked for `announced`.
std::string received(size_t announced, size_t arrived) {
  Framing f = framing();
  const std::vector<uint8_t> sent = bytes(arrived, 9);
  const std::vector<uint8_t> intended = bytes(announced, 9);  // what the header promised
  std::vector<uint8_t> wire(channel_wire::headerMessageBytes(kTestHeaderBytes));
  const std::vector<uint8_t> header(8, 0);
  channel_wire::writeHeaderMessage(wire.data(), 0, header, intended);
  std::vector<uint8_t> buffer(kMax);
  const Framing::Marks marks = f.markPayload(f.parse(wire), announced, absl::MakeSpan(buffer));
  std::copy(sent.begin(), sent.end(), buffer.begin());  // what Gloo wrote
  return f.checkPayload(marks, buffer);
}

TEST(Framing, TellsAPayloadShorterOrLongerThanAnnounced) {
  for (size_t n : {1, 5, 8, 20, 63, 64}) {
    SCOPED_TRACE(n);
    EXPECT_EQ(received(n, n), "");
    if (n < kMax) {
      EXPECT_EQ(received(n, n + 1), "sent a payload longer than the " + std::to_string(n) +
                                        " bytes its header announced");
    }
    if (n > 1) {
      EXPECT_EQ(received(n, n - 1), "sent a payload shorter than the " + std::to_string(n) +
                                        " bytes its header announced");
    }
  }
}

}  // namespace
}  // namespace sparseps
