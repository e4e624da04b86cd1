# Finds the single-threaded ZooKeeper C client (Debian: libzookeeper-st-dev).
# Neither Debian package ships a CMake or pkg-config file, so it is found by hand.
# Defines the imported target ZooKeeperC::st.
find_path(ZooKeeperC_INCLUDE_DIR zookeeper/zookeeper.h)
find_library(ZooKeeperC_LIBRARY NAMES zookeeper_st)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(ZooKeeperC REQUIRED_VARS ZooKeeperC_LIBRARY ZooKeeperC_INCLUDE_DIR)
if(ZooKeeperC_FOUND AND NOT TARGET ZooKeeperC::st)
    add_library(ZooKeeperC::st UNKNOWN IMPORTED)
    set_target_properties(ZooKeeperC::st PROPERTIES
        IMPORTED_LOCATION "${ZooKeeperC_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${ZooKeeperC_INCLUDE_DIR}")
endif()
mark_as_advanced(ZooKeeperC_INCLUDE_DIR ZooKeeperC_LIBRARY)
