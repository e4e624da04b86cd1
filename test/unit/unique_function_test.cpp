// The move-only function: a small callable kept inside, a large one (or one whose move may throw)
// on the heap; each destroyed exactly once, whatever moves in between; nothing leaks.
#include <zkr/detail/unique_function.hpp>

#include "zkr_catch.hpp"

#include <array>
#include <memory>
#include <string>

using zkr::detail::unique_function;

namespace {

// Counts its live copies (every construction is matched by one destruction) and its moves.
struct tally {
    int* live;
    int* moves = nullptr;
    explicit tally(int* l, int* m = nullptr) : live(l), moves(m) { ++*live; }
    tally(const tally& o) : live(o.live), moves(o.moves) { ++*live; }
    tally(tally&& o) noexcept : live(o.live), moves(o.moves) {
        ++*live;
        if (moves) ++*moves;
    }
    ~tally() { --*live; }
};

struct throwing_move {
    tally t;
    throwing_move(throwing_move&& o) noexcept(false) : t(std::move(o.t)) {}
    explicit throwing_move(int* live) : t(live) {}
    int operator()(int x) { return x + 1; }
};

}  // namespace

TEST_CASE("unique_function: a small callable is called, moved and destroyed once") {
    int live = 0, moves = 0;
    {
        unique_function<int(int)> f = [t = tally(&live, &moves), s = std::make_shared<int>(40)](int x) { return *s + x; };
        CHECK(live == 1);
        CHECK(f(2) == 42);
        const int moves_before = moves;
        unique_function<int(int)> g = std::move(f);
        CHECK(moves == moves_before + 1);  // kept inside: the callable itself moved
        CHECK_FALSE(f);
        CHECK(g);
        CHECK(live == 1);
        CHECK(g(1) == 41);
        f = std::move(g);
        CHECK(f(0) == 40);
        CHECK(live == 1);
    }
    CHECK(live == 0);
}

TEST_CASE("unique_function: a large callable and one whose move may throw live on the heap and move as a pointer") {
    int live = 0, moves = 0;
    {
        std::array<char, unique_function<int(int)>::inline_size + 1> big{};
        big[0] = 5;
        unique_function<int(int)> f = [t = tally(&live, &moves), big](int x) { return big[0] + x; };
        unique_function<int(int)> g = [m = throwing_move(&live)](int x) mutable { return m(x); };
        CHECK(live == 2);
        const int moves_before = moves;
        auto f2 = std::move(f);
        auto g2 = std::move(g);
        CHECK(live == 2);
        CHECK(moves == moves_before);  // the pointer moved, not the callable
        CHECK(f2(1) == 6);
        CHECK(g2(1) == 2);
    }
    CHECK(live == 0);
}

TEST_CASE("unique_function: move-only captures, assignment over a held callable, and null") {
    int live = 0;
    unique_function<std::string(std::string&&)> f = [p = std::make_unique<std::string>("a")](std::string&& s) {
        return *p + s;
    };
    CHECK(f("b") == "ab");
    unique_function<std::string(std::string&&)> g = [t = tally(&live)](std::string&& s) { return s; };
    CHECK(live == 1);
    g = std::move(f);  // the tally goes with the callable g held
    CHECK(live == 0);
    CHECK(g("c") == "ac");
    g = nullptr;
    CHECK_FALSE(g);
    unique_function<void()> empty;
    CHECK_FALSE(empty);
}
