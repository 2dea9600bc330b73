// Event loop, request lifecycle timing, storage tiers and the oracle bookkeeping. Faults are
// proposed by FaultInjector (sim/des/faults.cpp); schedules go to ScheduleExporter (sim/des/schedules.cpp).
#include "sim/des/engine.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <queue>

#include "model/core.hpp"
#include "model/driver.hpp"
#include "model/invariants.hpp"
#include "sim/check/trail.hpp"
#include "sim/des/faults.hpp"
#include "sim/des/reuse_sources.hpp"
#include "sim/des/schedules.hpp"
#include "sim/des/steps_run.hpp"
#include "sim/workload/sessions.hpp"

namespace kvcheck::sim {

namespace {

using model::Phase;
using model::Step;
using model::StepKind;

enum class EventKind : std::uint8_t { arrival, step, io_done, fault, turn, fork, load_wait_over };

struct Event {
    std::uint64_t time;
    std::uint64_t seq;
    EventKind kind;
    // What the event is about, by kind: the request slot (step, fork, load_wait_over), the I/O
    // operation (io_done), the fault entry (fault) or the session turn (turn); arrival: none.
    std::uint32_t target;
    std::uint32_t step_kind;  // step: the model::StepKind the request takes

    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

// Per request slot: what the simulator knows beyond the model.
struct Tracking {
    std::uint32_t uid = 0;
    std::uint32_t turn = 0;  // with sessions: its index in the trace
    bool sibling = false;    // with parallel sampling: forked for an answer after the first
    std::uint64_t arrival_ns = 0;
    std::uint64_t io_wait_start_ns = 0;
    std::uint64_t prefill_start_ns = 0;
    std::uint32_t hash_hit_len = 0;
    bool looked_up = false;
    bool stale = false;
    bool loaded = false;  // a load for it completed (its read may take tokens from host or disk)
    // For its timeline slice: the first lookup's verdict and the miss that cut most from it (kept
    // raw and worded only when the slice is written, off the lookup path), or the invariant its read
    // broke when it was silently corrupted.
    model::VerdictKind verdict{};
    std::optional<model::Miss> top_miss;
    std::string corruption;
};

class Engine {
public:
    Engine(const Scenario& s, const RunOptions& o)
        : s_(s), policy_(o.policy.empty() ? s.policy : o.policy), seed_(o.seed_given ? o.seed : s.seed), options_(o),
          world_(std::make_shared<model::ModelConfig>(s.model), model::find_policy(policy_)->defenses, limits(s),
                 s.rollout),
          rng_(seed_), io_rng_(rng_.fork(1)), tier_rng_(hash_combine(seed_, 0x74696572)),
          faults_(s, rng_.fork(2), world_), timeline_(s.timeline_requests), driver_(s.structural_checks) {
        TraceOptions t = s.trace;
        t.seed = seed_;
        arrivals_ = std::make_unique<ArrivalStream>(s.trace_path, t, s.requests);
        if (!o.schedules_dir.empty())
            exporter_ = std::make_unique<ScheduleExporter>(o.schedules_dir, s, policy_, seed_);
        if (s.sessions.enabled) sessions_ = std::make_unique<SessionBook>(s.sessions);
    }

    RunResult run() {
        pull_next_arrival();
        faults_.schedule_timed(
            [&](std::uint64_t at, std::uint32_t index) { schedule(at, EventKind::fault, index, 0); });
        while (!queue_.empty()) {
            if (metrics_.events >= s_.max_events) {
                metrics_.event_bound_hit = true;
                break;
            }
            const Event e = queue_.top();
            queue_.pop();
            now_ = e.time;
            ++metrics_.events;
            for (std::uint32_t index : faults_.due_by_event(metrics_.events))
                offer_faults(FaultInjector::scheduled(index));
            switch (e.kind) {
                case EventKind::arrival: arrive(); break;
                case EventKind::step: {
                    const auto kind = static_cast<StepKind>(e.step_kind);
                    // Decode runs the whole output as one step: its blocks, slides and recaptures.
                    request_step(e.target, kind,
                                 kind == StepKind::decode ? world_.requests[e.target].spec->output_tokens : 0);
                    break;
                }
                case EventKind::io_done: io_done(e.target); break;
                case EventKind::fault: offer_faults(FaultInjector::scheduled(e.target)); break;
                case EventKind::turn: start(sessions_->take(e.target), e.target); break;
                case EventKind::fork: fork_samples(e.target); break;
                case EventKind::load_wait_over:
                    // Only for the wait it was set for: a later wait of the slot started later.
                    if (world_.requests[e.target].phase == Phase::waiting_io &&
                        now_ - tracking_[e.target].io_wait_start_ns >= *s_.max_load_wait_us * 1000)
                        request_step(e.target, StepKind::stop_waiting);
                    break;
            }
            if (options_.progress && (metrics_.events & 0xFFFF) == 0) options_.progress(finished_, metrics_.events);
        }
        // The O(state) structural invariants once more at the end, whatever the run's check level.
        model::Driver final_check(true);
        count(final_check.check(world_, model::StepOutcome{}));
        metrics_.sim_time_ns = now_;
        metrics_.resume_grain_tokens = world_.grain_tokens;
        metrics_.unfired_faults = faults_.unfired();
        metrics_.trace_id_count_warning = arrivals_->id_count_warning();
        metrics_.timeline_untracked_requests = timeline_.untracked_requests();
        RunResult result;
        result.info = {s_.name, s_.preset, policy_, seed_, model::state_hash(world_), rng_.next(), override_texts(s_)};
        timeline_.set_run_id(run_id(result.info));
        if (sessions_) metrics_.sessions = SessionCounts{sessions_->turns(), sessions_->waited()};
        if (s_.samples > 1) metrics_.samples_forked = forked_;
        result.metrics = std::move(metrics_);
        result.timeline = std::move(timeline_);
        if (exporter_) {
            exporter_->finish();
            result.schedules_written = exporter_->written();
        }
        return result;
    }

private:
    static model::Limits limits(const Scenario& s) {
        model::Limits l;
        l.gpu_budget_bytes = s.gpu_budget_bytes;
        l.disk_capacity_bytes = s.host.capacity_bytes + s.disk.capacity_bytes;
        l.host_capacity_bytes = s.host.capacity_bytes;
        l.capture_graphs = s.capture_graphs;
        l.extent_tokens = s.extent_tokens;
        l.tier_eviction = s.tier_eviction;
        return l;
    }

    void schedule(std::uint64_t at, EventKind kind, std::uint32_t target, std::uint32_t step_kind) {
        queue_.push({at, seq_++, kind, target, step_kind});
    }

    // Streams the next request from the trace and the explicit list, whichever comes first.
    void pull_next_arrival() {
        if (arrivals_->next(next_)) schedule(next_.arrival_ns, EventKind::arrival, 0, 0);
    }

    void arrive() {
        if (!sessions_) return start(next_, 0, true);
        const std::optional<SessionBook::Due> due = sessions_->due(next_, now_);
        KV_ASSERT(!due || due->turn <= UINT32_MAX, "trace index beyond 32 bits");
        if (due && due->at_ns == now_) return start(next_, static_cast<std::uint32_t>(due->turn), true);
        // Held: until the turn it continues finishes (released by finish) or until its think time is over.
        if (due) schedule(due->at_ns, EventKind::turn, static_cast<std::uint32_t>(due->turn), 0);
        pull_next_arrival();
    }

    // A request arrives: `record` is next_ for one from the stream (which is pulled on once the
    // spec is made), a held session turn's record otherwise.
    void start(const TraceRecord& record, std::uint32_t turn, bool from_stream = false) {
        const std::uint32_t uid = static_cast<std::uint32_t>(metrics_.requests++);
        auto spec = sessions_
                        ? sessions_->spec(turn, uid, record)
                        : std::make_shared<model::RequestSpec>(model::make_request_spec(
                              uid, record.block_ids, record.block_tokens, record.input_tokens, record.output_tokens));
        admit(std::move(spec), Tracking{uid, turn, false, now_, 0, 0, 0, false, false, false, {}, {}, {}}, from_stream);
    }

    void admit(std::shared_ptr<const model::RequestSpec> spec, const Tracking& tracking, bool from_stream) {
        if (exporter_) exporter_->remember(spec);
        const std::uint32_t r = world_.add_request(std::move(spec));
        if (tracking_.size() <= r) tracking_.resize(r + 1);
        tracking_[r] = tracking;
        if (from_stream) pull_next_arrival();
        offer_faults(FaultInjector::before_lookup(r));
        request_step(r, StepKind::lookup);
    }

    // Parallel sampling: once the first answer's request (in slot r) has its prompt's KV, each
    // further answer is a request of its own with the same prompt, which it resumes, and an
    // answer of its own. Admitting them may move world_.requests, so nothing of slot r is held.
    void fork_samples(std::uint32_t r) {
        const std::shared_ptr<const model::RequestSpec> first = world_.requests[r].spec;
        const std::uint32_t turn = tracking_[r].turn;
        for (std::uint32_t sample = 1; sample < s_.samples; ++sample) {
            const std::uint32_t uid = static_cast<std::uint32_t>(metrics_.requests++);
            ++forked_;
            admit(std::make_shared<model::RequestSpec>(model::sample_of(*first, uid, sample)),
                  Tracking{uid, turn, true, now_, 0, 0, 0, false, false, false, {}, {}, {}}, false);
        }
    }

    bool inject(const Step& step, model::FaultClass fault) {
        if (!model::enabled(world_, step)) return false;
        // Described before it applies; only the timeline (until its cap) and the exporter read it.
        const std::string what =
            exporter_ || timeline_.takes_instants() ? model::describe(world_, step) : std::string();
        driver_.apply(world_, step, fault_outcome_);
        after(fault_outcome_);
        ++metrics_.faults[static_cast<std::size_t>(fault)];
        timeline_.instant(std::string(model::fault_name(fault)) + " " + std::string(model::fault_summary(fault)), now_,
                          what);
        if (exporter_) exporter_->note_fault(world_, step, fault, what, steps_);
        return true;
    }

    // Each firing at the opportunity proposes its steps; the first the model enables applies.
    void offer_faults(FaultInjector::Opportunity at) {
        while (faults_.propose(at, proposal_))
            for (const Step& step : proposal_.steps)
                if (inject(step, proposal_.fault)) {
                    faults_.acted(proposal_, step);
                    break;
                }
    }

    // One request step, then what the simulator does beyond the model (figures, faults aimed at
    // this request, offloads, spans); the next step is the model's (model::next_request_step),
    // scheduled after the time it takes.
    void request_step(std::uint32_t r, StepKind kind, std::uint32_t arg = 0) {
        const Step step{kind, r, arg};
        KV_ASSERT(model::enabled(world_, step), "engine scheduled a disabled step: " + model::describe(world_, step));
        model::Request& q = world_.requests[r];
        Tracking& t = tracking_[r];
        driver_.apply(world_, step, request_outcome_);
        const model::StepOutcome& out = request_outcome_;
        after(out);
        switch (kind) {
            case StepKind::lookup:
                if (out.lookup && !t.looked_up)
                    first_lookup(r, *out.lookup);
                else if (out.lookup)
                    metrics_.count_misses(*out.lookup);  // after loads or a stale revalidation
                if (q.phase == Phase::waiting_io) {
                    t.io_wait_start_ns = now_;
                    if (s_.max_load_wait_us)
                        schedule(now_ + *s_.max_load_wait_us * 1000, EventKind::load_wait_over, r, 0);
                } else if (q.phase != Phase::arrived) {
                    offer_faults(FaultInjector::after_lookup(r));
                }
                break;
            case StepKind::stop_waiting:
                ++metrics_.load_waits_stopped;
                end_io_wait(r, "stopped waiting");
                break;
            case StepKind::revalidate:
                if (out.stale_revalidation) {
                    ++metrics_.stale_revalidations;
                    ++metrics_.miss_reasons["any"]["stale_epoch"];
                    t.stale = true;
                }
                break;
            case StepKind::allocate: maybe_offload(); break;
            case StepKind::read:
                account_read(r);
                t.prefill_start_ns = now_;
                break;
            case StepKind::commit:
                metrics_.ttft.add(static_cast<double>(now_ - t.arrival_ns) / 1e6);
                timeline_.span(t.uid, "prefill", t.prefill_start_ns, now_,
                               std::to_string(q.spec->input_tokens - q.resume_len) + " tokens computed");
                maybe_offload();
                // Before its decode or finish, so the slot still holds it when the fork comes.
                if (s_.samples > 1 && q.spec->sample == 0) schedule(now_, EventKind::fork, r, 0);
                break;
            case StepKind::decode:
                // The slide let go of the blocks the window passed; the graph captured over them
                // lives until finish.
                offer_faults(FaultInjector::after_decode(r));
                break;
            case StepKind::finish:
                end_request(r, std::to_string(q.spec->input_tokens) + " in, " + std::to_string(q.spec->output_tokens) +
                                   " out");
                break;
            case StepKind::abort:
                ++metrics_.requests_failed;
                end_request(r, "failed: a load failed");
                break;
            case StepKind::pin: break;
            default: KV_UNREACHABLE("not a request step");
        }
        schedule_next(r);
    }

    // The request's next step, when the model has one, after the time it takes to get there:
    // the TOCTOU window before the pin, the prefill before the commit, the decode of the whole
    // output; every other step follows at once.
    void schedule_next(std::uint32_t r) {
        const model::Request& q = world_.requests[r];
        const std::optional<StepKind> next = model::next_request_step(q);
        if (!next) return;
        std::uint64_t delay_ns = 0;
        if (*next == StepKind::pin) {
            delay_ns = s_.validate_gap_us * 1000;
        } else if (*next == StepKind::commit) {
            const double tokens = q.spec->input_tokens - q.resume_len;
            delay_ns = static_cast<std::uint64_t>(tokens / s_.prefill_tokens_per_s * 1e9);
        } else if (*next == StepKind::decode) {
            delay_ns = static_cast<std::uint64_t>(q.spec->output_tokens * s_.decode_ms_per_token * 1e6);
        }
        schedule(now_ + delay_ns, EventKind::step, r, static_cast<std::uint32_t>(*next));
    }

    // A request has ended (finished, or failed by the load-failure policy): its slot is free, and
    // a session's next turn may start.
    void end_request(std::uint32_t r, const std::string& detail) {
        const Tracking& t = tracking_[r];
        const bool drawn = timeline_.tracks(t.uid);
        timeline_.span(t.uid, "request", t.arrival_ns, now_, detail, drawn ? verdict_text(t) : std::string(),
                       drawn ? reason_text(t) : std::string());
        world_.release_request(r);
        ++finished_;
        if (sessions_ && !t.sibling)
            for (const SessionBook::Due& d : sessions_->finished(t.turn, now_))
                schedule(d.at_ns, EventKind::turn, static_cast<std::uint32_t>(d.turn), 0);
    }

    static std::string verdict_text(const Tracking& t) {
        return t.looked_up ? std::string(model::verdict_name(t.verdict)) : std::string();
    }

    static std::string reason_text(const Tracking& t) {
        if (!t.corruption.empty()) return t.corruption;
        if (!t.looked_up) return {};
        if (t.top_miss)
            return std::string(model::form_name(t.top_miss->form)) + "." +
                   std::string(model::miss_reason_name(t.top_miss->reason)) + " cut " +
                   std::to_string(t.top_miss->tokens) + " tokens";
        return t.hash_hit_len == 0 ? "no cached prefix"
                                   : "hit of " + std::to_string(t.hash_hit_len) + " tokens, nothing cut";
    }

    void first_lookup(std::uint32_t r, const model::LookupResult& res) {
        Tracking& t = tracking_[r];
        t.looked_up = true;
        t.hash_hit_len = res.hash_hit_len;
        if (timeline_.tracks(t.uid)) {
            t.verdict = res.verdict;
            const auto top =
                std::max_element(res.misses.begin(), res.misses.end(),
                                 [](const model::Miss& a, const model::Miss& b) { return a.tokens < b.tokens; });
            if (top != res.misses.end()) t.top_miss = *top;
        }
        metrics_.count_lookup(res, world_.requests[r].spec->input_tokens);
    }

    void account_read(std::uint32_t r) {
        const model::Request& q = world_.requests[r];
        Tracking& t = tracking_[r];
        metrics_.reused_tokens += q.resume_len;
        metrics_.computed_tokens += q.spec->input_tokens - q.resume_len;
        metrics_.count_reuse(q.resume_len, q.spec->input_tokens);
        if (t.hash_hit_len > q.resume_len) {
            metrics_.recomputed_tokens += t.hash_hit_len - q.resume_len;
            // The plain hash-hit rule resumes the hit as it stands; any other stops on the grain.
            if (!world_.defenses.hash_hit_is_enough)
                metrics_.trimmed_tokens +=
                    std::min(t.hash_hit_len % world_.grain_tokens, t.hash_hit_len - q.resume_len);
        }
        sources_.count_read(q, t.uid, t.loaded, metrics_.reused_by_source);
        const std::uint32_t grain = world_.derived.lcm_tokens;
        // A hit falls back when it resumes less than its grain-rounded length, nothing at all (a
        // hit shorter than the grain promised tokens it could not resume), or went stale.
        if (t.hash_hit_len > 0 && (q.resume_len < t.hash_hit_len / grain * grain || q.resume_len == 0 || t.stale))
            ++metrics_.post_hit_fallbacks;
        if (exporter_ && q.resume_len > 0) exporter_->export_read(world_, r, driver_.facts(), driver_.violations());
    }

    void io_done(std::uint32_t op_id) {
        const model::IoOp op = world_.io[op_id];
        if (!op.live) return;
        // A hung transfer (F2 timeout) fails now, at its timeout; any other draws its outcome.
        const bool hung = op_id < hung_.size() && hung_[op_id] != 0;
        if (hung) hung_[op_id] = 0;
        StepKind kind = hung ? StepKind::io_fail : faults_.io_outcome(op);
        // A tier's own failures, from a stream of their own (runs without them draw nothing).
        if (tier_failures_ && !hung && kind == StepKind::io_complete && op_id < io_tier_.size()) {
            const TierConfig& tier = io_tier_[op_id] == 0 ? s_.host : s_.disk;
            if (tier.failure_ppm > 0 && tier_rng_.chance_ppm(tier.failure_ppm)) kind = StepKind::io_fail;
        }
        const bool f2 = kind == StepKind::io_fail || kind == StepKind::partial_load;
        const model::FaultClass fault = f2 ? model::FaultClass::F2 : model::FaultClass::F9;
        std::string what;
        if (kind != StepKind::io_complete) {
            ++metrics_.faults[static_cast<std::size_t>(fault)];
            if (exporter_ || timeline_.takes_instants()) what = model::describe(world_, {kind, op_id, 0});
            timeline_.instant(hung ? "F2 timeout"
                              : kind == StepKind::io_fail
                                  ? (op.kind == model::IoKind::load ? "F2 load failure" : "F2 offload failure")
                              : kind == StepKind::partial_load ? "F2 partial load"
                                                               : "F9 misaligned reload",
                              now_, what);
        }
        KV_ASSERT(model::enabled(world_, {kind, op_id, 0}), "the I/O engine picked a disabled outcome");
        driver_.apply(world_, {kind, op_id, 0}, io_outcome_);
        // A load failed when its segment is back on disk: an error, or a partial load that the
        // length check caught.
        const bool loaded =
            op.kind == model::IoKind::load && world_.segments[op.segment].stage != model::Stage::on_disk;
        if (op.kind == model::IoKind::load) (loaded ? metrics_.loads : metrics_.load_failures) += 1;
        if (loaded && op.request != model::kNone) {
            sources_.loaded(op.segment, tracking_[op.request].uid, world_.segments[op.segment].epoch, io_tier_[op_id]);
            tracking_[op.request].loaded = true;
        }
        after(io_outcome_);
        if (exporter_ && kind != StepKind::io_complete)
            exporter_->note_fault(world_, {kind, op_id, 0}, fault, what, steps_);
        if (exporter_ && loaded) exporter_->note_loaded(op.segment, world_.segments[op.segment].epoch);
        if (exporter_ && loaded && kind == StepKind::partial_load)
            exporter_->note_torn(op.segment, world_.segments[op.segment].epoch);
        // The `fail` load-failure policy ends the request at its first failed load.
        if (op.kind == model::IoKind::load && op.request != model::kNone && !loaded && s_.fail_on_load_failure) {
            end_io_wait(op.request, "a load failed");
            request_step(op.request, StepKind::abort);
        } else if (op.kind == model::IoKind::load && op.request != model::kNone &&
                   world_.requests[op.request].phase == Phase::io_done) {
            end_io_wait(op.request, "");
            schedule_next(op.request);
        }
    }

    void end_io_wait(std::uint32_t r, const char* note) {
        const Tracking& t = tracking_[r];
        metrics_.io_wait.add(static_cast<double>(now_ - t.io_wait_start_ns) / 1e6);
        metrics_.io_wait_us_total += (now_ - t.io_wait_start_ns) / 1000;
        timeline_.span(t.uid, "io_wait", t.io_wait_start_ns, now_, note);
    }

    // Spills the coldest segments to host/disk while the GPU is above the watermark.
    void maybe_offload() {
        if (!s_.offload) return;
        const auto target = static_cast<std::uint64_t>(s_.offload_watermark * static_cast<double>(s_.gpu_budget_bytes));
        std::uint64_t used = world_.gpu_used_bytes;
        for (model::OffloadWalk walk(world_); walk.current() != model::kNone && used > target; walk.advance()) {
            const Step st{StepKind::offload, walk.current(), 0};
            if (!model::enabled(world_, st)) continue;
            const std::uint64_t bytes = world_.bytes_of(world_.segments[st.target]);
            driver_.apply(world_, st, offload_outcome_);
            after(offload_outcome_);
            used = used > bytes ? used - bytes : 0;
        }
    }

    // Whether the transfer `op_id` moves a copy that rests in host memory (else on disk): an
    // offload writes where its new copy was placed, a load reads where its copy rests now.
    bool on_host(std::uint32_t op_id) const { return world_.copy_on_host(world_.segments[world_.io[op_id].segment]); }

    // When the transfer `op_id`, starting now on tier `t` (0 host, 1 disk), ends. A tier moves one
    // transfer's bytes at a time in each direction, at its bandwidth, first come first served;
    // latency, jitter and F4's delay are the transfer's own and do not hold the link.
    std::uint64_t io_delay_ns(std::uint32_t op_id, std::uint8_t t) {
        const TierConfig& tier = t == 0 ? s_.host : s_.disk;
        const model::IoOp& op = world_.io[op_id];
        // F2 timeout: the transfer hangs, and the I/O engine gives up on it after the timeout.
        if (const std::uint64_t timeout = faults_.timeout_io_ns(op); timeout > 0) {
            if (hung_.size() <= op_id) hung_.resize(op_id + 1);
            hung_[op_id] = 1;
            return timeout;
        }
        const model::Segment& seg = world_.segments[op.segment];
        const double bytes = static_cast<double>(world_.bytes_of(seg));
        std::uint64_t& link_free = link_free_ns_[t][op.kind == model::IoKind::load ? 1 : 0];
        link_free = std::max(link_free, now_) + static_cast<std::uint64_t>(bytes / tier.bandwidth_gb_per_s);
        std::uint64_t ns = link_free - now_ + tier.latency_us * 1000;
        if (tier.jitter_us > 0) ns += io_rng_.below(tier.jitter_us * 1000 + 1);
        const std::uint64_t late = faults_.late_io_ns(op);
        if (late > 0) {
            ++metrics_.faults[static_cast<std::size_t>(model::FaultClass::F4)];
            timeline_.instant("F4 late I/O", now_,
                              timeline_.takes_instants() ? model::describe(world_, {StepKind::io_complete, op_id, 0})
                                                         : std::string());
        }
        return ns + late;
    }

    // Bookkeeping after any step: invariants, I/O completions to schedule, evictions, memory.
    void after(const model::StepOutcome& out) {
        ++steps_;
        count(driver_.check(world_, out));
        ages_.after_step(world_, out, now_, metrics_.ages);
        if (out.read_request != model::kNone) {
            judge_read(out.read_request);
            ages_.read(world_, out.read_request, now_, metrics_.ages);
        }
        for (std::uint32_t op : out.io_started) {
            if (world_.io[op].kind == model::IoKind::offload) ++metrics_.offloads;
            const std::uint8_t tier = on_host(op) ? 0 : 1;
            if (tier_failures_ || world_.io[op].kind == model::IoKind::load) {
                if (io_tier_.size() <= op) io_tier_.resize(op + 1);
                io_tier_[op] = tier;
            }
            schedule(now_ + io_delay_ns(op, tier), EventKind::io_done, op, 0);
        }
        metrics_.count_outcome(out);
        metrics_.sample_memory(world_);
        timeline_.memory(now_, world_);
        sample_series();
    }

    void sample_series() {
        if (!metrics_.series.due(now_)) return;
        SeriesPoint p;
        p.t_s = static_cast<double>(now_) / 1e9;
        p.lookups = metrics_.lookups;
        p.hits = metrics_.hits;
        p.post_hit_fallbacks = metrics_.post_hit_fallbacks;
        p.silent_corruptions = metrics_.silent_corruptions;
        p.io_wait_us = metrics_.io_wait_us_total;
        p.gpu_bytes = world_.bytes_by_form;
        p.state_table_bytes = std::uint64_t{world_.live_segments} * model::kStateEntryBytes;
        metrics_.series.offer(now_, p);
    }

    void count(const std::vector<model::Violation>& found) {
        for (const model::Violation& v : found) {
            if (metrics_.invariant_violations[v.invariant]++ == 0) {
                metrics_.first_violation[v.invariant] = v.message;
                timeline_.instant("violation " + v.invariant, now_, v.message, false);
            }
        }
    }

    // A resume whose reads break an output-level invariant is a silent corruption; explain it.
    void judge_read(std::uint32_t r) {
        const std::vector<model::Violation>& found = driver_.violations();
        const auto bad = std::find_if(found.begin(), found.end(),
                                      [](const model::Violation& v) { return model::corrupts_output(v.invariant); });
        if (bad == found.end()) return;
        ++metrics_.silent_corruptions;
        if (timeline_.tracks(tracking_[r].uid))
            tracking_[r].corruption = "silent corruption: " + bad->invariant + " (" + bad->message.substr(0, 160) + ")";
        if (metrics_.corruption_examples.size() >= 20) return;
        Corruption c;
        c.request = tracking_[r].uid;
        c.invariant = bad->invariant;
        c.cause = bad->message;
        const auto place = [&](const model::PlanEntry& e, std::string cause) {
            c.form = std::string(model::form_name(e.form));
            c.group = world_.group(e.group).name;
            c.start = e.start;
            c.end = e.end;
            c.cause = std::move(cause);
        };
        // The entry whose content is wrong (OR1 names it), else the entry or range the violation names.
        const std::vector<model::ReadFact>& facts = driver_.facts();
        const auto wrong =
            std::find_if(facts.begin(), facts.end(), [](const model::ReadFact& f) { return f.expected != f.actual; });
        if (wrong != facts.end()) {
            c.invariant = "OR1_ground_truth";
            place(wrong->entry, model::mismatch_cause(*wrong));
        } else if (bad->entry)
            place(*bad->entry, bad->detail);
        else if (!bad->detail.empty())
            c.cause = bad->detail;
        metrics_.corruption_examples.push_back(std::move(c));
    }

    const Scenario& s_;
    std::string policy_;
    std::uint64_t seed_;
    RunOptions options_;
    model::World world_;
    Rng rng_;
    Rng io_rng_;
    Rng tier_rng_;
    const bool tier_failures_ = s_.host.failure_ppm > 0 || s_.disk.failure_ppm > 0;
    std::vector<std::uint8_t> io_tier_;  // the tier each load (with tier failures, each I/O op) runs on: 0 host, 1 disk
    ReuseSources sources_;
    std::vector<std::uint8_t> hung_;  // F2 timeout: the I/O ops that hang until their timeout (1)
    // When each tier's link is next free, by tier (0 host, 1 disk) and direction (0 to it, 1 from it).
    std::array<std::array<std::uint64_t, 2>, 2> link_free_ns_{};
    FaultInjector faults_;
    Proposal proposal_;  // the fault firing being offered, its steps' buffer kept
    Timeline timeline_;
    Metrics metrics_;
    EntryAges ages_;
    std::unique_ptr<ArrivalStream> arrivals_;
    TraceRecord next_;
    std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
    std::uint64_t seq_ = 0;
    std::uint64_t now_ = 0;
    std::uint64_t finished_ = 0;
    std::uint64_t forked_ = 0;  // parallel sampling: requests forked for further answers
    std::vector<Tracking> tracking_;
    // Applies every step and checks the invariants after it; keeps the last read's facts and
    // violations for the oracle's report and the exporter.
    model::Driver driver_;
    std::unique_ptr<ScheduleExporter> exporter_;
    std::unique_ptr<SessionBook> sessions_;  // with sessions: turns found in the trace, held turns
    std::uint64_t steps_ = 0;                // model steps applied so far; schedules name faults by it
    // One outcome per kind of caller, reused step after step (a request step may start offloads
    // and faults while its own outcome is still read).
    model::StepOutcome request_outcome_;
    model::StepOutcome fault_outcome_;
    model::StepOutcome io_outcome_;
    model::StepOutcome offload_outcome_;
};

}  // namespace

RunResult run_scenario(const Scenario& scenario, const RunOptions& options) {
    if (scenario.steps_mode) return run_steps(scenario, options);
    Engine engine(scenario, options);
    return engine.run();
}

}  // namespace kvcheck::sim
