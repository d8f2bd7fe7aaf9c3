# loom_add_plugin() of the installed SDK (find_package(loom CONFIG) includes
# this file; the loom source tree has its own, with build options, in
# cmake/LoomPlugin.cmake).
#
# loom_add_plugin(<name> [VARIANT <v>] SOURCES <src>... [LIBRARIES <lib>...]
#                 [OUTPUT_DIR <dir>] [INSTALL_DIR <dir>] [NO_INSTALL])
#
# Builds the MODULE library libloom-<name>[-<v>].so (target loom-<name>[-<v>])
# the way loom builds its own plugins: hidden visibility, only
# loom_plugin_query exported, -Wl,--no-undefined, linked to loom::plugin (the
# ABI header and the helper library) and LIBRARIES, never to libloom.
# OUTPUT_DIR: where the build puts the file (default: the usual library
# output folder). Installed to INSTALL_DIR (default <libdir>/loom of the
# project being built), unless NO_INSTALL. Try the result with
#   loom conformance --plugin $<TARGET_FILE:loom-<name>>
include(${CMAKE_CURRENT_LIST_DIR}/LoomPluginTarget.cmake)
include(GNUInstallDirs)

function(loom_add_plugin name)
  cmake_parse_arguments(P "NO_INSTALL" "VARIANT;OUTPUT_DIR;INSTALL_DIR" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT P_SOURCES)
    message(FATAL_ERROR "loom_add_plugin(${name}): no SOURCES")
  endif()
  if(NOT name MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "loom_add_plugin(${name}): a plugin name is lowercase letters, digits and '_' "
                        "(the file is libloom-<name>[-<variant>].so and '-' starts the variant)")
  endif()
  set(label "${name}")
  if(P_VARIANT)
    set(label "${name}-${P_VARIANT}")
  endif()
  set(target "loom-${label}")
  loom_plugin_target(${target} ${label} SOURCES ${P_SOURCES} SDK loom::plugin ${P_LIBRARIES})
  if(P_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${P_OUTPUT_DIR})
  endif()
  if(NOT P_NO_INSTALL)
    if(NOT P_INSTALL_DIR)
      set(P_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/loom)
    endif()
    install(TARGETS ${target} LIBRARY DESTINATION ${P_INSTALL_DIR})
  endif()
endfunction()
