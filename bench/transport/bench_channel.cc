// Channel over loopback against raw Gloo UnboundBuffer send/recv on the same contexts:
// goodput for 4 KB, 1 MB and 64 MB messages and the 1 KB round trip; then the Channel's
// shaped goodput at 100 Mbit/s, 1 Gbit/s and 10 Gbit/s against the configured rate.
// Two ranks as threads in one process, each with its own Gloo context. Every run checks
// the bytes that arrived before it is timed. The receiver measures goodput from its
// first to its last delivery (counter goodput_Gbps).

#include <benchmark/benchmark.h>
#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>
#include <vector>

#include "transport/channel.h"
#include "transport/rendezvous.h"

namespace sparseps {
namespace {

constexpr size_t kHeaderBytes = 8;
constexpr uint64_t kRawSlot = 0x52415701;

// Header (the payload size) and payload, as Channel::send takes a message.
std::vector<uint8_t> message(absl::Span<const uint8_t> payload) {
  std::vector<uint8_t> m(kHeaderBytes + payload.size());
  const uint64_t n = payload.size();
  std::memcpy(m.data(), &n, sizeof(n));
  std::memcpy(m.data() + kHeaderBytes, payload.data(), payload.size());
  return m;
}

ChannelOptions channelOptions(size_t max_payload) {
  return ChannelOptions()
      .setHeaderBytes(kHeaderBytes)
      .setPayloadSize([](absl::Span<const uint8_t> h) -> absl::StatusOr<size_t> {
        uint64_t n;
        std::memcpy(&n, h.data(), sizeof(n));
        return static_cast<size_t>(n);
      })
      .setMaxPayloadBytes(max_payload);
}

std::vector<std::shared_ptr<gloo::Context>> connectPair() {
  char pattern[] = "/tmp/sparseps_bench_XXXXXX";
  const std::string dir = mkdtemp(pattern);
  std::vector<std::shared_ptr<gloo::Context>> contexts(2);
  std::thread other([&] {
    contexts[1] = *connectWithFileStore(
        RendezvousOptions().setRank(1).setWorldSize(2).setRunId("bench").setStoreDir(dir));
  });
  contexts[0] = *connectWithFileStore(
      RendezvousOptions().setRank(0).setWorldSize(2).setRunId("bench").setStoreDir(dir));
  other.join();
  std::filesystem::remove_all(dir);  // the store is only needed to connect
  return contexts;
}

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 131 + 7);
  return v;
}

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Goodput of a stream of messages from rank 0 to rank 1 over a Channel, optionally shaped.
void channelStream(benchmark::State& state, size_t bytes, double rate) {
  auto contexts = connectPair();
  ChannelOptions options = channelOptions(bytes);
  if (rate > 0) options.setShaping(ShapingOptions{LinkSpec{rate, 0}, LinkSpec{rate, 0}});
  auto sender = *Channel::create(contexts[0], options);
  auto receiver = *Channel::create(contexts[1], options);
  const std::vector<uint8_t> payload = pattern(bytes);
  const std::vector<uint8_t> framed = message(payload);
  // Verify: one message arrives intact.
  std::thread check([&] {
    auto m = receiver->receive(std::vector<int>{0});
    if (!m.ok() || !m->peer_status.ok() || absl::MakeConstSpan(m->payload) != absl::MakeConstSpan(payload)) std::abort();
  });
  if (!sender->send(1, framed).ok()) std::abort();
  check.join();

  const int64_t n = state.max_iterations;
  std::chrono::steady_clock::time_point first, last;
  std::thread sink([&] {
    Frame m;  // reused: no allocation per message
    for (int64_t i = 0; i < n; ++i) {
      if (!receiver->receive(std::vector<int>{0}, &m).ok() || m.payload.size() != bytes) {
        std::abort();
      }
      (i == 0 ? first : last) = std::chrono::steady_clock::now();
    }
  });
  for (auto _ : state) {
    if (!sender->send(1, framed).ok()) state.SkipWithError("send failed");
  }
  sink.join();
  state.SetBytesProcessed(state.iterations() * bytes);
  if (n > 1) {
    const double span = seconds(last - first);
    state.counters["goodput_Gbps"] = (n - 1) * (bytes + kHeaderBytes) * 8.0 / span / 1e9;
    // The shaped link's rate counts the messages' Ethernet frames.
    const double frames = (n - 1) * frameBytes(bytes + kHeaderBytes) * 8.0;
    if (rate > 0) state.counters["of_rate"] = frames / span / rate;
  }
}

// The same stream as raw UnboundBuffer send/recv of exactly `bytes`.
void rawStream(benchmark::State& state, size_t bytes) {
  auto contexts = connectPair();
  std::vector<uint8_t> payload = pattern(bytes), into(bytes);
  auto out = contexts[0]->createUnboundBuffer(payload.data(), bytes);
  auto in = contexts[1]->createUnboundBuffer(into.data(), bytes);
  in->recv(0, kRawSlot);
  out->send(1, kRawSlot);
  out->waitSend();
  in->waitRecv();
  if (into != payload) std::abort();

  const int64_t n = state.max_iterations;
  std::chrono::steady_clock::time_point first, last;
  std::thread sink([&] {
    for (int64_t i = 0; i < n; ++i) {
      in->recv(0, kRawSlot);
      in->waitRecv();
      (i == 0 ? first : last) = std::chrono::steady_clock::now();
    }
  });
  for (auto _ : state) {
    out->send(1, kRawSlot);
    out->waitSend();
  }
  sink.join();
  state.SetBytesProcessed(state.iterations() * bytes);
  if (n > 1) state.counters["goodput_Gbps"] = (n - 1) * bytes * 8.0 / seconds(last - first) / 1e9;
}

void BM_ChannelGoodput(benchmark::State& state) { channelStream(state, state.range(0), 0); }
void BM_RawGlooGoodput(benchmark::State& state) { rawStream(state, state.range(0)); }
BENCHMARK(BM_ChannelGoodput)->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime();
BENCHMARK(BM_RawGlooGoodput)->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20)->UseRealTime();

// Shaped 1 MB stream; the argument is the rate in Mbit/s.
void BM_ShapedChannelGoodput(benchmark::State& state) {
  channelStream(state, 1 << 20, state.range(0) * 1e6);
}
BENCHMARK(BM_ShapedChannelGoodput)->Arg(100)->Arg(1000)->Arg(10000)->UseRealTime();

void BM_ChannelRoundTrip1KB(benchmark::State& state) {
  auto contexts = connectPair();
  auto a = *Channel::create(contexts[0], channelOptions(1024));
  auto b = *Channel::create(contexts[1], channelOptions(1024));
  const std::vector<uint8_t> payload = pattern(1024);
  const std::vector<uint8_t> framed = message(payload);
  std::thread echo([&] {
    Frame m;
    std::vector<uint8_t> back;
    for (;;) {
      if (!b->receive(std::vector<int>{0}, &m).ok() || !m.peer_status.ok()) return;
      back.assign(m.header.begin(), m.header.end());
      back.insert(back.end(), m.payload.begin(), m.payload.end());
      if (!b->send(0, back).ok()) return;
    }
  });
  Frame reply;
  auto roundTrip = [&] {
    if (!a->send(1, framed).ok()) std::abort();
    if (!a->receive(std::vector<int>{1}, &reply).ok() || !reply.peer_status.ok()) std::abort();
  };
  roundTrip();
  if (absl::MakeConstSpan(reply.payload) != absl::MakeConstSpan(payload)) std::abort();
  for (auto _ : state) roundTrip();
  a->shutdown();
  echo.join();
}
BENCHMARK(BM_ChannelRoundTrip1KB)->UseRealTime();

void BM_RawGlooRoundTrip1KB(benchmark::State& state) {
  auto contexts = connectPair();
  std::vector<uint8_t> ping = pattern(1024), pong(1024), echo_buf(1024);
  auto a_out = contexts[0]->createUnboundBuffer(ping.data(), 1024);
  auto a_in = contexts[0]->createUnboundBuffer(pong.data(), 1024);
  auto b_buf = contexts[1]->createUnboundBuffer(echo_buf.data(), 1024);
  const int64_t n = state.max_iterations + 1;
  std::thread echo([&] {
    for (int64_t i = 0; i < n; ++i) {
      b_buf->recv(0, kRawSlot);
      b_buf->waitRecv();
      b_buf->send(0, kRawSlot);
      b_buf->waitSend();
    }
  });
  auto roundTrip = [&] {
    a_in->recv(1, kRawSlot);
    a_out->send(1, kRawSlot);
    a_out->waitSend();
    a_in->waitRecv();
  };
  roundTrip();
  if (pong != ping) std::abort();
  for (auto _ : state) roundTrip();
  echo.join();
}
BENCHMARK(BM_RawGlooRoundTrip1KB)->UseRealTime();

}  // namespace
}  // namespace sparseps
