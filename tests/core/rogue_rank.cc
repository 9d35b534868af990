// A worker rank that breaks the protocol, for the rogue-peer test (ps_job_test.cc): it
// joins a job of ps_job_rank processes as their last rank, passes the handshake like any
// worker, then misbehaves in one way (--mode) and stays connected until the server cuts it
// off (or 30 s pass). The job must finish without it.
//   header-only  sends a header announcing 100 bytes, and never the payload
//   no-read      never takes the initial model the server sends it
//   push-unread  pushes without taking the initial model the server is sending it (the two
//                sends wait on each other)
//   replay       sends one valid push (of its step 0) up to 1000 times
//   silent       takes its model, never pushes (holds a sync round)
//   poison       pushes finite values of 3e38
//   huge         pushes 10 steps of 0.01, then finite values of 1e18 (under the wire's bound)
//   garbage      pushes a message whose payload was damaged after its checksum
//   overlong     pushes a valid message plus 1000 bytes its header does not announce,
//                then never takes the reply
//   short        sends a push's header and 1 byte of its payload
//   slow-payload sends a small push's payload half a peer timeout after its header
//   bad-then-good  pushes a damaged message and at once a good one (the server's
//                goodbye to it and its push to the server wait on each other)
//   stop         takes its model, then stops itself (SIGSTOP): no pulse, nothing
//   oversized    sends a small push's header, then 4 MiB on the payload slot (more than the
//                server posted: Gloo's pair refuses it on its device thread)
//   fast         pushes without computing, each right after its reply: 0.01 on every
//                parameter, raising class 0's weights and bias and lowering the others'
//   fastsmall    the same at 0.004 (within the honest pushes' scale: bounded by its share)
//   doubling     the same as fast, its value doubling every 20 pushes
//   firstpoison  pushes values of 1e18 at its first push
//   no-secret    handshakes without the run secret
//   mute         connects and never handshakes (its channel pulses)
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "core/net/connect.h"
#include "core/runtime/protocol.h"
#include "core/wire/wire.h"
#include "transport/channel_wire.h"

namespace sparseps {
namespace {

constexpr size_t kNumel = 64 * 8 + 8;  // ps_job_rank's model

int fail(const std::string& what) {
  std::fprintf(stderr, "rogue_rank: %s\n", what.c_str());
  return 1;
}

// A push of `value` everywhere, encoded as an honest worker would.
std::vector<uint8_t> push(int rank, float value, uint64_t step = 0) {
  const SegmentSpecs specs = {{0, 0, 64 * 8, true}, {1, 64 * 8, 8, false}};
  std::vector<float> flat(kNumel, value);
  MessageHeader header;
  header.kind = MessageKind::kPush;
  header.sender_rank = static_cast<uint32_t>(rank);
  header.worker_step = step;  // 0: a fresh worker's first push
  auto bytes = encodeMessage(header, denseMessage(specs, flat));
  if (!bytes.ok()) {
    std::fprintf(stderr, "rogue_rank: cannot encode a push: %s\n", std::string(bytes.status().message()).c_str());
    std::abort();
  }
  return std::move(*bytes);
}

// A steering push of `value`: W -= push raises class 0's weights and bias, lowers the rest.
std::vector<uint8_t> steeringPush(int rank, float value, uint64_t step) {
  const SegmentSpecs specs = {{0, 0, 64 * 8, true}, {1, 64 * 8, 8, false}};
  std::vector<float> flat(kNumel, value);
  for (size_t f = 0; f < 64; ++f) flat[f] = -value;  // class 0's row of weights
  flat[64 * 8] = -value;                             // its bias
  MessageHeader header;
  header.kind = MessageKind::kPush;
  header.sender_rank = static_cast<uint32_t>(rank);
  header.worker_step = step;
  auto bytes = encodeMessage(header, denseMessage(specs, flat));
  if (!bytes.ok()) std::abort();
  return std::move(*bytes);
}

// Steering pushes of `value`, each right after its reply, until cut off; the value doubles
// every `doubling` pushes (0: never).
void steer(Channel& ch, int rank, float value, int doubling) {
  for (uint64_t step = 0; ch.isLive(0); ++step) {
    if (doubling > 0 && step > 0 && step % static_cast<uint64_t>(doubling) == 0) value *= 2;
    if (!ch.send(0, steeringPush(rank, value, step)).ok()) return;
    auto reply = ch.receive(std::vector<int>{0});
    if (!reply.ok() || !reply->peer_status.ok()) return;
  }
}

// A push of the 8 biases alone (a small message: its payload gets a tenth of the timeout).
std::vector<uint8_t> smallPush(int rank) {
  const SegmentSpecs specs = {{1, 64 * 8, 8, false}};
  std::vector<float> flat(kNumel, 0.0f);
  MessageHeader header;
  header.kind = MessageKind::kPush;
  header.sender_rank = static_cast<uint32_t>(rank);
  auto bytes = encodeMessage(header, denseMessage(specs, flat));
  if (!bytes.ok()) std::abort();
  return std::move(*bytes);
}

// Sends raw framed bytes on the channel's slots, as a peer outside our Channel could: the
// header message of (header, intended), then `payload` (not sent when empty).
void sendRaw(gloo::Context& context, absl::Span<const uint8_t> header,
             absl::Span<const uint8_t> intended, absl::Span<const uint8_t> payload) {
  std::vector<uint8_t> frame(channel_wire::headerMessageBytes(header.size()));
  channel_wire::writeHeaderMessage(frame.data(), 0, header, intended);
  std::vector<uint8_t> body(payload.begin(), payload.end());
  auto h = context.createUnboundBuffer(frame.data(), frame.size());
  h->send(0, channel_wire::kHeaderSlot);
  std::unique_ptr<gloo::transport::UnboundBuffer> b;
  if (!body.empty()) {
    b = context.createUnboundBuffer(body.data(), body.size());
    b->send(0, channel_wire::kPayloadSlot);
  }
  h->waitSend();
  if (b) b->waitSend();
}

// Stays connected until the server cuts it off, or 30 s pass.
int waitUntilCut(Channel& ch) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (ch.isLive(0) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr, "rogue_rank: %s\n", ch.isLive(0) ? "never cut off" : "cut off");
  return 0;
}

int run(int argc, char** argv) {
  CLI::App app{"sparseps rogue rank"};
  int rank = 0, world = 0, peer_timeout_ms = 30000;
  std::string store, run_id, method = "asgd", mode = "async", rogue, secret;
  app.add_option("--rank", rank)->required();
  app.add_option("--world-size", world)->required();
  app.add_option("--store", store)->required();
  app.add_option("--run-id", run_id)->required();
  app.add_option("--method", method);
  app.add_option("--mode", mode);
  app.add_option("--peer-timeout-ms", peer_timeout_ms);
  app.add_option("--rogue", rogue)->required();
  app.add_option("--run-secret", secret);
  CLI11_PARSE(app, argc, argv);

  RendezvousOptions rv;
  rv.setRank(rank).setWorldSize(world).setRunId(run_id).setStoreDir(store).setPeers({0}, false);
  auto mesh = connectPeers(rv, nullptr);
  if (!mesh.ok()) return fail(std::string(mesh.status().message()));
  gloo::Context& context = *mesh->context;
  auto channel = Channel::create(mesh->context, wireChannelOptions(maxPayloadBytes(kNumel, 2, 0),
                                                             std::chrono::milliseconds(peer_timeout_ms)));
  if (!channel.ok()) return fail(std::string(channel.status().message()));
  Channel& ch = **channel;
  if (rogue == "mute") return waitUntilCut(ch);
  Hello hello;
  hello.protocol_version = kWireVersion;
  hello.world_size = static_cast<uint32_t>(world);
  hello.num_server_shards = 1;
  hello.method = method;
  hello.mode = mode;
  hello.layout_fingerprint = 0x5eed;
  if (rogue != "no-secret") hello.run_secret = secret;
  auto checked = handshake(ch, hello, false, std::vector<int>{0}, std::chrono::seconds(20));
  if (!checked.ok()) return fail(std::string(checked.status().message()));
  if (!(*checked)[0].ok()) {
    std::fprintf(stderr, "rogue_rank: %s\n", std::string((*checked)[0].message()).c_str());
    return waitUntilCut(ch);
  }
  if (rogue != "no-read" && rogue != "push-unread") {
    auto model = ch.receive(std::vector<int>{0});
    if (!model.ok() || !model->peer_status.ok()) return fail("no initial model");
  }
  if (rogue == "header-only") {
    std::vector<uint8_t> whole = push(rank, 0.0f);
    sendRaw(context, absl::MakeConstSpan(whole).subspan(0, kHeaderBytes),
            absl::MakeConstSpan(whole).subspan(kHeaderBytes), {});
  } else if (rogue == "poison") {
    if (auto s = ch.send(0, push(rank, 3e38f)); !s.ok()) return fail(std::string(s.message()));
  } else if (rogue == "huge") {
    for (uint64_t step = 0; step < 10; ++step) {
      if (auto s = ch.send(0, push(rank, 0.01f, step)); !s.ok()) return fail(std::string(s.message()));
      auto reply = ch.receive(std::vector<int>{0});
      if (!reply.ok() || !reply->peer_status.ok()) return fail("no reply");
    }
    if (auto s = ch.send(0, push(rank, 1e18f, 10)); !s.ok()) return fail(std::string(s.message()));
  } else if (rogue == "garbage") {
    std::vector<uint8_t> damaged = push(rank, 0.5f);
    damaged.back() ^= 0x40;
    if (auto s = ch.send(0, damaged); !s.ok()) return fail(std::string(s.message()));
  } else if (rogue == "overlong") {
    std::vector<uint8_t> whole = push(rank, 0.0f);
    std::vector<uint8_t> payload(whole.begin() + kHeaderBytes, whole.end());
    payload.resize(payload.size() + 1000, 0xEE);
    sendRaw(context, absl::MakeConstSpan(whole).subspan(0, kHeaderBytes),
            absl::MakeConstSpan(whole).subspan(kHeaderBytes), payload);
  } else if (rogue == "short") {
    std::vector<uint8_t> whole = push(rank, 0.0f);
    sendRaw(context, absl::MakeConstSpan(whole).subspan(0, kHeaderBytes),
            absl::MakeConstSpan(whole).subspan(kHeaderBytes),
            absl::MakeConstSpan(whole).subspan(kHeaderBytes, 1));
  } else if (rogue == "bad-then-good") {
    std::vector<uint8_t> damaged = push(rank, 0.5f);
    damaged.back() ^= 0x40;
    if (auto s = ch.send(0, damaged); !s.ok()) return fail(std::string(s.message()));
    // At once, as a pipelining worker would: the server's goodbye and this send meet.
    (void)ch.send(0, push(rank, 0.5f));
  } else if (rogue == "slow-payload") {
    std::vector<uint8_t> whole = smallPush(rank);
    std::vector<uint8_t> frame(channel_wire::headerMessageBytes(kHeaderBytes));
    channel_wire::writeHeaderMessage(frame.data(), 0, absl::MakeConstSpan(whole).subspan(0, kHeaderBytes),
                                     absl::MakeConstSpan(whole).subspan(kHeaderBytes));
    std::vector<uint8_t> body(whole.begin() + kHeaderBytes, whole.end());
    auto h = context.createUnboundBuffer(frame.data(), frame.size());
    h->send(0, channel_wire::kHeaderSlot);
    h->waitSend();
    // Half the peer timeout: a whole one for the largest payload, not for 45 bytes.
    std::this_thread::sleep_for(std::chrono::milliseconds(peer_timeout_ms / 2));
    try {  // the server has closed the connection by now
      auto b = context.createUnboundBuffer(body.data(), body.size());
      b->send(0, channel_wire::kPayloadSlot);
      b->waitSend(std::chrono::milliseconds(peer_timeout_ms));
    } catch (const std::exception&) {
    }
  } else if (rogue == "replay") {
    const std::vector<uint8_t> once = push(rank, 0.0f);
    for (int i = 0; i < 1000 && ch.isLive(0); ++i) {  // the same valid push, again and again
      if (!ch.send(0, once).ok()) break;
      auto reply = ch.receive(std::vector<int>{0});
      if (!reply.ok() || !reply->peer_status.ok()) break;
    }
  } else if (rogue == "push-unread") {
    (void)ch.send(0, push(rank, 0.5f));
  } else if (rogue == "oversized") {
    std::vector<uint8_t> whole = smallPush(rank);
    std::vector<uint8_t> huge(4 << 20, 0xAB);
    try {  // the server closes the connection
      sendRaw(context, absl::MakeConstSpan(whole).subspan(0, kHeaderBytes),
              absl::MakeConstSpan(whole).subspan(kHeaderBytes), huge);
    } catch (const std::exception&) {
    }
  } else if (rogue == "fast") {
    steer(ch, rank, 0.01f, 0);
  } else if (rogue == "fastsmall") {
    steer(ch, rank, 0.004f, 0);
  } else if (rogue == "doubling") {
    steer(ch, rank, 0.01f, 20);
  } else if (rogue == "firstpoison") {
    if (auto s = ch.send(0, push(rank, 1e18f)); !s.ok()) return fail(std::string(s.message()));
  } else if (rogue == "stop") {
    raise(SIGSTOP);
  } else if (rogue != "no-read" && rogue != "silent") {
    return fail("unknown --rogue=" + rogue);
  }
  return waitUntilCut(ch);
}

}  // namespace
}  // namespace sparseps

int main(int argc, char** argv) { return sparseps::run(argc, argv); }
