#include "transport/goodbye.h"

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <chrono>
#include <exception>

#include "transport/channel_wire.h"

namespace sparseps {
namespace {

// A timeout here only breaks a context that is closing.
constexpr std::chrono::milliseconds kByeTimeout = std::chrono::seconds(10);

}  // namespace

Goodbye::Goodbye(gloo::Context* context, int peer) : context_(context), peer_(peer) {}

Goodbye::~Goodbye() = default;

void Goodbye::prepare(uint64_t messages_sent) {
  bye_word_ = messages_sent;
  bye_ = context_->createUnboundBuffer(&bye_word_, sizeof(bye_word_));
  bye_ack_ = context_->createUnboundBuffer(&bye_ack_word_, sizeof(bye_ack_word_));
}

void Goodbye::post() {
  bye_ack_->recv(peer_, channel_wire::kAckSlot);
  bye_->send(peer_, channel_wire::kControlSlot);
}

void Goodbye::await() {
  try {
    bye_->waitSend(nullptr, kByeTimeout);
    bye_ack_->waitRecv(nullptr, kByeTimeout);
  } catch (const std::exception&) {
    // The peer is gone already.
  }
}

void Goodbye::abort() {
  if (bye_) bye_->abortWaitSend();
  if (bye_ack_) bye_ack_->abortWaitRecv();
}

void Goodbye::ackTheirs() {
  try {
    ack_ = context_->createUnboundBuffer(&ack_word_, sizeof(ack_word_));
    ack_->send(peer_, channel_wire::kAckSlot);
    ack_->waitSend(nullptr, kByeTimeout);
  } catch (const std::exception&) {
    // The peer closed without waiting for the ack: it has what it needs.
  }
}

}  // namespace sparseps
