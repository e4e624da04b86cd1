// A protected create's prefix: the layout Curator recognises, every bit of the random value shown.
#include "protect_prefix.hpp"

#include "zkr_catch.hpp"

#include <zkr/path.hpp>

#include <cstdio>
#include <string>

namespace {

// The layout the C library's formatting gave before (the reference this is checked against).
std::string with_snprintf(std::uint64_t a, std::uint64_t b) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "_c_%08x-%04x-%04x-%04x-%012llx-", static_cast<unsigned>(a >> 32),
                  static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff), static_cast<unsigned>(b >> 48),
                  static_cast<unsigned long long>(b & 0xffffffffffffULL));
    return buf;
}

std::string format_protect_prefix(std::uint64_t a, std::uint64_t b) {
    std::string out(zkr::detail::protect_prefix_size, '\0');
    zkr::detail::write_protect_prefix(a, b, out.data());
    return out;
}

std::string with_protect_prefix(std::string_view path, std::string_view prefix) {
    std::string out;
    zkr::detail::write_with_protect_prefix(path, prefix, out);
    return out;
}

}  // namespace

TEST_CASE("protect prefix: Curator's layout, 40 characters with the dash at 39, the same as snprintf wrote") {
    CHECK(format_protect_prefix(0x0123456789abcdefULL, 0xfedcba9876543210ULL) == "_c_01234567-89ab-cdef-fedc-ba9876543210-");
    CHECK(format_protect_prefix(0, 0) == "_c_00000000-0000-0000-0000-000000000000-");
    CHECK(format_protect_prefix(~0ULL, ~0ULL) == "_c_ffffffff-ffff-ffff-ffff-ffffffffffff-");
    std::uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 1000; ++i) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const std::uint64_t a = x;
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const auto p = format_protect_prefix(a, x);
        REQUIRE(p == with_snprintf(a, x));
        REQUIRE(p.size() == 40);
        REQUIRE(p[39] == '-');
    }
}

TEST_CASE("with_protect_prefix puts the prefix before the node's name, as joining the parent and prefixed name does") {
    const std::string prefix = "_c_01234567-89ab-cdef-fedc-ba9876543210-";
    CHECK(with_protect_prefix("/locks/a/lock-", prefix) == "/locks/a/" + prefix + "lock-");
    CHECK(with_protect_prefix("/lock-", prefix) == "/" + prefix + "lock-");
    CHECK(with_protect_prefix("/ns/x/", prefix) == "/ns/x/" + prefix);
    for (const std::string path : {"/a/b", "/b", "/a/b/c-0000000001"})
        CHECK(with_protect_prefix(path, prefix) == zkr::join_path(zkr::parent_path(path), prefix + std::string(zkr::node_name(path))));
}

TEST_CASE("with_protect_prefix writes over a buffer used before, longer or shorter") {
    const std::string prefix = "_c_01234567-89ab-cdef-fedc-ba9876543210-";
    std::string buffer = "/a/much/longer/path/than/the/next/one/written/over/it/" + prefix + "lock-0000000001";
    zkr::detail::write_with_protect_prefix("/x/lock-", prefix, buffer);
    CHECK(buffer == "/x/" + prefix + "lock-");
    zkr::detail::write_with_protect_prefix("/a/b/c/d/e/lock-", prefix, buffer);
    CHECK(buffer == "/a/b/c/d/e/" + prefix + "lock-");
}

TEST_CASE("a new protect prefix is Curator's layout, random, and none until made") {
    using zkr::detail::protect_prefix;
    CHECK(protect_prefix().view().empty());
    const auto a = protect_prefix::make(), b = protect_prefix::make();
    for (const auto p : {a.view(), b.view()}) {
        REQUIRE(p.size() == 40);
        CHECK(p.substr(0, 3) == "_c_");
        for (const std::size_t dash : {11u, 16u, 21u, 26u, 39u}) CHECK(p[dash] == '-');
        CHECK(p.find_first_not_of("0123456789abcdef-", 3) == std::string_view::npos);
    }
    CHECK(a.view() != b.view());
}
