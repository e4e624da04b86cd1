// Where the integration tests find the programs and scripts they start: the workers, the command
// line, the examples, the peers' scripts and classes. The paths live in one generated source file
// (build_paths.cpp in the build folder, test/CMakeLists.txt), not in every test's compile command:
// so the tests' objects are the same whatever folder the tree was cloned to, and a compiler cache
// (ccache, scripts/run) serves them to a fresh clone.
#pragma once

namespace zkr::test::build_paths {

extern const char* const lock_worker;
extern const char* const fault_worker;
extern const char* const holder_worker;
extern const char* const member_worker;
extern const char* const barrier_worker;
extern const char* const atomic_worker;
extern const char* const kazoo_worker;
extern const char* const kazoo_cache_worker;
extern const char* const kazoo_barrier_worker;
extern const char* const kazoo_counter_worker;
/// The command line (zkr); empty when it is not built.
extern const char* const cli;
/// test/consumer/build.sh and the build it builds against; empty in a sanitized build.
extern const char* const consumer_script;
extern const char* const build_dir;
/// docs/examples' programs, separated by ';'; empty when they are not built.
extern const char* const examples;
/// The classpath of the compiled Curator workers (test/peers/) with Curator's classes, and the
/// one with curator-x-discovery's too; nullptr when javac or Debian's Curator is not there.
extern const char* const curator_classpath;
extern const char* const curator_discovery_classpath;

}  // namespace zkr::test::build_paths

#define ZKR_LOCK_WORKER ::zkr::test::build_paths::lock_worker
#define ZKR_FAULT_WORKER ::zkr::test::build_paths::fault_worker
#define ZKR_HOLDER_WORKER ::zkr::test::build_paths::holder_worker
#define ZKR_MEMBER_WORKER ::zkr::test::build_paths::member_worker
#define ZKR_BARRIER_WORKER ::zkr::test::build_paths::barrier_worker
#define ZKR_ATOMIC_WORKER ::zkr::test::build_paths::atomic_worker
#define ZKR_KAZOO_WORKER ::zkr::test::build_paths::kazoo_worker
#define ZKR_KAZOO_CACHE_WORKER ::zkr::test::build_paths::kazoo_cache_worker
#define ZKR_KAZOO_BARRIER_WORKER ::zkr::test::build_paths::kazoo_barrier_worker
#define ZKR_KAZOO_COUNTER_WORKER ::zkr::test::build_paths::kazoo_counter_worker
#define ZKR_CLI ::zkr::test::build_paths::cli
#define ZKR_CONSUMER_SCRIPT ::zkr::test::build_paths::consumer_script
#define ZKR_BUILD_DIR ::zkr::test::build_paths::build_dir
#define ZKR_EXAMPLES ::zkr::test::build_paths::examples
