#include "lock_rule.hpp"

#include <zkr/error.hpp>

#include "../../src/parse_number.hpp"  // the client layer's one parse

#include <boost/container/small_vector.hpp>

#include <algorithm>
#include <tuple>
#include <cstdio>

namespace zkr {

namespace {
constexpr std::size_t sequence_digits = 10;
}  // namespace

lock_queue lowest_n_rule::queue(std::vector<std::string> children) const {
    return queue_of(std::move(children), kind_->node_names, also_ == foreign::kazoo ? kazoo_lock_name : std::string_view());
}

namespace {
bool contains(const std::vector<std::string>& names, std::string_view node) {
    return std::find(names.begin(), names.end(), node) != names.end();
}
}  // namespace

bool decision_context::holds(std::string_view node) const { return contains(held_by_us, node); }

bool decision_context::marked(std::string_view node) const { return contains(marked_ahead, node); }

lock_decision lowest_n_rule::do_decide(const std::vector<std::string>& sorted, std::size_t ours, const decision_context&) const {
    // Every node weighs one (room inside for a queue of 16: a lock cycle allocates no weights).
    const boost::container::small_vector<std::uint64_t, 16> weights(sorted.size(), 1);
    return detail::prefix_decision(sorted, ours, std::span<const std::uint64_t>(weights.data(), weights.size()), n_);
}

std::size_t lowest_n_rule::holders(const std::vector<std::string>& sorted) const { return std::min(n_, sorted.size()); }

std::optional<lease_node_info> parse_lease_node(std::string_view name) {
    if (!lock_sequence(name, semaphore_lock_name)) return std::nullopt;
    // What precedes "lease-<seq>": "...-m<max>-w<weight>-" or anything else.
    std::string_view head = name.substr(0, name.size() - sequence_digits - semaphore_lock_name.size());
    lease_node_info info;
    if (head.size() < 2 || head.back() != '-') return info;
    head.remove_suffix(1);
    const auto w_start = head.rfind('-') == std::string_view::npos ? 0 : head.rfind('-') + 1;
    const std::string_view w_part = head.substr(w_start);
    if (w_part.size() < 2 || w_part[0] != 'w') return info;
    const auto weight = detail::parse_number<std::uint32_t>(w_part.substr(1));
    if (!weight || *weight == 0) return info;
    if (w_start < 2) return info;  // sim-one-way: lease-name-guard
    std::string_view m_head = head.substr(0, w_start - 1);
    const auto m_start = m_head.rfind('-') == std::string_view::npos ? 0 : m_head.rfind('-') + 1;
    const std::string_view m_part = m_head.substr(m_start);
    if (m_part.size() < 2 || m_part[0] != 'm') return info;  // sim-one-way: lease-name-guard
    info.weight = *weight;
    info.max_tag = std::string(m_part);
    return info;
}

std::string lease_node_name(std::string_view max_tag, std::uint32_t weight) {
    return std::string(max_tag) + "-w" + std::to_string(weight) + "-" + std::string(semaphore_lock_name);
}

std::string fixed_max_tag(std::uint32_t max) {
    std::string tag = "m";  // not "m" + to_string(): GCC 12 warns falsely (-Wrestrict) on that at -O3
    tag += std::to_string(max);
    return tag;
}

std::string shared_count_max_tag(std::string_view count_path) {
    std::uint32_t h = 2166136261u;  // FNV-1a
    for (const unsigned char ch : count_path) h = (h ^ ch) * 16777619u;
    char buf[16];
    std::snprintf(buf, sizeof buf, "mc%08x", h);
    return buf;
}

bool is_shared_count_tag(std::string_view max_tag) { return max_tag.rfind("mc", 0) == 0; }

std::optional<std::uint32_t> max_of_tag(std::string_view max_tag) {
    if (max_tag.size() < 2 || max_tag[0] != 'm' || is_shared_count_tag(max_tag)) return std::nullopt;
    return detail::parse_number<std::uint32_t>(max_tag.substr(1));
}

lease_rule::lease_rule(std::function<std::int64_t()> max_leases, std::string max_tag)
    : max_(std::move(max_leases)), tag_(std::move(max_tag)) {}

std::string lease_rule::node_name() const { return lease_node_name(tag_, 1); }

lock_queue lease_rule::queue(std::vector<std::string> children) const { return queue_of(std::move(children), {semaphore_lock_name}); }

namespace {
// What each lease node says in its name (each parsed once per decision).
std::vector<lease_node_info> lease_infos(const std::vector<std::string>& sorted) {
    std::vector<lease_node_info> infos;
    infos.reserve(sorted.size());
    for (const auto& name : sorted) infos.push_back(parse_lease_node(name).value_or(lease_node_info{}));
    return infos;
}
std::vector<std::uint64_t> weights_of(const std::vector<lease_node_info>& infos) {
    std::vector<std::uint64_t> weights;
    weights.reserve(infos.size());
    for (const auto& info : infos) weights.push_back(info.weight);
    return weights;
}
std::uint64_t at_least_zero(std::int64_t max) { return max < 0 ? 0 : static_cast<std::uint64_t>(max); }
}  // namespace

lock_decision lease_rule::do_decide(const std::vector<std::string>& sorted, std::size_t ours,
                                    const decision_context& context) const {
    const auto infos = lease_infos(sorted);
    for (std::size_t i = 0; i <= ours && i < infos.size(); ++i) {
        if (infos[i].max_tag != tag_) {
            lock_decision refused;
            refused.error = make_error_code(errc::max_mismatch);
            return refused;
        }
    }
    auto d = detail::prefix_decision(sorted, ours, weights_of(infos), at_least_zero(max_()));
    if (!grants_marked() || ours == 0) return d;
    // Within the limit, but the node ahead may not hold yet: it may decide later, under a smaller
    // limit, and would not count us. Hold once it has marked its grant (then every node ahead of
    // it holds too: it held only behind marked nodes).
    const auto& ahead = sorted[ours - 1];
    if (d.holds && !context.marked(ahead)) {
        d.holds = false;
        d.watch = {ahead};
        d.await_grant = true;
        d.awaits_mark = true;
    } else if (d.await_grant && context.marked(ahead)) {
        // The node ahead holds beyond the limit (granted before it shrank): we are the first
        // waiter, and any release ahead may be our turn.
        d.watch.assign(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(ours));
        d.await_grant = false;
    }
    return d;
}

bool lease_rule::grants_marked() const { return is_shared_count_tag(tag_); }

bool lease_rule::grants_awaited() const { return max_of_tag(tag_) != 1u; }

std::size_t lease_rule::holders(const std::vector<std::string>& sorted) const {
    return detail::holder_count(weights_of(lease_infos(sorted)), sorted.size(), at_least_zero(max_()));
}

lock_queue curator_lease_rule::queue(std::vector<std::string> children) const {
    return queue_of(std::move(children), {semaphore_lock_name});
}

std::size_t curator_lease_rule::max() const { return static_cast<std::size_t>(at_least_zero(max_())); }

lock_decision curator_lease_rule::do_decide(const std::vector<std::string>& sorted, std::size_t ours, const decision_context&) const {
    lock_decision d;
    if (ours < max()) {
        d.holds = true;
        return d;
    }
    d.watch.assign(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(ours));
    return d;
}

std::size_t curator_lease_rule::holders(const std::vector<std::string>& sorted) const { return std::min(max(), sorted.size()); }

lock_queue queue_of(std::vector<std::string> children, std::span<const std::string_view> names,
                    std::string_view unprotected) {
    lock_queue q;
    // Sequence, name's rank, the node's index in children: sorted, then the names moved into
    // queue order. Room inside for a short queue: a listing moved in allocates nothing more.
    boost::container::small_vector<std::tuple<std::uint32_t, std::size_t, std::size_t>, 16> keyed;
    keyed.reserve(children.size());
    // Every participant is created protected ("_c_<uuid>-", as Curator's are too). A sequential
    // node without that prefix was dropped in by something else; counted, it would hold forever.
    for (std::size_t index = 0; index < children.size(); ++index) {
        const auto& c = children[index];
        // Another kind may be marked by a folder (a semaphore in Curator's layout keeps its leases in one).
        if (!q.other_kind && kind_of_folder(c)) q.other_kind = c;
        if (c.rfind("_c_", 0) != 0) {
            // Kazoo's Lock names its nodes without the prefix: they take part only when asked for.
            if (const auto seq = unprotected.empty() ? std::nullopt : lock_sequence(c, unprotected))  // sim-one-way: kazoo-nodes
                keyed.emplace_back(*seq, names.size(), index);                                      // sim-unreachable: kazoo-nodes
            continue;
        }
        std::optional<std::uint32_t> seq;
        std::size_t rank = 0;
        for (const auto name : names) {
            if ((seq = lock_sequence(c, name))) break;
            ++rank;
        }
        if (seq) keyed.emplace_back(*seq, rank, index);
        else if (!q.other_kind && kind_of_node(c)) q.other_kind = c;
    }
    // (At one sequence and rank, by name, as before: the order never depends on the listing's.)
    std::sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        return std::tie(std::get<0>(a), std::get<1>(a), children[std::get<2>(a)]) <
               std::tie(std::get<0>(b), std::get<1>(b), children[std::get<2>(b)]);
    });
    // The listing's own vector and strings become the queue: each name moved out in order, then
    // back in, over the names that take no part.
    boost::container::small_vector<std::string, 16> ordered;
    ordered.reserve(keyed.size());
    for (const auto& k : keyed) ordered.push_back(std::move(children[std::get<2>(k)]));
    children.clear();
    for (auto& name : ordered) children.push_back(std::move(name));
    q.sorted = std::move(children);
    return q;
}

namespace detail {

std::size_t holder_count(std::span<const std::uint64_t> weights, std::size_t count, std::uint64_t max) {
    std::uint64_t sum = 0;
    std::size_t holders = 0;
    for (; holders < count && sum + weights[holders] <= max; ++holders) sum += weights[holders];
    return holders;
}

lock_decision prefix_decision(const std::vector<std::string>& sorted, std::size_t ours,
                              std::span<const std::uint64_t> weights, std::uint64_t max) {
    const std::size_t holders = holder_count(weights, ours + 1, max);  // ours included
    lock_decision d;
    if (holders > ours) {
        d.holds = true;
        return d;
    }
    if (holders == ours) {
        // The first waiter: any holder's release may be our turn.
        d.watch.assign(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(ours));
        return d;
    }
    // A later waiter: the waiter ahead of us goes first. When it holds we become the first
    // waiter, and must watch every holder: its grant is our event too.
    d.watch.push_back(sorted[ours - 1]);
    d.await_grant = true;
    return d;
}

bool queue_view::reset(std::vector<std::string> sorted, std::string_view ours) {
    const auto it = std::find(sorted.begin(), sorted.end(), ours);
    if (it == sorted.end()) {
        nodes_.clear();
        return false;
    }
    sorted.erase(it + 1, sorted.end());
    nodes_ = std::move(sorted);
    return true;
}

void queue_view::remove(const std::string& name) {
    if (nodes_.empty()) return;
    const auto it = std::find(nodes_.begin(), nodes_.end() - 1, name);
    if (it != nodes_.end() - 1) nodes_.erase(it);
}

lock_decision queue_view::decide(const lock_rule& rule, const decision_context& context) const {
    if (nodes_.empty()) return {};  // sim-one-way: view-guard
    return rule.decide(nodes_, nodes_.size() - 1, context);
}

}  // namespace detail
}  // namespace zkr
