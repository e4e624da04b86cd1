// The peers of the interop tests (test/peers/): where the compiled Curator worker and Curator's
// classes are (CMake compiles CuratorWorker.java when javac and Debian's Curator are there).
#pragma once

namespace zkr::test {

#ifdef ZKR_CURATOR_CLASSPATH
inline constexpr const char* curator_classpath = ZKR_CURATOR_CLASSPATH;
#else
inline constexpr const char* curator_classpath = nullptr;
#endif

// And curator-x-discovery's (CuratorDiscoveryWorker.java, when Debian's libcurator-discovery-java is there).
#ifdef ZKR_CURATOR_DISCOVERY_CLASSPATH
inline constexpr const char* curator_discovery_classpath = ZKR_CURATOR_DISCOVERY_CLASSPATH;
#else
inline constexpr const char* curator_discovery_classpath = nullptr;
#endif

}  // namespace zkr::test
