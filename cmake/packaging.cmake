# Debian packages: `cpack -G DEB` in a build folder makes four, one per install component:
#   libzkr0.1   the shared library (runtime). Debian names a library's package after its SONAME,
#               libzkr.so.0.1: before 1.0 each minor release may change the ABI.
#   libzkr-dev  headers, the static library, the CMake package and the pkg-config file (dev).
#   libzkr-testing-dev  zkr::testing: throwaway ZooKeeper servers for users' tests (testing).
#   zkr         the command line and its manual page (cli).
# dpkg-shlibdeps (Debian package dpkg-dev) finds what the library and the command line link
# against; the -dev package names the -dev packages its headers, CMake package and static library
# need. `scripts/fresh-machine packages` installs them into a fresh Debian, builds a user's project
# and runs its test.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME zkr)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "zkr developers <zkr-dev@lists.example.org>")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev testing)
if(ZKR_BUILD_CLI)
    list(APPEND CPACK_COMPONENTS_ALL cli)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(zkr_runtime_package libzkr${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${zkr_runtime_package})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "Curator-style ZooKeeper recipes for C++: shared library
zkr gives C++ services the coordination that Apache Curator gives Java ones: locks, semaphores,
a fair lock, a read-write lock, a multi-lock and leader election on Apache ZooKeeper, with
fencing tokens and lock-loss notification. This package holds the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libzkr-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
# Public headers include Boost.Asio, Boost.System and spdlog; the static library and the CMake
# package need the ZooKeeper C client (single-threaded flavour) and fmt (spdlog's).
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libboost-dev (>= 1.74), libspdlog-dev, libzookeeper-st-dev (>= 3.8)")
set(CPACK_DEBIAN_DEV_DESCRIPTION "Curator-style ZooKeeper recipes for C++: development files
zkr gives C++ services the coordination that Apache Curator gives Java ones. This package holds
the headers, the static library, the CMake package (find_package(zkr)) and the pkg-config file.")

set(CPACK_DEBIAN_TESTING_PACKAGE_NAME libzkr-testing-dev)
set(CPACK_DEBIAN_TESTING_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_TESTING_DEPENDS dev)
# The servers are the zookeeper package's (its configuration folder and libzookeeper-java's jar),
# run by /usr/bin/java.
set(CPACK_DEBIAN_TESTING_PACKAGE_DEPENDS "zookeeper (>= 3.8), default-jre-headless | java-runtime-headless")
set(CPACK_DEBIAN_TESTING_DESCRIPTION "Curator-style ZooKeeper recipes for C++: testing kit
zkr::testing starts throwaway ZooKeeper servers for the tests of code that uses zkr: a standalone
server or an ensemble on free loopback ports, which a test stops, kills, pauses and restarts; it
finds the leader and expires a client's session (the counterpart of Curator's curator-test).")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME zkr)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
# `zkr demo` starts a local ZooKeeper server when none is given.
set(CPACK_DEBIAN_CLI_PACKAGE_SUGGESTS "zookeeper, default-jre-headless")
set(CPACK_DEBIAN_CLI_DESCRIPTION "run shell commands under ZooKeeper locks or while leading
zkr lock runs a command while holding a ZooKeeper lock or semaphore lease (flock(1) for a
cluster); zkr elect runs one only while this process leads an election; zkr status and zkr revoke
show and ask the holders. Its nodes are Apache Curator's, so Java, C++ and shell processes share
one lock.")

include(CPack)
