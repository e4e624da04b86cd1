#include "tree_cache_machine.hpp"

#include <fnmatch.h>

#include <zkr/error.hpp>
#include <zkr/path.hpp>

#include <algorithm>
#include <iterator>
#include <utility>

namespace zkr::detail {

std::vector<tree_cache_machine::action> tree_cache_machine::resume(const input& e) {
    std::vector<action> out;
    out_ = &out;
    std::visit([this](const auto& ev) { on(ev); }, e);
    out_ = nullptr;
    return out;
}

std::map<std::string, cached_node> tree_cache_machine::view() const {
    std::map<std::string, cached_node> shown;
    for (const auto& [path, e] : entries_)
        if (e.node) shown.emplace(path, *e.node);
    return shown;
}

// (Once: the engine feeds it once, and the public class starts once.)
void tree_cache_machine::on(const tree_in::start& s) {
    started_ = true;
    session_ = s.session;
    entries_[cfg_.root] = entry{};
    refresh(cfg_.root);
}

// ---- reads ----------------------------------------------------------------------------------
// A read supersedes the one of the same kind before it: only the newest reply and watch count.
zk::ticket tree_cache_machine::ask(const std::string& path, read_kind kind) {
    const auto t = ++last_ticket_;
    asked_[t] = {path, kind};
    if (!initialized_)
        loading_.insert(t);
    return t;
}

void tree_cache_machine::read_data(const std::string& path, entry& e) {
    e.data_read = ask(path, read_kind::data);
    e.data_failed = e.missing = false;
    send(zk::get_data{e.data_read, path, true});
}

void tree_cache_machine::read_children(const std::string& path, entry& e) {
    if (e.depth >= cfg_.max_depth) return;
    e.children_read = ask(path, read_kind::children);
    e.children_failed = false;
    send(zk::get_children{e.children_read, path, true});
}

// The root is missing: an exists watch tells when it is made.
void tree_cache_machine::await_root(entry& e) {
    e.data_read = ask(cfg_.root, read_kind::exists);
    e.children_read = 0;
    e.data_failed = e.children_failed = false;
    e.missing = true;
    send(zk::exists{e.data_read, cfg_.root, true});
}

void tree_cache_machine::refresh(const std::string& path) {
    auto& e = entries_.at(path);
    read_data(path, e);
    read_children(path, e);
}

// A new session: every watch went with the old one. Each node is read again; a node gone
// meanwhile answers no_node and is removed, a node made meanwhile is listed by its parent.
void tree_cache_machine::refresh_all() {
    for (auto& [path, e] : entries_) {  // (reads only: no entry comes or goes here)
        if (e.missing) await_root(e);
        else refresh(path);
    }
}

// The same session: its watches were set again by the client; only the reads that failed are
// sent again (they set no watch).
void tree_cache_machine::retry_failed() {
    for (auto& [path, e] : entries_) {
        if (e.data_failed) {
            if (e.missing) await_root(e);
            else read_data(path, e);
        }
        if (e.children_failed) read_children(path, e);
    }
}

// At most cfg_.window reads in flight: a large tree's first read (or a new session's) keeps the
// window full instead of asking for every node at once. The rest wait in order.
void tree_cache_machine::send(zk::op op) {
    if (in_flight_ < cfg_.window) {
        ++in_flight_;
        // (In place: GCC 14 at -O3 misreads a moved temporary variant as maybe uninitialized.)
        out_->emplace_back(std::in_place_type<zk::op>, std::move(op));
        return;
    }
    backlog_.push_back(std::move(op));
}

void tree_cache_machine::on(const zk::reply& r) {
    --in_flight_;
    while (in_flight_ < cfg_.window && !backlog_.empty()) {
        ++in_flight_;
        out_->emplace_back(std::in_place_type<zk::op>, std::move(backlog_.front()));
        backlog_.pop_front();
    }
    loading_.erase(r.id);
    // A reply's ticket stays asked for until its reply (or its watch's event, which ZooKeeper sends
    // only after the reply): only a guard.
    const auto it = asked_.find(r.id);
    const bool known = it != asked_.end();
    if (!known) return;  // sim-one-way: cache-ticket-guard
    const auto a = it->second;
    const auto en = entries_.find(a.path);
    auto* e = en == entries_.end() ? nullptr : &en->second;
    const bool newest = e && (a.kind == read_kind::children ? e->children_read : e->data_read) == r.id;
    // A read's watch is set when it succeeds (an exists' on a missing node too); it stays asked
    // for until it fires. A stale read's watch is no news: the newest read's tells the same.
    if (!newest || r.ec) asked_.erase(it);
    if (!newest) return check_initialized();
    switch (a.kind) {
        case read_kind::data:
            if (r.ec == errc::no_node) gone(a.path);
            else if (r.ec) e->data_failed = true;
            else apply_data(a.path, *e, r);
            break;
        case read_kind::exists:
            if (r.ec) e->data_failed = true;
            else if (r.stat) refresh(a.path);  // made before the watch was set
            break;
        case read_kind::children:
            if (r.ec == errc::no_node) gone(a.path);
            else if (r.ec) e->children_failed = true;
            else apply_children(a.path, *e, r.stat, r.children);
            break;
    }
    // Failed while connected: no reconnection is coming to send it again (the retry policy gave
    // up after the connection came back, or the server refused the read), so a timer does.
    if (r.ec && r.ec != errc::no_node && !interrupted_ && !retry_timer_) {
        retry_timer_ = ++last_ticket_;
        out_->emplace_back(std::in_place_type<zk::op>, zk::after{retry_timer_, cfg_.retry_delay});
    }
    check_initialized();
}

void tree_cache_machine::on(const zk::timer_due& t) {
    if (t.id != retry_timer_) return;  // sim-one-way: timer-guard
    retry_timer_ = 0;
    if (interrupted_) return;  // the reconnection sends them
    retry_failed();
    check_initialized();
}

void tree_cache_machine::apply_data(const std::string& path, entry& e, const zk::reply& r) {
    const bool keep_data = cfg_.cache_data && (cfg_.max_data == 0 || r.data.size() <= cfg_.max_data);
    cached_node n{keep_data ? r.data : std::string(), *r.stat};
    if (e.node && e.node->stat.czxid == n.stat.czxid) {
        // Never back to an older version, and nothing new at the same one: the node shown is the
        // one its last event gave (its stat's children fields too: as of that read).
        if (n.stat.version <= e.node->stat.version) return;
        e.node = std::move(n);
        return emit(cache_event_type::updated, path, e.node);
    }
    const bool made_again = e.node.has_value();
    if (made_again) {
        // Another node of the same path (deleted and made again unseen, as across a lost
        // session): the old one and what was under it are gone.
        remove_descendants(path);
        emit(cache_event_type::removed, path, std::exchange(e.node, std::nullopt));
        e.children.clear();
    }
    // A node made after the listing that named it may sit under a parent made again since: it
    // is shown once a listing of its parent names it (the parent's stat then tells which).
    if (path != cfg_.root && e.listed_pzxid && n.stat.czxid > e.listed_pzxid) {
        e.held_node = std::move(n);
        auto& parent = entries_.at(std::string(parent_path(path)));
        return read_children(std::string(parent_path(path)), parent);
    }
    show(path, e, std::move(n), made_again);
}

// relist: the node's children are not known (another node of the path was shown before).
void tree_cache_machine::show(const std::string& path, entry& e, cached_node n, bool relist) {
    e.held_node.reset();
    e.node = std::move(n);
    emit(cache_event_type::added, path, e.node);
    if (e.held_listing) return list_held(path, e);
    if (relist) read_children(path, e);
}

// The node is shown now: a listing held for it applies; one of another node of the path is
// stale, and a new listing is asked for.
void tree_cache_machine::list_held(const std::string& path, entry& e) {
    auto held = std::move(*e.held_listing);  // (called only with a listing held)
    e.held_listing.reset();
    if (!held.of || held.of->czxid == e.node->stat.czxid) return apply_children(path, e, held.of, held.names);
    read_children(path, e);
}

// A name the listing adds is read, and a node held for being newer than the listing that named
// it is shown once this one names it too. A name it lacks is left to that child's own reads: its
// data watch fires node_deleted (or its read, sent again, answers no_node), as in TreeCache.
void tree_cache_machine::apply_children(const std::string& path, entry& e, std::optional<zkr::stat> listed,
                                        std::vector<std::string> names) {
    // Children the options skip are as if not there: never read, watched nor shown.
    std::erase_if(names, [&](const std::string& name) {
        return std::any_of(cfg_.skip_names.begin(), cfg_.skip_names.end(),
                           [&](const std::string& pattern) { return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0; });
    });
    const std::int64_t czxid = listed ? listed->czxid : 0;
    const bool same_node = e.node && (czxid == 0 || czxid == e.node->stat.czxid);
    if (!same_node) {
        if (e.node && czxid < e.node->stat.czxid) return read_children(path, e);  // a listing of the node before: list again
        e.held_listing = entry::listing{listed, names};
        if (e.node) read_data(path, e);  // made again since we read it: its data tells
        return;
    }
    e.held_listing.reset();
    const std::int64_t pzxid = listed ? listed->pzxid : 0;
    const std::set<std::string> named(names.begin(), names.end());
    std::vector<std::string> came, stayed;
    std::set_difference(named.begin(), named.end(), e.children.begin(), e.children.end(), std::back_inserter(came));
    std::set_intersection(named.begin(), named.end(), e.children.begin(), e.children.end(), std::back_inserter(stayed));
    const int depth = e.depth;
    for (const auto& name : stayed) {
        const auto child = join_path(path, name);
        auto& c = entries_.at(child);
        c.listed_pzxid = pzxid;
        if (c.held_node && c.held_node->stat.czxid <= pzxid) show(child, c, *c.held_node, false);
    }
    for (const auto& name : came) {
        const auto child = join_path(path, name);
        e.children.insert(name);
        entry fresh;
        fresh.depth = depth + 1;
        fresh.listed_pzxid = pzxid;
        entries_[child] = std::move(fresh);
        refresh(child);
    }
}

// ---- removals -------------------------------------------------------------------------------
// Deepest first, so that no listener ever sees a node whose parent was removed before it.
void tree_cache_machine::remove_descendants(const std::string& path) {
    const auto prefix = path == "/" ? std::string("/") : path + "/";
    std::vector<std::string> under;
    for (auto it = entries_.upper_bound(path); it != entries_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
        under.push_back(it->first);
    std::sort(under.begin(), under.end(), [](const std::string& a, const std::string& b) {
        const auto depth = [](const std::string& p) { return std::count(p.begin(), p.end(), '/'); };
        return depth(a) != depth(b) ? depth(a) > depth(b) : a < b;
    });
    for (const auto& p : under) {
        auto& e = entries_.at(p);
        if (e.node) emit(cache_event_type::removed, p, std::exchange(e.node, std::nullopt));
    }
    for (const auto& p : under) entries_.erase(p);
}

// The node is gone: it and everything under it. The root waits to be made again.
void tree_cache_machine::gone(const std::string& path) {
    remove_descendants(path);
    auto& e = entries_.at(path);
    if (e.node) emit(cache_event_type::removed, path, std::exchange(e.node, std::nullopt));
    e.children.clear();
    e.held_listing.reset();
    if (path == cfg_.root) return await_root(e);
    if (const auto parent = entries_.find(std::string(parent_path(path))); parent != entries_.end()) parent->second.children.erase(std::string(node_name(path)));
    entries_.erase(path);
}

// ---- watches and the connection --------------------------------------------------------------
void tree_cache_machine::on(const zk::watch_fired& w) {
    const auto it = asked_.find(w.id);
    if (it == asked_.end()) return;
    const auto a = it->second;
    asked_.erase(it);
    if (w.type == watch_event_type::not_watching) return;  // the session went: the next one reads all
    const auto en = entries_.find(a.path);
    if (en == entries_.end()) return;
    auto& e = en->second;
    switch (a.kind) {
        case read_kind::data:
            if (w.id != e.data_read) return;
            if (w.type == watch_event_type::node_deleted) return gone(a.path);
            return read_data(a.path, e);
        case read_kind::exists:
            if (w.id == e.data_read && w.type == watch_event_type::node_created) refresh(a.path);
            return;
        case read_kind::children:
            if (w.id != e.children_read) return;
            if (w.type == watch_event_type::node_deleted) return gone(a.path);
            return read_children(a.path, e);
    }
}

void tree_cache_machine::on(const zk::connection_changed& c) {
    switch (c.state) {
        case connection_state::suspended:
            if (!std::exchange(interrupted_, true)) emit(cache_event_type::suspended);
            return;
        case connection_state::lost:
            interrupted_ = true;
            session_ = 0;
            emit(cache_event_type::lost);
            return;
        case connection_state::connected:
        case connection_state::reconnected:
        case connection_state::read_only: {
            if (!started_) return;
            const bool new_session = c.session != session_;
            session_ = c.session;
            if (new_session) refresh_all();
            else retry_failed();
            if (std::exchange(interrupted_, false)) emit(cache_event_type::reconnected);
            return check_initialized();
        }
        default: return;
    }
}

void tree_cache_machine::emit(cache_event_type type, const std::string& path, std::optional<cached_node> node) {
    out_->emplace_back(std::in_place_type<cache_event>, cache_event{type, path, std::move(node)});
}

// Once every read asked for since the start has answered, and none waits to be sent again.
void tree_cache_machine::check_initialized() {
    if (!started_ || initialized_ || !loading_.empty()) return;
    for (const auto& [path, e] : entries_)
        if (e.data_failed || e.children_failed) return;
    initialized_ = true;
    emit(cache_event_type::initialized);
}

}  // namespace zkr::detail
