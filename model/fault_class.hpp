// The fault classes of DESIGN.md section 5 as model data: the simulator's injector, the reports and
// the scenario loader name them the same way. Faults act through model steps (model/steps.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "model/steps.hpp"

namespace kvcheck::model {

enum class FaultClass : std::uint8_t { F1, F2, F3, F4, F5, F6, F7, F8, F9, F10, F11 };
inline constexpr int kFaultClassCount = 11;

inline constexpr std::array<std::string_view, kFaultClassCount> kFaultNames = {"F1", "F2", "F3", "F4",  "F5", "F6",
                                                                               "F7", "F8", "F9", "F10", "F11"};
inline constexpr std::array<std::string_view, kFaultClassCount> kFaultSummaries = {
    "eviction interrupted mid-way",
    "external storage load failure",
    "index/KV version skew",
    "late I/O: registered, not yet resident",
    "model or config version change",
    "eviction between validate and read",
    "compression boundary advancing under a tail read",
    "SWA window blocks expiring",
    "misaligned staging buffer on reload",
    "migration while a graph is captured",
    "loss of one block of a compressed segment",
};

constexpr std::string_view fault_name(FaultClass fault) { return kFaultNames[static_cast<std::size_t>(fault)]; }
constexpr std::string_view fault_summary(FaultClass fault) { return kFaultSummaries[static_cast<std::size_t>(fault)]; }

// The class a fault step belongs to, for drivers that replay steps without an injector (steps
// mode); nullopt for a step that is no fault. F4, F6, F7 and F8 are timings of ordinary steps.
constexpr std::optional<FaultClass> fault_class_of(StepKind kind) {
    switch (kind) {
        case StepKind::interrupt_eviction: return FaultClass::F1;
        case StepKind::io_fail:
        case StepKind::partial_load: return FaultClass::F2;
        case StepKind::skew_index: return FaultClass::F3;
        case StepKind::bump_model_version:
        case StepKind::change_layout: return FaultClass::F5;
        case StepKind::misaligned_reload: return FaultClass::F9;
        case StepKind::migrate: return FaultClass::F10;
        case StepKind::lose_block: return FaultClass::F11;
        default: return std::nullopt;
    }
}

}  // namespace kvcheck::model
