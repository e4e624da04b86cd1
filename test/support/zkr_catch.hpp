// The one place that knows which Catch2 the tests build with: 2.13 (Debian 12) or 3.x (Debian 13).
// Tests include this instead of Catch2's own header, and use these names for what the two differ in.
#pragma once

#include <string>

#if ZKR_CATCH2_MAJOR >= 3
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif

namespace zkr::test {

#if ZKR_CATCH2_MAJOR >= 3
using case_sensitivity = Catch::CaseSensitive;
#else
using case_sensitivity = Catch::CaseSensitive::Choice;
#endif

/// A matcher: the string contains `part` (Catch2 2's Catch::Contains, 3's ContainsSubstring).
inline auto contains(const std::string& part, case_sensitivity cs = Catch::CaseSensitive::Yes) {
#if ZKR_CATCH2_MAJOR >= 3
    return Catch::Matchers::ContainsSubstring(part, cs);
#else
    return Catch::Contains(part, cs);
#endif
}

/// A matcher: the string starts with `head`.
inline auto starts_with(const std::string& head) {
#if ZKR_CATCH2_MAJOR >= 3
    return Catch::Matchers::StartsWith(head);
#else
    return Catch::StartsWith(head);
#endif
}

/// A matcher: the string ends with `tail`.
inline auto ends_with(const std::string& tail) {
#if ZKR_CATCH2_MAJOR >= 3
    return Catch::Matchers::EndsWith(tail);
#else
    return Catch::EndsWith(tail);
#endif
}

}  // namespace zkr::test
