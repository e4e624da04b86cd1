// zkr counter: reads, sets or adds to a count kept in one node, in zkr::shared_count's decimal
// text or in Curator SharedCount's 4 bytes (--format int32). An add is a compare-and-set on the
// node's version, tried again when another process wrote first: no increment is lost. With
// --format int64 the count is a zkr::distributed_atomic_long (Curator DistributedAtomicLong's 8
// bytes), whose add is applied exactly once even when a reply is lost.
#include "commands.hpp"

#include "../src/parse_number.hpp"  // the client layer's one parse of a whole number

#include <zkr/distributed_atomic_long.hpp>
#include <zkr/path.hpp>
#include <zkr/shared_count.hpp>

#include <algorithm>

namespace zkr::cli {

namespace {

constexpr int max_tries = 1000;  // an add that loses this many races in a row gives up

struct counter_command final : command {
    connection_options connection;
    std::vector<std::string> words;  // PATH [get | set N | add N]
    std::string format_name = "text";

    int run(const std::vector<std::string>& rest) override {
        if (!rest.empty()) throw usage_error("takes no COMMAND (unexpected \"" + rest.front() + "\")");
        if (words.empty()) throw usage_error("needs a PATH: zkr counter PATH [get | set N | add N]");
        const auto path = checked_path({words.front()}, "counter");
        const std::string action = words.size() > 1 ? words[1] : "get";
        if (action != "get" && action != "set" && action != "add")
            throw usage_error("unknown action \"" + action + "\": get, set N or add N");
        const std::size_t wanted = action == "get" ? std::min<std::size_t>(words.size(), 2) : 3;
        if (words.size() < wanted) throw usage_error(action + " needs a number N: zkr counter PATH " + action + " N");
        if (words.size() > wanted) throw usage_error("unexpected \"" + words[wanted] + "\" after " + action);
        if (format_name == "int64") return run_int64(path, action, action == "get" ? 0 : number64(words[2]));
        const std::int32_t n = action == "get" ? 0 : number(words[2]);
        const auto format = format_name == "int32" ? count_format::int32_big_endian : count_format::decimal_text;
        auto client = connection.connect();
        try {
            if (action == "get") return print(read(*client, path, format).first);
            if (action == "set") return print(set(*client, path, n, format));
            return print(add(*client, path, n, format));
        } catch (const zkr::error& e) {
            if (e.code() == zkr::errc::invalid_path) throw usage_error(e.what());
            throw exit_error(exit_zookeeper, e.what());
        }
    }

    // Curator's DistributedAtomicLong: get, try_set and add of a zkr::distributed_atomic_long.
    int run_int64(const std::string& path, const std::string& action, std::int64_t n) {
        auto client = connection.connect();
        try {
            zkr::distributed_atomic_long value(*client, path, {.optimistic_tries = max_tries, .backoff = std::chrono::milliseconds(1)});
            if (action == "get") {
                if (!client->exists(path)) throw exit_error(exit_conflict, "no count at " + path + ": the node does not exist");
                say(std::to_string(value.get().pre_value));
                return 0;
            }
            const auto v = action == "set" ? value.try_set(n) : value.add(n);
            if (!v.succeeded)
                throw exit_error(exit_zookeeper, "gave up on " + path + ": other processes wrote first " + std::to_string(max_tries) + " times");
            say(std::to_string(v.post_value));
            return 0;
        } catch (const zkr::error& e) {
            if (e.code() == zkr::errc::invalid_path) throw usage_error(e.what());
            if (e.code() == zkr::errc::invalid_argument) throw exit_error(exit_conflict, e.what());  // other data, or an overflow
            throw exit_error(exit_zookeeper, e.what());
        }
    }

    static std::int64_t number64(const std::string& text) {
        if (const auto value = detail::parse_number<std::int64_t>(text)) return *value;
        throw usage_error("N must be a whole 64-bit number, got \"" + text + "\"");
    }

    static std::int32_t number(const std::string& text) {
        if (const auto value = detail::parse_number<std::int32_t>(text)) return *value;
        throw usage_error("N must be a whole number from -2147483648 to 2147483647, got \"" + text + "\"");
    }

    static int print(std::int32_t value) {
        say(std::to_string(value));
        return 0;
    }

    // The count and its node's version; exit 1 when there is no count at the path.
    static std::pair<std::int32_t, std::int32_t> read(zkr::client& c, const std::string& path, count_format format) {
        boost::system::error_code ec;
        const auto r = c.get_data(path, ec);
        if (ec == zkr::errc::no_node) throw exit_error(exit_conflict, "no count at " + path + ": the node does not exist");
        if (ec) throw zkr::error(ec, path, ec.message() + " while reading " + path);
        return read_value(r, path, format);
    }

    static std::int32_t set(zkr::client& c, const std::string& path, std::int32_t value, count_format format) {
        for (int tries = 0; tries < max_tries; ++tries) {
            boost::system::error_code ec;
            c.set_data(path, count_to_data(value, format), -1, ec);
            if (ec == zkr::errc::no_node) c.create(path, count_to_data(value, format), {.create_parents = true}, ec);
            if (ec == zkr::errc::node_exists) continue;  // made meanwhile: write it
            if (ec) throw zkr::error(ec, path, ec.message() + " while setting " + path);
            return value;
        }
        throw exit_error(exit_zookeeper, "gave up setting " + path + ": it was deleted and made again " + std::to_string(max_tries) + " times");
    }

    static std::int32_t add(zkr::client& c, const std::string& path, std::int32_t delta, count_format format) {
        for (int tries = 0; tries < max_tries; ++tries) {
            boost::system::error_code ec;
            const auto r = c.get_data(path, ec);
            if (ec == zkr::errc::no_node) {  // a count that does not exist yet starts at 0
                c.create(path, count_to_data(delta, format), {.create_parents = true}, ec);
                if (ec == zkr::errc::node_exists) continue;
                if (ec) throw zkr::error(ec, path, ec.message() + " while creating " + path);
                return delta;
            }
            if (ec) throw zkr::error(ec, path, ec.message() + " while reading " + path);
            const auto [value, version] = read_value(r, path, format);
            const std::int64_t sum = std::int64_t{value} + delta;
            if (sum > INT32_MAX || sum < INT32_MIN)
                throw exit_error(exit_conflict, "adding " + std::to_string(delta) + " to " + std::to_string(value) + " at " + path +
                                                    " leaves the 32-bit range; nothing was written");
            c.set_data(path, count_to_data(static_cast<std::int32_t>(sum), format), version, ec);
            if (ec == zkr::errc::bad_version || ec == zkr::errc::no_node) continue;  // another process wrote first
            if (ec) throw zkr::error(ec, path, ec.message() + " while writing " + path);
            return static_cast<std::int32_t>(sum);
        }
        throw exit_error(exit_zookeeper, "gave up adding to " + path + ": other processes wrote first " + std::to_string(max_tries) + " times");
    }

    static std::pair<std::int32_t, std::int32_t> read_value(const data_result& r, const std::string& path, count_format format) {
        const auto value = count_from_data(r.data, format);
        if (!value) throw exit_error(exit_conflict, path + " holds " + "\"" + printable_path(r.data) + "\"" + ", not a count in " + format_text(format));
        return {*value, r.stat.version};
    }

    static std::string format_text(count_format format) {
        return format == count_format::decimal_text ? "decimal text (--format int32 reads Curator's 4 bytes)"
                                                    : "4 big-endian bytes (--format text reads zkr's text)";
    }
};

}  // namespace

std::unique_ptr<command> add_counter_command(CLI::App& app) {
    auto cmd = std::make_unique<counter_command>();
    auto* sub = app.add_subcommand("counter", "read, set or add to a count kept in one node");
    sub->add_option("PATH", cmd->words, "the count's node, then get (the default), set N or add N")->type_name("");
    sub->add_option("--format", cmd->format_name,
                    "text: decimal text (zkr::shared_count's default); int32: 4 big-endian bytes (Curator's SharedCount, "
                    "Kazoo's Counter with support_curator); int64: 8 big-endian bytes (Curator's DistributedAtomicLong, "
                    "zkr::distributed_atomic_long)")
        ->check(CLI::IsMember({"text", "int32", "int64"}))
        ->type_name("FORMAT");
    cmd->connection.add_to(*sub);
    sub->footer(
        "zkr counter PATH [get]     prints the count\n"
        "zkr counter PATH set N     writes N (the node and missing parents are made when needed)\n"
        "zkr counter PATH add N     adds N (negative to subtract) and prints the new count: a\n"
        "                           compare-and-set on the node's version, tried again when another\n"
        "                           process wrote first, so no change is lost; a missing count starts at 0\n"
        "The count is zkr::shared_count's: decimal text, or with --format int32 Curator SharedCount's\n"
        "4 big-endian bytes. With --format int64 it is a zkr::distributed_atomic_long (Curator\n"
        "DistributedAtomicLong's 8 bytes): an add is applied exactly once, even when a reply is lost.\n\n"
        "exit codes: 0 done; 1 no count at PATH (the node is missing, or holds no count in the format),\n"
        "or an add would leave the 32-bit (int64: 64-bit) range; 2 bad usage; 3 ZooKeeper unreachable or failing.");
    return cmd;
}

}  // namespace zkr::cli
