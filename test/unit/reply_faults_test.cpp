#include "reply_faults.hpp"

#include "zkr_catch.hpp"

using zkr::detail::reply_faults;

TEST_CASE("reply faults: none armed, every reply stays as it is") {
    reply_faults f;
    CHECK(f.filter(ZOK) == ZOK);
    CHECK(f.filter(ZNONODE) == ZNONODE);
}

TEST_CASE("reply faults: the next n successes become the fault, failures take none") {
    reply_faults f;
    f.arm(ZCONNECTIONLOSS, 2);
    CHECK(f.filter(ZNONODE) == ZNONODE);  // a failure is left alone, and keeps the faults for the next
    CHECK(f.filter(ZOK) == ZCONNECTIONLOSS);
    CHECK(f.filter(ZOK) == ZCONNECTIONLOSS);
    CHECK(f.filter(ZOK) == ZOK);
}

TEST_CASE("reply faults: arming again replaces what is left") {
    reply_faults f;
    f.arm(ZCONNECTIONLOSS, 5);
    CHECK(f.filter(ZOK) == ZCONNECTIONLOSS);
    f.arm(ZSESSIONEXPIRED, 1);
    CHECK(f.filter(ZOK) == ZSESSIONEXPIRED);
    CHECK(f.filter(ZOK) == ZOK);
}
