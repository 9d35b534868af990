#pragma once
// EventQueue: the clock of a virtual-time job. Actions run in order of their simulated
// time (integer nanoseconds), ties in the order they were scheduled, so the same inputs
// always give the same sequence: nothing depends on the machine's own timing.

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace sparseps {

class EventQueue {
 public:
  using Action = std::function<void()>;

  // Schedules action at time_ns (not before now()).
  void at(int64_t time_ns, Action action) {
    events_.push(Event{time_ns < now_ ? now_ : time_ns, next_seq_++, std::move(action)});
  }
  // Runs the earliest event, advancing now(); false when none is left.
  bool runNext() {
    if (events_.empty()) return false;
    Event e = events_.top();
    events_.pop();
    now_ = e.time;
    e.action();
    return true;
  }
  int64_t now() const { return now_; }

 private:
  struct Event {
    int64_t time;
    uint64_t seq;
    Action action;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t next_seq_ = 0;
  int64_t now_ = 0;
};

}  // namespace sparseps
