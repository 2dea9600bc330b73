// Reusable working space of the model's matcher and invariant checks. A driver keeps one (inside
// its model::Driver) and passes it to every step, so the buffers grow once instead of once per
// step, and the model itself keeps no state between calls: two drivers on two threads each own
// theirs.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace kvcheck::model {

class Scratch {
public:
    Scratch();
    ~Scratch();
    Scratch(Scratch&&) noexcept;
    Scratch& operator=(Scratch&&) noexcept;

    // The matcher's answers for one lookup (model/match.cpp), made on first use.
    struct Match;
    Match& match();

    // check_structure's counters per slot, segment and request (model/invariants.cpp).
    std::vector<std::uint32_t> listed;
    std::vector<std::uint32_t> pins;
    std::vector<std::uint32_t> loads;
    // Entries a write found useless to every reader (model/write.cpp).
    std::vector<std::uint32_t> spoiled;

private:
    std::unique_ptr<Match> match_;
};

}  // namespace kvcheck::model
