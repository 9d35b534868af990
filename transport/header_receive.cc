#include "transport/header_receive.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <exception>
#include <utility>

#include "transport/channel_wire.h"

namespace sparseps {

HeaderReceive::HeaderReceive(gloo::Context* context, size_t bytes)
    : context_(context),
      bytes_(bytes),
      buffer_(context_->createUnboundBuffer(bytes_.data(), bytes_.size())) {}

HeaderReceive::~HeaderReceive() { stop(); }

bool HeaderReceive::wait(absl::Span<const int> ranks, int* src) {
  if (posted_.empty()) {
    buffer_->recv(std::vector<int>(ranks.begin(), ranks.end()), channel_wire::kHeaderSlot);
    posted_.assign(ranks.begin(), ranks.end());
  }
  if (!buffer_->waitRecv(src, channel_wire::kNoGlooTimeout)) return false;
  posted_.clear();
  return true;
}

void HeaderReceive::wake() {
  std::lock_guard<std::mutex> lock(buffer_mu_);
  buffer_->abortWaitRecv();
}

std::vector<int> HeaderReceive::renew() {
  auto fresh = context_->createUnboundBuffer(bytes_.data(), bytes_.size());
  std::lock_guard<std::mutex> lock(buffer_mu_);
  given_up_.push_back(std::exchange(buffer_, std::move(fresh)));
  return std::exchange(posted_, {});
}

void HeaderReceive::setAside() {
  auto a = std::make_unique<SetAside>();
  std::vector<uint8_t> fresh(bytes_.size());
  a->bytes.swap(bytes_);  // the vector's memory, where Gloo may still write, moves along
  bytes_.swap(fresh);
  auto buffer = context_->createUnboundBuffer(bytes_.data(), bytes_.size());
  {
    std::lock_guard<std::mutex> lock(buffer_mu_);
    a->buffer = std::exchange(buffer_, std::move(buffer));
  }
  posted_.clear();
  SetAside* raw = a.get();
  a->waiter = std::thread([this, raw] {
    int src = -1;
    try {
      // A wake meant for the receive it was may still be pending on it.
      while (!raw->buffer->waitRecv(&src, channel_wire::kNoGlooTimeout)) {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return;
      }
    } catch (const std::exception&) {
      return;  // taken by a pair that failed
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      raw->src = src;
    }
    wake();
  });
  set_aside_.push_back(std::move(a));
}

bool HeaderReceive::takeSetAside(int* src, absl::Span<const uint8_t>* bytes) {
  SetAside* done = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& a : set_aside_) {
      if (a->src >= 0 && !a->taken) {
        a->taken = true;
        done = a.get();
        break;
      }
    }
  }
  if (done == nullptr) return false;
  done->waiter.join();
  *src = done->src;
  *bytes = done->bytes;
  return true;
}

void HeaderReceive::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  for (auto& a : set_aside_) {
    a->buffer->abortWaitRecv();
    if (a->waiter.joinable()) a->waiter.join();
  }
}

}  // namespace sparseps
