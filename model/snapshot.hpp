// A World's changing state as one flat byte string. Explorers hold millions of states in their
// frontier: as encoded states they cost one shared buffer instead of some thirty heap buffers a
// World, and restoring one into a scratch World reuses that World's buffers (docs/checker.md).
//
// What stays fixed for a run (the model config and what is derived from it, the defenses, the
// limits, the rollout mode, the request specs and their writers entries) is not encoded: a codec
// is built from the run's initial World and restores only into Worlds of that run.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "model/world.hpp"

namespace kvcheck::model {

class StateCodec {
public:
    explicit StateCodec(const World& initial);

    // The length of w's encoding, then the encoding itself written to `out`, which must have that
    // many bytes (explorers write straight into their frontier's buffers). Every request spec must
    // be one of the initial World's.
    std::size_t encoded_size(const World& w) const;
    void encode(const World& w, std::byte* out) const;
    // Restores the state encoded at `in` into w (a World of the same run, whatever its state)
    // and returns the first byte after it.
    const std::byte* decode(const std::byte* in, World& w) const;

private:
    template <typename Sink>
    void write(const World& w, Sink& sink) const;  // every field, in order, to a Sizer or a Writer

    std::vector<std::shared_ptr<const RequestSpec>> specs_;  // the initial World's, by request slot
};

}  // namespace kvcheck::model
