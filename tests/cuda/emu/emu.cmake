# Included by tests/CMakeLists.txt where the CUDA headers are found (no
# nvcc needed; in the ASan build too, so the sanitizers watch the kernels'
# memory accesses).
# The plugin with its kernels run on the host (cuda/emu): every
# plugins/cuda/ops/*.cu compiled as C++ with cuda/emu/emu.h force-included
# (the CUDA kernel language on fibers), the plugin's own .cpp files as
# they are, linked against the fake runtime (host memory, graphs replayed).
# The op suite and stories260K run on its cuda0 without a GPU (tests
# cuda_emu.*): the kernels' indexing, barriers, shuffles and results, not
# their speed.
file(GLOB _loom_cuda_cu CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/plugins/cuda/ops/*.cu)
set(_loom_cuda_emu_cu "")
foreach(cu IN LISTS _loom_cuda_cu)
  get_filename_component(n ${cu} NAME_WE)
  set(w ${CMAKE_CURRENT_BINARY_DIR}/cuda_emu/${n}.cpp)
  file(CONFIGURE OUTPUT ${w} CONTENT "#include \"${cu}\"\n")
  list(APPEND _loom_cuda_emu_cu ${w})
endforeach()
set(_loom_cuda_emu_srcs ${_loom_cuda_emu_cu} cuda/emu/emu.cpp)
foreach(src plugin.cpp driver.cpp cublas.cpp device.cpp buffer.cpp stream.cpp scratch.cpp weight_layout.cpp
            ops/support.cpp ops/fault.cpp ops/act_cache.cpp ops/fusion.cpp)
  list(APPEND _loom_cuda_emu_srcs ${CMAKE_SOURCE_DIR}/plugins/cuda/${src})
endforeach()
loom_plugin_target(loom-cuda-emu cuda SOURCES ${_loom_cuda_emu_srcs}
  SDK loom_plugin_abi loom_plugin_common loom_fake_cudart ${CMAKE_DL_LIBS} Threads::Threads rt)
set_target_properties(loom-cuda-emu PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/emu_cuda_plugin
  BUILD_RPATH ${CMAKE_BINARY_DIR}/fake_cuda UNITY_BUILD OFF)
target_include_directories(loom-cuda-emu PRIVATE ${CMAKE_SOURCE_DIR}/plugins/cuda ${LOOM_CUDA_HOST_INCLUDE})
target_compile_definitions(loom-cuda-emu PRIVATE LOOM_CUDA_EMU=1 LOOM_CUDA_VERSION="${PROJECT_VERSION}"
  LOOM_CUDA_ARCH_LIST="host emulation" LOOM_CUDA_TOOLKIT_LIB_DIR="${LOOM_CUDA_LIBRARY_DIR}")
set_source_files_properties(${_loom_cuda_emu_cu} PROPERTIES
  COMPILE_OPTIONS "-include;${CMAKE_CURRENT_SOURCE_DIR}/cuda/emu/emu.h;-Wno-unknown-pragmas;-Wno-sign-compare;$<$<CXX_COMPILER_ID:GNU>:-Wno-class-memaccess>")

# The emulation itself (barriers, shuffles, votes, indices, bad launches).
loom_add_test(test_cuda_emu DIR cuda/emu LABELS cuda)
target_include_directories(test_cuda_emu PRIVATE ${LOOM_CUDA_HOST_INCLUDE})

# The op suite and test_cuda_gpu's cases on the emulated cuda0 (tests
# cuda_emu.*): the environment points the registry and the loom binary at
# the emulated plugin, the fake driver and the fake runtime's one device.
set(_loom_cuda_emu_env
  "LOOM_TEST_DEVICE=cuda0;LOOM_TEST_DEVICE_PLUGIN_DIR=${CMAKE_BINARY_DIR}/emu_cuda_plugin;LOOM_PLUGIN_PATH=${CMAKE_BINARY_DIR}/emu_cuda_plugin;LOOM_PLUGINS_SELECT=cuda,cpu*;LOOM_CUDA_DRIVER=${CMAKE_BINARY_DIR}/fake_cuda/libcuda.so.1;LOOM_FAKE_CUDA_INIT=0;LOOM_FAKE_CUDA_DEVICES=1;LOOM_CUDA_CUBLAS=off")
gtest_discover_tests(test_ops DISCOVERY_TIMEOUT 60 TEST_PREFIX "cuda_emu." TEST_LIST loom_cuda_emu_op_tests
  PROPERTIES ENVIRONMENT_MODIFICATION "LOOM_TEST_ACT_Q8=unset:" LABELS cuda)
add_dependencies(test_ops loom-cuda-emu)
gtest_discover_tests(test_cuda_gpu DISCOVERY_TIMEOUT 60 TEST_PREFIX "cuda_emu." TEST_LIST loom_cuda_emu_gpu_tests
  PROPERTIES LABELS cuda)
add_dependencies(test_cuda_gpu loom-cuda-emu)
# The environment is a list: set by a ctest include file, read after the
# discovered tests (gtest_discover_tests passes no list-valued property).
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/cuda_emu_env.cmake
  "foreach(t IN LISTS loom_cuda_emu_op_tests loom_cuda_emu_gpu_tests)\n"
  "  set_tests_properties(\"\${t}\" PROPERTIES ENVIRONMENT \"${_loom_cuda_emu_env}\")\n"
  "endforeach()\n")
set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${CMAKE_CURRENT_BINARY_DIR}/cuda_emu_env.cmake)
add_test(NAME cuda_emu.models COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cuda/emu/emu_models_test.sh
  $<TARGET_FILE:loom_cli> ${CMAKE_BINARY_DIR}/emu_cuda_plugin ${CMAKE_BINARY_DIR}/fake_cuda/libcuda.so.1
  ${LOOM_MODELS_DIR_DEFAULT})
set_tests_properties(cuda_emu.models PROPERTIES LABELS cuda SKIP_RETURN_CODE 77)
add_dependencies(loom-cuda-emu loom_fake_libcuda)
# loom serve on the emulated cuda0: four completions at once (batched decode
# steps, ATTENTION's ranges form), each equal to the cpu's `loom run`.
add_test(NAME cuda_emu.serve COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cuda/emu/emu_serve_test.py
  $<TARGET_FILE:loom_cli> ${LOOM_MODELS_DIR_DEFAULT})
set_tests_properties(cuda_emu.serve PROPERTIES LABELS cuda SKIP_RETURN_CODE 77 ENVIRONMENT "${_loom_cuda_emu_env}")
# The op suite again with every grid's blocks run last to first
# (LOOM_CUDA_EMU_ORDER=reverse): a GPU runs blocks in any order, so no
# result may depend on it. Through `loom conformance` (each case family in
# its own child).
add_test(NAME cuda_emu.conformance_reverse_blocks COMMAND $<TARGET_FILE:loom_cli> conformance --device cuda0)
set_tests_properties(cuda_emu.conformance_reverse_blocks PROPERTIES LABELS cuda
  ENVIRONMENT "${_loom_cuda_emu_env};LOOM_CUDA_EMU_ORDER=reverse")
# Prefill ATTENTION over F16 caches runs on the tensor-core kernel
# (attention_tc.cu, wmma emulated in emu.h) in the cuda_emu. run above;
# here: that kernel is the one that ran, and the f32 kernel it replaces
# still passes the prefill cases with LOOM_CUDA_F16_ATTENTION=0.
add_test(NAME cuda_emu.attention_tc_kernel_ran COMMAND sh -c
  "out=$(LOOM_CUDA_EMU_TRACE=1 \"$1\" --gtest_filter=AttentionTest.PrefillOverHalfCaches 2>&1) || { echo \"$out\"; exit 1; }; echo \"$out\" | grep -q 'attention_tc_kernel grid' || { echo 'attention_tc_kernel never launched'; exit 1; }"
  sh $<TARGET_FILE:test_ops>)
add_test(NAME cuda_emu.f32_prefill_attention COMMAND $<TARGET_FILE:test_ops>
  --gtest_filter=AttentionTest.Prefill*:AttentionRangesTest.PrefillChunkBesideDecodes:AttentionTest.OutOfRangeLengthIsAnError)
set_tests_properties(cuda_emu.attention_tc_kernel_ran PROPERTIES LABELS cuda ENVIRONMENT "${_loom_cuda_emu_env}")
set_tests_properties(cuda_emu.f32_prefill_attention PROPERTIES LABELS cuda
  ENVIRONMENT "${_loom_cuda_emu_env};LOOM_CUDA_F16_ATTENTION=0")
