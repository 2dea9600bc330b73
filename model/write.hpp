// The write path of the steps: what a request's computed tokens become in the state table, and
// the completion that gives those entries their content and publishes them (model/write.cpp).
#pragma once

#include <cstdint>

#include "model/steps.hpp"
#include "model/world.hpp"

namespace kvcheck::model {

// Request q holds entry id: pinned, and listed among the entries it lets go of later.
void hold(World& w, Request& q, std::uint32_t id);

// Registers, group by group, the entries for request r's tokens (from, to] becoming computed,
// written by r and held by it until complete_writes. Entries another published entry already
// holds for this content are duplicates the writer never publishes (walk.hpp, covered_until).
void write_range(World& w, std::uint32_t r, std::uint32_t from, std::uint32_t to, StepOutcome& out, Scratch& scratch);

// Finishes the writes write_range registered for request r: content, ready, published.
void complete_writes(World& w, std::uint32_t r);

// A window block that no resume will ever read (window_block_resumable): it is never published,
// and its writer releases it as soon as it lets go of it (docs/invariants.md, "Window blocks
// released at slide time").
bool private_window_block(const World& w, const Segment& s);

}  // namespace kvcheck::model
