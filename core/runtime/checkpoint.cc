#include "core/runtime/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace sparseps {
namespace {

constexpr char kMagic[8] = {'S', 'P', 'S', 'C', 'K', 'P', 'T', '1'};
constexpr char kWorkerMagic[sizeof kMagic] = {'S', 'P', 'S', 'W', 'R', 'K', 'R', '1'};

class Writer {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  void u64(uint64_t v) { bytes(&v, sizeof v); }
  template <typename T>
  void vec(const std::vector<T>& v) {
    u64(v.size());
    bytes(v.data(), v.size() * sizeof(T));
  }
  void str(const std::string& v) {
    u64(v.size());
    bytes(v.data(), v.size());
  }
  std::vector<uint8_t>& out() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), left_(n) {}
  bool bytes(void* dst, size_t n) {
    if (n > left_) return false;
    if (n == 0) return true;  // an empty vector's data() may be null, which memcpy forbids
    std::memcpy(dst, p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  bool u64(uint64_t* v) { return bytes(v, sizeof *v); }
  template <typename T>
  bool vec(std::vector<T>* v) {
    uint64_t n;
    if (!u64(&n) || n > left_ / sizeof(T)) return false;  // bound before allocating
    v->resize(n);
    return bytes(v->data(), n * sizeof(T));
  }
  bool str(std::string* v) {
    uint64_t n;
    if (!u64(&n) || n > left_) return false;
    v->resize(n);
    return bytes(v->data(), n);
  }
  size_t left() const { return left_; }

 private:
  const uint8_t* p_;
  size_t left_;
};

absl::Status errnoError(const std::string& what, const std::string& path) {
  return absl::InternalError(absl::StrCat("checkpoint: ", what, " ", path, ": ",
                                          std::strerror(errno)));
}

absl::Status writeAllAndSync(const std::string& path, const std::vector<uint8_t>& data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errnoError("cannot create", path);
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      return errnoError("cannot write", path);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    return errnoError("cannot fsync", path);
  }
  if (::close(fd) != 0) return errnoError("cannot close", path);
  return absl::OkStatus();
}

std::string parentDir(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// What deleting a damaged file means, per kind of checkpoint.
constexpr char kServerAdvice[] = "delete it to start afresh";
constexpr char kWorkerAdvice[] =
    "delete it to resume with this worker's momentum and residuals at zero";

absl::Status corruptError(const std::string& path, const char* why, const char* advice) {
  return absl::DataLossError(absl::StrCat("checkpoint ", path, " is corrupt: ", why, "; ", advice));
}

// Appends a CRC-32 of everything written, writes the bytes to path.tmp, fsyncs, renames
// it over path and fsyncs the directory: a crash leaves either the old file or the new.
absl::Status writeChecked(const std::string& path, Writer& w) {
  uint32_t crc = crc32(0L, w.out().data(), static_cast<uInt>(w.out().size()));
  w.bytes(&crc, sizeof crc);
  const std::string tmp = path + ".tmp";
  if (auto s = writeAllAndSync(tmp, w.out()); !s.ok()) return s;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return errnoError("cannot rename into", path);
  // The rename itself is durable only once the directory entry is synced.
  const std::string dir = parentDir(path);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return errnoError("cannot open directory", dir);
  int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) return errnoError("cannot fsync directory", dir);
  return absl::OkStatus();
}

// Reads path whole and checks its trailing CRC-32 and leading 8-byte magic; *data keeps
// both. NotFound when the file cannot be opened.
absl::Status readChecked(const std::string& path, const char (&magic)[sizeof kMagic],
                         const char* advice, std::vector<uint8_t>* data) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("checkpoint: cannot open ", path,
                                            " (no checkpoint to resume from; run without --resume)"));
  }
  data->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (data->size() < sizeof magic + sizeof(uint32_t)) {
    return corruptError(path, "too short", advice);
  }
  uint32_t stored_crc;
  std::memcpy(&stored_crc, data->data() + data->size() - sizeof stored_crc, sizeof stored_crc);
  const size_t body = data->size() - sizeof stored_crc;
  if (crc32(0L, data->data(), static_cast<uInt>(body)) != stored_crc) {
    return corruptError(path, "checksum mismatch", advice);
  }
  if (std::memcmp(data->data(), magic, sizeof magic) != 0) {
    return corruptError(path, "not a sparseps checkpoint of this kind", advice);
  }
  return absl::OkStatus();
}

// The fields of a file readChecked accepted: between the 8-byte magic and the CRC-32.
Reader fieldsOf(const std::vector<uint8_t>& data) {
  return Reader(data.data() + sizeof kMagic, data.size() - sizeof kMagic - sizeof(uint32_t));
}

}  // namespace

absl::Status saveCheckpoint(const std::string& path, const ShardCheckpoint& c) {
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  w.u64(c.layout_fingerprint);
  w.u64(c.version);
  w.u64(c.pushes);
  w.vec(c.model);
  w.vec(c.buffers);
  w.vec(c.worker_steps);
  w.str(c.method_state);
  return writeChecked(path, w);
}

absl::StatusOr<ShardCheckpoint> loadCheckpoint(const std::string& path) {
  std::vector<uint8_t> data;
  if (auto st = readChecked(path, kMagic, kServerAdvice, &data); !st.ok()) return st;
  Reader r = fieldsOf(data);
  ShardCheckpoint c;
  if (!r.u64(&c.layout_fingerprint) || !r.u64(&c.version) || !r.u64(&c.pushes) ||
      !r.vec(&c.model) || !r.vec(&c.buffers) || !r.vec(&c.worker_steps) ||
      !r.str(&c.method_state) || r.left() != 0) {
    return corruptError(path, "truncated fields", kServerAdvice);
  }
  return c;
}

absl::StatusOr<ShardCheckpoint> loadCheckpointToResume(const std::string& path,
                                                        uint64_t layout_fingerprint) {
  absl::StatusOr<ShardCheckpoint> saved = loadCheckpoint(path);
  if (saved.ok() && saved->layout_fingerprint != layout_fingerprint) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint ", path, " was written for a different model (layout fingerprint ",
        absl::Hex(saved->layout_fingerprint), ", this model ", absl::Hex(layout_fingerprint),
        "): resume with that run's flags"));
  }
  return saved;
}

absl::Status saveWorkerCheckpoint(const std::string& path, const WorkerCheckpoint& c) {
  Writer w;
  w.bytes(kWorkerMagic, sizeof kWorkerMagic);
  w.u64(c.layout_fingerprint);
  w.u64(c.epochs_done);
  w.str(c.method);
  w.str(c.method_state);
  return writeChecked(path, w);
}

absl::StatusOr<WorkerCheckpoint> loadWorkerCheckpoint(const std::string& path) {
  std::vector<uint8_t> data;
  if (auto st = readChecked(path, kWorkerMagic, kWorkerAdvice, &data); !st.ok()) return st;
  Reader r = fieldsOf(data);
  WorkerCheckpoint c;
  if (!r.u64(&c.layout_fingerprint) || !r.u64(&c.epochs_done) || !r.str(&c.method) ||
      !r.str(&c.method_state) || r.left() != 0) {
    return corruptError(path, "truncated fields", kWorkerAdvice);
  }
  return c;
}

}  // namespace sparseps
