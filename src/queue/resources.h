#pragma once
// A resource vector: a fixed number of slots indexed by ResourceKind. The first three are
// always cpu (millicores), memory (bytes) and pods (count); every other resource name a node or
// pod carries (ephemeral-storage, hugepages-2Mi, nvidia.com/gpu, a host port) gets one of the
// following slots, named in ResourceNames (part of the Snapshot).
// Fixed-size on purpose: 100,000 pending workloads each carry one, and a heap-allocated vector
// per workload would cost an allocation and a pointer chase in the hottest loop of the planner.
// 16 slots (two cache lines): a node's usual names (cpu, memory, pods, ephemeral-storage, two
// hugepage sizes) leave 10 for devices and host ports; the scheduler refuses, naming it, a pod
// that asks for a name beyond the slots (issue 28), it never plans it as if it had not asked.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace onequeue::queue {

inline constexpr int kMaxResourceKinds = 16;
inline constexpr int kCpu = 0;     // millicores
inline constexpr int kMemory = 1;  // bytes
inline constexpr int kPods = 2;    // pod slots (Kubernetes "pods" allocatable)
inline constexpr int kFirstExtended = 3;

struct Resources {
  std::array<int64_t, kMaxResourceKinds> amount{};

  int64_t& operator[](int kind) { return amount[kind]; }
  int64_t operator[](int kind) const { return amount[kind]; }

  Resources& operator+=(const Resources& other) {
    for (int i = 0; i < kMaxResourceKinds; ++i) amount[i] += other.amount[i];
    return *this;
  }
  Resources& operator-=(const Resources& other) {
    for (int i = 0; i < kMaxResourceKinds; ++i) amount[i] -= other.amount[i];
    return *this;
  }
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  friend bool operator==(const Resources&, const Resources&) = default;

  // True when every slot of `request` is <= the same slot here. `slots`: compare only the first
  // ones (the caller knows the others are 0 in both; AvailabilityProfile::SlotsFor).
  bool Covers(const Resources& request, int slots = kMaxResourceKinds) const {
    for (int i = 0; i < slots; ++i) {
      if (request.amount[i] > amount[i]) return false;
    }
    return true;
  }
  bool AnyNegative() const {
    return std::any_of(amount.begin(), amount.end(), [](int64_t v) { return v < 0; });
  }
  // How many copies of `request` fit in this vector (request slots equal to 0 are ignored).
  // Returns `cap` when request is all zeros. `slots`: as for Covers.
  int64_t CopiesOf(const Resources& request, int64_t cap, int slots = kMaxResourceKinds) const {
    // Most questions are "does one more copy fit": answer those without dividing.
    if (!Covers(request, slots)) return 0;
    if (cap <= 1) return cap;
    // One copy fits (Covers), so every quotient below is >= 1. A slot that holds `copies` more
    // is checked with a multiplication: a division costs ~25 cycles and gangs ask this of
    // thousands of nodes per cycle.
    int64_t copies = cap;
    for (int i = 0; i < slots; ++i) {
      if (request.amount[i] <= 0) continue;
      int64_t need;
      if (!__builtin_mul_overflow(request.amount[i], copies, &need) && need <= amount[i]) continue;
      copies = std::min(copies, amount[i] / request.amount[i]);
      if (copies == 1) return 1;
    }
    return copies;
  }
  // Component-wise scaling (a member request times the member count).
  Resources Times(int64_t n) const {
    Resources r;
    for (int i = 0; i < kMaxResourceKinds; ++i) r.amount[i] = amount[i] * n;
    return r;
  }
};

// Hash and equality for interning requests (a hash map of the distinct per-member requests of
// 100,000 workloads): multiply-xor over the slots and a plain loop, both inline (a generic byte
// hash and memcmp cost several times more for these 128 bytes).
struct ResourcesHash {
  size_t operator()(const Resources& r) const {
    // Slots rotated apart and folded, then one multiplication (independent steps, unlike a
    // chain of multiplications); equality is checked on every hit anyway. 4 * i + 1 keeps the
    // 16 slots' rotations distinct (8 * i + 1 wrapped past 64 and paired slot i with i + 8).
    uint64_t h = 0;
    for (int i = 0; i < kMaxResourceKinds; ++i) {
      h ^= std::rotl(static_cast<uint64_t>(r.amount[i]), 4 * i + 1);
    }
    h = (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ull;
    return static_cast<size_t>(h ^ (h >> 32));
  }
};
struct ResourcesEq {
  bool operator()(const Resources& a, const Resources& b) const {
    // Bytewise: the slots are int64 without padding; libc's memcmp compares 32 bytes a step
    // where the xor-or loop over slots, not vectorised at -O2, took ~60 instructions.
    static_assert(sizeof(Resources) == kMaxResourceKinds * sizeof(int64_t));
    return std::memcmp(a.amount.data(), b.amount.data(), sizeof(Resources)) == 0;
  }
};

// Distinct resource vectors, numbered by first appearance: the per-member requests of a cycle's
// workloads (a few hundred among 100,000) and the usages of the profile's blocks. Open addressing
// with the hash kept beside each vector, so a lookup costs a hash and usually one comparison
// (absl::flat_hash_map: ~2x the instructions).
class ResourcesTable {
 public:
  int32_t Intern(const Resources& r) {
    if (2 * (vectors_.size() + 1) > slots_.size()) Grow();
    const size_t h = ResourcesHash()(r);
    const size_t mask = slots_.size() - 1;
    size_t s = (h >> 7) & mask;
    for (; slots_[s] >= 0; s = (s + 1) & mask) {
      const int32_t i = slots_[s];
      if (hashes_[i] == h && ResourcesEq()(vectors_[i], r)) return i;
    }
    const int32_t i = static_cast<int32_t>(vectors_.size());
    slots_[s] = i;
    vectors_.push_back(r);
    hashes_.push_back(h);
    return i;
  }
  const Resources& operator[](int32_t i) const { return vectors_[i]; }
  // Empty again, keeping its allocations (numbers restart at 0).
  void Clear() {
    vectors_.clear();
    hashes_.clear();
    std::fill(slots_.begin(), slots_.end(), -1);
  }

 private:
  void Grow() {
    slots_.assign(std::bit_ceil(std::max<size_t>(64, 4 * (vectors_.size() + 1))), -1);
    const size_t mask = slots_.size() - 1;
    for (size_t i = 0; i < vectors_.size(); ++i) {
      size_t s = (hashes_[i] >> 7) & mask;
      while (slots_[s] >= 0) s = (s + 1) & mask;
      slots_[s] = static_cast<int32_t>(i);
    }
  }
  std::vector<Resources> vectors_;
  std::vector<size_t> hashes_;
  std::vector<int32_t> slots_;  // power of two, at most half full; -1 = empty
};

// Names of the slots, e.g. {"cpu", "memory", "pods", "nvidia.com/gpu"}.
struct ResourceNames {
  std::vector<std::string> names = {"cpu", "memory", "pods"};

  // Index of `name`, or -1. Linear: there are at most kMaxResourceKinds names.
  int IndexOf(const std::string& name) const {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
};

}  // namespace onequeue::queue
