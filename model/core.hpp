// Always-on assertions, the one PRNG type and the content hash used everywhere in kvcheck.
// Kept dependency-free so that model/, sim/ and cuda_replay/ share one definition of each.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

namespace kvcheck {

[[noreturn]] inline void assert_fail(const char* expr, const char* file, int line, const std::string& msg) {
    std::fprintf(stderr, "kvcheck: internal assertion failed: %s (%s:%d) %s\n", expr, file, line, msg.c_str());
    std::abort();
}

template <typename A, typename B>
std::string describe_operands(const A& a, const B& b) {
    std::ostringstream out;
    out << "left=" << a << " right=" << b;
    return out.str();
}

}  // namespace kvcheck

// Programmer errors only; user input errors are kvcheck::InputError (sim/input_error.hpp).
#define KV_ASSERT(cond, msg)                                                                                           \
    do {                                                                                                               \
        if (!(cond)) ::kvcheck::assert_fail(#cond, __FILE__, __LINE__, (msg));                                         \
    } while (0)
#define KV_ASSERT_EQ(a, b, msg)                                                                                        \
    do {                                                                                                               \
        if (!((a) == (b)))                                                                                             \
            ::kvcheck::assert_fail(#a " == " #b, __FILE__, __LINE__,                                                   \
                                   ::kvcheck::describe_operands((a), (b)) + " " + (msg));                              \
    } while (0)
#define KV_UNREACHABLE(msg) ::kvcheck::assert_fail("unreachable", __FILE__, __LINE__, (msg))

namespace kvcheck {

// splitmix64 finaliser: the one mixing function for content tags, prefix keys and state hashes.
constexpr std::uint64_t mix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

constexpr std::uint64_t hash_combine(std::uint64_t seed, std::uint64_t value) { return mix64(seed ^ mix64(value)); }

// xoshiro256** with an integer-only API. std::*_distribution is never used: its output differs
// between standard libraries, and kvcheck promises byte-identical reports from a seed.
class Rng {
public:
    explicit Rng(std::uint64_t seed) {
        std::uint64_t s = seed;
        for (auto& word : state_) {
            s += 0x9e3779b97f4a7c15ULL;
            word = mix64(s);
        }
    }

    std::uint64_t next() {
        const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const std::uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform in [0, bound); bound 0 yields 0. Lemire's multiply-shift with rejection.
    std::uint64_t below(std::uint64_t bound) {
        if (bound == 0) return 0;
        for (;;) {
            const unsigned __int128 product = static_cast<unsigned __int128>(next()) * bound;
            const auto low = static_cast<std::uint64_t>(product);
            if (low >= bound || low >= (-bound) % bound) return static_cast<std::uint64_t>(product >> 64);
        }
    }

    // True with probability parts_per_million / 1e6.
    bool chance_ppm(std::uint32_t parts_per_million) { return below(1'000'000) < parts_per_million; }

    // A child generator for one component, derived from this one's seed stream.
    Rng fork(std::uint64_t salt) { return Rng(hash_combine(next(), salt)); }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    std::uint64_t state_[4];
};

}  // namespace kvcheck
