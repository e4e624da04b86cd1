#include <zkr/path.hpp>

#include "zkr_catch.hpp"

#include <random>
#include <string>

using zkr::path_error;

TEST_CASE("valid paths pass") {
    for (const char* p : {"/", "/a", "/a/b", "/locks/job-1", "/with space", "/\xc3\xa9t\xc3\xa9", "/a.b", "/..a", "/a..", "/zookeeper"})
        CHECK_FALSE(path_error(p));
}

TEST_CASE("invalid paths say what is wrong") {
    CHECK(path_error("")->find("empty") != std::string::npos);
    CHECK(path_error("a/b")->find("start with '/'") != std::string::npos);
    CHECK(path_error("/a/")->find("end with '/'") != std::string::npos);
    CHECK(path_error("/a//b")->find("empty segment") != std::string::npos);
    CHECK(path_error("/a/./b")->find("'.'") != std::string::npos);
    CHECK(path_error("/a/..")->find("'..'") != std::string::npos);
    CHECK(path_error(std::string("/a\0b", 4))->find("NUL") != std::string::npos);
    CHECK(path_error("/a\nb")->find("control character 0x0a") != std::string::npos);
    CHECK(path_error("/a\x7f")->find("control character 0x7f") != std::string::npos);
    CHECK(path_error("/a\xc2\x85")->find("C1 control") != std::string::npos);
}

TEST_CASE("path helpers") {
    CHECK(zkr::join_path("/", "a") == "/a");
    CHECK(zkr::join_path("/a", "b") == "/a/b");
    CHECK(zkr::parent_path("/a") == "/");
    CHECK(zkr::parent_path("/a/b/c") == "/a/b");
    CHECK(zkr::node_name("/a/b/c") == "c");
}

// A bounded random test of the validator: it never crashes, and its verdict agrees with a
// second, independent statement of the rules.
TEST_CASE("path validation agrees with a reference on random input") {
    std::mt19937 rng(12345);
    const std::string alphabet = std::string("/ab.\x01\x7f\xc2\x85 ", 10) + std::string(1, '\0');
    auto reference_valid = [](const std::string& p) {
        if (p.empty() || p[0] != '/') return false;
        if (p == "/") return true;
        if (p.back() == '/') return false;
        std::size_t start = 1;
        while (true) {
            auto end = p.find('/', start);
            auto seg = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
            if (seg.empty() || seg == "." || seg == "..") return false;
            if (end == std::string::npos) break;
            start = end + 1;
        }
        for (std::size_t i = 0; i < p.size(); ++i) {
            const auto c = static_cast<unsigned char>(p[i]);
            if (c < 0x20 || c == 0x7f) return false;
            if (c == 0xc2 && i + 1 < p.size() && static_cast<unsigned char>(p[i + 1]) >= 0x80 &&
                static_cast<unsigned char>(p[i + 1]) <= 0x9f)
                return false;
        }
        return true;
    };
    for (int n = 0; n < 200000; ++n) {
        std::string p;
        const int len = static_cast<int>(rng() % 12);
        for (int i = 0; i < len; ++i) p += alphabet[rng() % alphabet.size()];
        INFO("path bytes: " << p.size());
        REQUIRE(!path_error(p).has_value() == reference_valid(p));
    }
}
