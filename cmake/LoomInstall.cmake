# What `cmake --install` puts under a prefix, and the package that
# find_package(loom CONFIG) and pkg-config read there. Everything is
# relative to the prefix: libloom finds its plugins in <folder of
# libloom>/loom, bin/loom finds libloom through its RUNPATH
# ($ORIGIN/../<libdir>), and the package files locate the prefix from
# their own place, so an installed tree can be moved.
#
#   <bindir>/loom                              the command
#   <libdir>/libloom.so*                       loom::loom (applications)
#   <libdir>/loom/libloom-<plugin>.so          the plugins, loom-probe
#   <libdir>/libloom_plugin_common.a           loom::plugin's helper library
#   <includedir>/loom/*.h, loom.hpp            the C API, its C++ wrapper, the ABI
#   <includedir>/loom/{runtime,registry,sched}/*.hpp  the graph API by layer
#   <includedir>/loom/sdk/loom/plugin.h        loom::plugin's include root: the
#   <includedir>/loom/sdk/common/*.h           ABI header and the helpers only
#   <libdir>/cmake/loom/                       loomConfig.cmake, targets,
#                                              loom_add_plugin()
#   <libdir>/pkgconfig/loom.pc, loom-plugin.pc
include(CMakePackageConfigHelpers)
file(STRINGS ${CMAKE_SOURCE_DIR}/include/loom/plugin.h LOOM_ABI_LINES REGEX "^#define LOOM_ABI_VERSION_M(AJ|IN)OR ")
string(REGEX REPLACE ".*MAJOR ([0-9]+)u.*" "\\1" LOOM_ABI_MAJOR "${LOOM_ABI_LINES}")
string(REGEX REPLACE ".*MINOR ([0-9]+)u.*" "\\1" LOOM_ABI_MINOR "${LOOM_ABI_LINES}")
set(LOOM_INSTALL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/loom)
set(LOOM_INSTALL_SDK_INCLUDE ${CMAKE_INSTALL_INCLUDEDIR}/loom/sdk)

# loom::plugin = the ABI header + the helper library. Exported names:
# loom::loom, loom::plugin_abi, loom::plugin_common, loom::plugin.
add_library(loom_plugin INTERFACE)
target_link_libraries(loom_plugin INTERFACE loom_plugin_abi loom_plugin_common)
set_target_properties(loom_plugin PROPERTIES EXPORT_NAME plugin)
set_target_properties(loom_plugin_abi PROPERTIES EXPORT_NAME plugin_abi)
set_target_properties(loom_plugin_common PROPERTIES EXPORT_NAME plugin_common)
add_library(loom::loom ALIAS loom)
add_library(loom::plugin ALIAS loom_plugin)

install(TARGETS loom EXPORT loomTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS loom_plugin_abi loom_plugin_common loom_plugin EXPORT loomTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

# Every header an application includes (loom.h, the C API, when present).
file(GLOB LOOM_PUBLIC_HEADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/include/loom/*.h
  ${CMAKE_SOURCE_DIR}/include/loom/*.hpp)
install(FILES ${LOOM_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/loom)
# The graph API, one folder per layer (docs/architecture.md).
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/loom/runtime ${CMAKE_SOURCE_DIR}/include/loom/registry
  ${CMAKE_SOURCE_DIR}/include/loom/sched DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/loom FILES_MATCHING PATTERN "*.hpp")
# The SDK root: plugin.h and the helpers, nothing else of loom.
install(FILES ${CMAKE_SOURCE_DIR}/include/loom/plugin.h DESTINATION ${LOOM_INSTALL_SDK_INCLUDE}/loom)
file(GLOB LOOM_SDK_HEADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/plugins/common/*.h)
install(FILES ${LOOM_SDK_HEADERS} DESTINATION ${LOOM_INSTALL_SDK_INCLUDE}/common)

install(EXPORT loomTargets NAMESPACE loom:: DESTINATION ${LOOM_INSTALL_CMAKE_DIR})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/loomConfig.cmake.in
  ${CMAKE_BINARY_DIR}/package/loomConfig.cmake INSTALL_DESTINATION ${LOOM_INSTALL_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/loomConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/loomConfig.cmake
  ${CMAKE_BINARY_DIR}/package/loomConfigVersion.cmake
  ${CMAKE_SOURCE_DIR}/cmake/LoomPluginTarget.cmake
  ${CMAKE_SOURCE_DIR}/cmake/LoomPluginSDK.cmake
  DESTINATION ${LOOM_INSTALL_CMAKE_DIR})

# pkg-config: the prefix is computed from the .pc file's own folder.
file(RELATIVE_PATH LOOM_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" LOOM_PC_TO_PREFIX "${LOOM_PC_TO_PREFIX}")
foreach(pc loom loom-plugin)
  configure_file(${CMAKE_SOURCE_DIR}/cmake/${pc}.pc.in ${CMAKE_BINARY_DIR}/package/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/package/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
