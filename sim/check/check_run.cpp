#include "sim/check/check_run.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "model/invariants.hpp"
#include "sim/check/checkpoint.hpp"
#include "sim/check/dot.hpp"
#include "sim/check/steps_json.hpp"
#include "sim/io/files.hpp"
#include "sim/io/input_error.hpp"
#include "sim/io/shell_word.hpp"
#include "sim/io/suggest.hpp"

namespace kvcheck::sim {

const model::PolicyInfo& policy_named(const std::string& name) {
    const model::PolicyInfo* p = model::find_policy(name);
    if (p == nullptr) throw InputError("", "--policy", unknown_policy(name));
    return *p;
}

std::string known_scopes() {
    std::string names;
    for (const std::string& known : scope_names()) names += (names.empty() ? "" : ", ") + known;
    return names;
}

Scope scope_named(const std::string& name) {
    for (const std::string& known : scope_names())
        if (known == name) return named_scope(name);
    throw InputError("", "--scope",
                     "unknown scope \"" + name + "\"" + did_you_mean(name, scope_names()) +
                         " (known: " + known_scopes() + ")");
}

Order order_named(const std::string& name) {
    const std::optional<Order> o = order_from_name(name);
    if (!o) throw InputError("", "--order", "unknown search order \"" + name + "\" (known: bfs, dfs)");
    return *o;
}

Reduction reduction_named(const std::string& name) {
    const std::optional<Reduction> r = reduction_from_name(name);
    if (!r) throw InputError("", "--reduction", "unknown reduction \"" + name + "\" (known: none, symmetry)");
    return *r;
}

void remove_counterexample_files(const std::string& dir) {
    for (const char* name : {"/counterexample.json", "/counterexample.dot"}) remove_stale(dir + name);
}

void write_counterexample_files(const std::string& dir, const Scope& scope, const std::string& policy,
                                const Counterexample& c) {
    ensure_directory(dir);
    const std::string note =
        "counterexample for policy " + policy + ": " + (c.violations.empty() ? "" : c.violations.front().invariant);
    write_file_atomic(dir + "/counterexample.json",
                      steps_scenario_json(scope, policy, c.steps, note, nullptr).dump(2) + "\n");
    write_file_atomic(dir + "/counterexample.dot", counterexample_dot(c));
}

namespace {

std::string checkpoint_path_of(const CheckRequest& a) {
    return !a.checkpoint.empty() ? a.checkpoint
           : !a.resume.empty()   ? a.resume
           : !a.out.empty()      ? a.out + "/check.checkpoint"
                                 : "check.checkpoint";
}

// Every file the run may write is checked before the work.
void require_outputs(const CheckRequest& a, const std::string& checkpoint_path) {
    require_output_file(checkpoint_path);
    if (!a.out.empty()) {
        require_output_folder(a.out);
        for (const char* name : {"/check.checkpoint", "/counterexample.json", "/counterexample.dot"})
            require_output_file(a.out + name);
        require_output_folder(a.out + "/schedules");  // the counterexample's replay schedules (sim/run)
        for (const char* name : {"/counterexample.json", "/counterexample.dot"})
            if (same_file(checkpoint_path, a.out + name))
                throw InputError(checkpoint_path, "--checkpoint",
                                 "is the run's " + std::string(name + 1) + " too; give the checkpoint another file");
    }
    // A run writes its checkpoint over these files, or removes them once it finishes: each must
    // be missing or a checkpoint already (the --resume file is read as one).
    for (const std::string& path :
         {checkpoint_path, a.checkpoint, a.out.empty() ? std::string() : a.out + "/check.checkpoint"})
        if (!path.empty() && (a.resume.empty() || !same_file(path, a.resume)) && !may_hold_checkpoint(path))
            throw InputError(path, "",
                             "exists and is not a kvcheck checkpoint, which a run would write over or remove here");
}

// A resumed run answers the checkpoint's question; a flag that asks another is an input error.
ExploreCheckpoint resume_question(CheckRequest& a) {
    ExploreCheckpoint resumed = decode_checkpoint(read_file(a.resume), a.resume);
    const std::vector<std::string> scopes = scope_names();
    if (model::find_policy(resumed.policy) == nullptr ||
        std::find(scopes.begin(), scopes.end(), resumed.scope) == scopes.end())
        throw InputError(a.resume, "",
                         "names a policy or scope this kvcheck does not know (\"" + resumed.policy + "\", \"" +
                             resumed.scope + "\")");
    const auto same = [&](const char* flag, const std::string& given, const std::string& saved) {
        if (a.given(flag) && given != saved)
            throw InputError(a.resume, flag,
                             "the checkpoint is for " + std::string(flag) + " \"" + saved + "\", not \"" + given +
                                 "\"");
    };
    same("--scope", a.scope, resumed.scope);
    same("--policy", a.policy, resumed.policy);
    same("--invariant", a.target, resumed.target);
    same("--reduction", a.reduction, reduction_name(static_cast<Reduction>(resumed.reduction)));
    same("--order", a.order, order_name(static_cast<Order>(resumed.order)));
    if (a.given("--liveness") && !resumed.keep_graph)
        throw InputError(a.resume, "--liveness", "the checkpoint was written without --liveness");
    a.scope = resumed.scope;
    a.policy = resumed.policy;
    a.target = resumed.target;
    a.reduction = reduction_name(static_cast<Reduction>(resumed.reduction));
    a.order = order_name(static_cast<Order>(resumed.order));
    a.liveness = resumed.keep_graph;
    return resumed;
}

nlohmann::json result_json(const CheckOutcome& o) {
    const CheckRequest& a = o.asked;
    const ExploreReport& r = o.report;
    nlohmann::json j = {{"scope", a.scope},           {"policy", a.policy},       {"order", a.order},
                        {"reduction", a.reduction},   {"states", r.states},       {"transitions", r.transitions},
                        {"depth", r.depth},           {"seconds", r.seconds},     {"states_per_s", r.states_per_s},
                        {"exhausted", r.exhausted},   {"bound_hit", r.bound_hit}, {"stuck_states", r.stuck_states},
                        {"cycles", r.nontrivial_sccs}};
    if (r.checkpoint) j["checkpoint"] = o.checkpoint_path;
    if (r.counterexample) {
        j["violated"] = r.counterexample->violations.front().invariant;
        j["counterexample_steps"] = r.counterexample->steps.size();
        j["steps"] = r.counterexample->described;
    }
    return j;
}

}  // namespace

CheckOutcome run_check(CheckRequest a) {
    if (!a.resume.empty()) require_input_file(a.resume);  // read first, and maybe written back
    const std::string checkpoint_path = checkpoint_path_of(a);
    require_outputs(a, checkpoint_path);
    std::optional<OutputLock> lock;
    if (!a.out.empty()) lock.emplace(a.out);
    std::optional<ExploreCheckpoint> resumed;
    if (!a.resume.empty()) resumed = resume_question(a);
    const model::PolicyInfo& policy = policy_named(a.policy);
    CheckOutcome o;
    o.scope = scope_named(a.scope);
    if (!a.target.empty() && !model::is_invariant(a.target)) {
        const std::string what = "unknown invariant \"" + a.target + "\"" +
                                 did_you_mean(a.target, invariant_name_list()) +
                                 " (known: " + model::invariant_names() + ")";
        if (resumed && !a.given("--invariant")) throw InputError(a.resume, "", "names an " + what);
        throw InputError("", "--invariant", what);
    }
    ExploreOptions options;
    if (resumed) options.resume = &*resumed;
    options.reduction = reduction_named(a.reduction);
    options.order = order_named(a.order);
    if (options.order == Order::depth_first && a.liveness)
        throw InputError("", "--liveness",
                         "keeps the explored graph, which only the breadth-first search does (use --order bfs)");
    options.max_states = a.max_states;
    options.max_seconds = a.max_seconds;
    options.target = a.target;
    options.keep_graph = a.liveness;
    options.stop = a.stop;
    options.progress = a.progress;
    if (a.started) a.started(a);
    try {
        o.report = explore(o.scope, policy.defenses, options);
    } catch (const InputError& e) {  // what the explorer found wrong in the checkpoint, said of its file
        if (e.file().empty() && e.place() == "--resume") throw InputError(a.resume, "", e.message());
        throw;
    }
    ExploreReport& r = o.report;
    if (r.checkpoint) {
        r.checkpoint->policy = a.policy;
        write_file_atomic(checkpoint_path, encode_checkpoint(*r.checkpoint));
        o.checkpoint_path = checkpoint_path;
    } else {
        // Finished: the checkpoint it resumed, the one it was told to write and the one in its
        // output folder are of a run now done (./check.checkpoint may be another question's).
        for (const std::string* path : {&a.resume, &a.checkpoint})
            if (!path->empty()) remove_stale(*path);
        if (!a.out.empty()) remove_stale(a.out + "/check.checkpoint");
    }
    if (r.counterexample && !a.out.empty()) {
        write_counterexample_files(a.out, r.counterexample_scope.value_or(o.scope), a.policy, *r.counterexample);
        o.wrote_counterexample = true;
    } else if (r.counterexample) {
        // Either search order is fixed, so the same question finds the same counterexample.
        o.reproduce = kvcheck_command() + " check --scope " + shell_word(a.scope) + " --policy " + shell_word(a.policy);
        if (a.order != "bfs") o.reproduce += " --order " + shell_word(a.order);
        if (!a.target.empty()) o.reproduce += " --invariant " + shell_word(a.target);
        if (a.reduction != "none") o.reproduce += " --reduction " + shell_word(a.reduction);
    } else if (!a.out.empty()) {
        remove_counterexample_files(a.out);
    }
    o.asked = std::move(a);
    o.result = result_json(o);
    return o;
}

}  // namespace kvcheck::sim
