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

constexpr size_t kMagicBytes = 8;

// The fields of a checkpoint go through field(): Writer appends them, Reader takes them
// back in the same order (false once the bytes run out).
class Writer {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  bool field(uint64_t v) {
    bytes(&v, sizeof v);
    return true;
  }
  template <typename T>
  bool field(const std::vector<T>& v) {
    field(uint64_t{v.size()});
    bytes(v.data(), v.size() * sizeof(T));
    return true;
  }
  bool field(const std::string& v) {
    field(uint64_t{v.size()});
    bytes(v.data(), v.size());
    return true;
  }
  std::vector<uint8_t>& out() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), left_(n) {}
  bool field(uint64_t& v) { return bytes(&v, sizeof v); }
  template <typename T>
  bool field(std::vector<T>& v) {
    uint64_t n;
    if (!field(n) || n > left_ / sizeof(T)) return false;  // bound before allocating
    v.resize(n);
    return bytes(v.data(), n * sizeof(T));
  }
  bool field(std::string& v) {
    uint64_t n;
    if (!field(n) || n > left_) return false;
    v.resize(n);
    return bytes(v.data(), n);
  }
  size_t left() const { return left_; }

 private:
  bool bytes(void* dst, size_t n) {
    if (n > left_) return false;
    if (n == 0) return true;  // an empty vector's data() may be null, which memcpy forbids
    std::memcpy(dst, p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }

  const uint8_t* p_;
  size_t left_;
};

// Each kind of checkpoint file: its magic, what deleting a damaged one means, and its
// fields in file order (C is the checkpoint, const when saving).
struct ShardFile {
  using Checkpoint = ShardCheckpoint;
  static constexpr char kMagic[kMagicBytes] = {'S', 'P', 'S', 'C', 'K', 'P', 'T', '1'};
  static constexpr char kAdvice[] = "delete it to start afresh";
  template <typename Io, typename C>
  static bool fields(Io& io, C& c) {
    return io.field(c.layout_fingerprint) && io.field(c.version) && io.field(c.pushes) &&
           io.field(c.model) && io.field(c.buffers) && io.field(c.worker_steps) &&
           io.field(c.method_state);
  }
};

struct WorkerFile {
  using Checkpoint = WorkerCheckpoint;
  static constexpr char kMagic[kMagicBytes] = {'S', 'P', 'S', 'W', 'R', 'K', 'R', '1'};
  static constexpr char kAdvice[] =
      "delete it to resume with this worker's momentum and residuals at zero";
  template <typename Io, typename C>
  static bool fields(Io& io, C& c) {
    return io.field(c.layout_fingerprint) && io.field(c.epochs_done) && io.field(c.method) &&
           io.field(c.method_state);
  }
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
absl::Status readChecked(const std::string& path, const char (&magic)[kMagicBytes],
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
  return Reader(data.data() + kMagicBytes, data.size() - kMagicBytes - sizeof(uint32_t));
}

template <typename File>
absl::Status save(const std::string& path, const typename File::Checkpoint& c) {
  Writer w;
  w.bytes(File::kMagic, kMagicBytes);
  File::fields(w, c);
  return writeChecked(path, w);
}

template <typename File>
absl::StatusOr<typename File::Checkpoint> load(const std::string& path) {
  std::vector<uint8_t> data;
  if (auto st = readChecked(path, File::kMagic, File::kAdvice, &data); !st.ok()) return st;
  Reader r = fieldsOf(data);
  typename File::Checkpoint c;
  if (!File::fields(r, c) || r.left() != 0) {
    return corruptError(path, "truncated fields", File::kAdvice);
  }
  return c;
}

}  // namespace

absl::Status saveCheckpoint(const std::string& path, const ShardCheckpoint& c) {
  return save<ShardFile>(path, c);
}

absl::StatusOr<ShardCheckpoint> loadCheckpoint(const std::string& path) {
  return load<ShardFile>(path);
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
  return save<WorkerFile>(path, c);
}

absl::StatusOr<WorkerCheckpoint> loadWorkerCheckpoint(const std::string& path) {
  return load<WorkerFile>(path);
}

}  // namespace sparseps
