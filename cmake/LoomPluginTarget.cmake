# loom_plugin_target(<target> <label> <sdk-target>... SOURCES <src>...)
#
# The one definition of how a plugin file is built, shared by the in-tree
# loom_add_plugin (cmake/LoomPlugin.cmake) and the installed SDK's
# (cmake/LoomPluginSDK.cmake, part of find_package(loom)): a MODULE library
# named libloom-<label>.so, hidden visibility (only loom_plugin_query is
# exported, docs/plugin-abi.md plugin rule 1), -Wl,--no-undefined (a missing
# dependency fails the build, not the user's dlopen), linked to the given
# SDK targets (the ABI header and the helper library) and nothing else of loom.
function(loom_plugin_target target label)
  cmake_parse_arguments(T "" "" "SOURCES;SDK" ${ARGN})
  add_library(${target} MODULE ${T_SOURCES})
  set_target_properties(${target} PROPERTIES PREFIX "lib" OUTPUT_NAME "loom-${label}" SUFFIX ".so"
    CXX_VISIBILITY_PRESET hidden C_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${target} PRIVATE ${T_SDK})
  loom_no_undefined(${target})
endfunction()

# -Wl,--no-undefined on a shared object, except in a sanitized clang build
# (LOOM_SANITIZE, or -fsanitize= in CMAKE_CXX_FLAGS): clang links a shared
# object without its sanitizer runtime (the executable that loads it carries
# the runtime), which leaves __asan_* references open.
function(loom_no_undefined target)
  if(NOT ((LOOM_SANITIZE OR CMAKE_CXX_FLAGS MATCHES "-fsanitize=") AND CMAKE_CXX_COMPILER_ID MATCHES "Clang"))
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
endfunction()
