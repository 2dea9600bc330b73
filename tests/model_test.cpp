#include <gtest/gtest.h>

#include <memory>

#include "model/invariants.hpp"
#include "model/steps.hpp"

using namespace kvcheck::model;

namespace {

World toy_world(const char* policy, std::uint64_t budget = 1 << 20) {
    Limits limits;
    limits.gpu_budget_bytes = budget;
    return World(std::make_shared<ModelConfig>(*find_preset("toy")), find_policy(policy)->defenses, limits, Rollout::cross_request);
}

std::uint32_t add(World& w, std::uint32_t uid, std::vector<std::uint64_t> ids, std::uint32_t input, std::uint32_t output) {
    return w.add_request(std::make_shared<RequestSpec>(make_request_spec(uid, ids, 16, input, output)));
}

std::vector<Violation> step(World& w, Step s) {
    StepOutcome o = apply(w, s);
    std::vector<Violation> v;
    check_invariants(w, o, true, v);
    for (auto& x : v) ADD_FAILURE() << x.invariant << ": " << x.message << " after " << describe(w, s);
    return v;
}

void run_request(World& w, std::uint32_t r) {
    for (StepKind k : {StepKind::lookup, StepKind::pin, StepKind::revalidate, StepKind::allocate, StepKind::read, StepKind::commit})
        step(w, {k, r, 0});
    while (enabled(w, {StepKind::decode, r, 0})) step(w, {StepKind::decode, r, 0});
    step(w, {StepKind::finish, r, 0});
}

}  // namespace

TEST(Smoke, SecondRequestResumesFromFirst) {
    World w = toy_world("validated");
    const std::uint32_t a = add(w, 1, {1, 2, 3, 4, 5, 6}, 96, 16);
    run_request(w, a);
    const std::uint32_t b = add(w, 2, {1, 2, 3, 4, 5, 6, 7}, 112, 16);
    step(w, {StepKind::lookup, b, 0});
    EXPECT_EQ(w.requests[b].resume_len, 96u);
    EXPECT_EQ(w.requests[b].verdict, VerdictKind::resumable);
}
