#include "tests/core/local_hub.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/wire/wire_header.h"

namespace sparseps {

class LocalEndpoint : public Endpoint {
 public:
  LocalEndpoint(LocalHub* hub, int rank) : hub_(hub), rank_(rank) {}
  int rank() const override { return rank_; }

  absl::Status send(int dst, absl::Span<const uint8_t> message) override {
    if (message.size() < kHeaderBytes) return absl::InvalidArgumentError("message shorter than a header");
    std::lock_guard<std::mutex> lock(hub_->mu_);
    if (hub_->dead_[dst]) return absl::UnavailableError(absl::StrCat("rank ", dst, " is dead"));
    if (hub_->cut_.count({rank_, dst}) > 0) {
      return absl::UnavailableError(absl::StrCat("rank ", dst, " is cut off"));
    }
    Frame f;
    f.src = rank_;
    f.header.assign(message.begin(), message.begin() + kHeaderBytes);
    f.payload.assign(message.begin() + kHeaderBytes, message.end());
    hub_->inboxes_[dst].frames.push_back(std::move(f));
    hub_->cv_.notify_all();
    return absl::OkStatus();
  }

  absl::Status receive(absl::Span<const int> ranks, Frame* frame, Deadline until) override {
    std::unique_lock<std::mutex> lock(hub_->mu_);
    auto& inbox = hub_->inboxes_[rank_].frames;
    for (;;) {
      auto it = std::find_if(inbox.begin(), inbox.end(), [&](const Frame& f) {
        return std::find(ranks.begin(), ranks.end(), f.src) != ranks.end() &&
               hub_->cut_.count({rank_, f.src}) == 0;
      });
      if (it != inbox.end()) {
        *frame = std::move(*it);
        inbox.erase(it);
        return absl::OkStatus();
      }
      for (int r : ranks) {
        // A rank that this one dropped is not reported; one that dropped this rank is.
        if (hub_->dead_[r] || (hub_->cut_.count({rank_, r}) > 0 && dropped_.count(r) == 0)) {
          frame->src = r;
          frame->peer_status =
              absl::UnavailableError(absl::StrCat("rank ", r, " closed its connection"));
          return absl::OkStatus();
        }
      }
      if (hub_->dead_[rank_]) return absl::CancelledError("this rank was killed");
      if (until == kNoDeadline) {
        hub_->cv_.wait(lock);
      } else if (hub_->cv_.wait_until(lock, until) == std::cv_status::timeout) {
        return absl::DeadlineExceededError("nothing came in time");
      }
    }
  }

  void drop(int rank, const std::string&) override {
    std::lock_guard<std::mutex> lock(hub_->mu_);
    dropped_.insert(rank);
    hub_->cut_.insert({rank_, rank});
    hub_->cut_.insert({rank, rank_});
    hub_->cv_.notify_all();
  }

 private:
  LocalHub* hub_;
  int rank_;
  std::set<int> dropped_;  // ranks this endpoint dropped
};

LocalHub::LocalHub(int world_size) : inboxes_(world_size), dead_(world_size, false) {}

std::unique_ptr<Endpoint> LocalHub::endpoint(int rank) {
  return std::make_unique<LocalEndpoint>(this, rank);
}

void LocalHub::kill(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  dead_[rank] = true;
  inboxes_[rank].frames.clear();
  cv_.notify_all();
}

}  // namespace sparseps
