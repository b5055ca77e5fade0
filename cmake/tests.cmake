# Test conventions: drop a file in the right folder and it becomes a ctest.
#   tests/c/test_NAME.c      C unit test linked with tbcore and the fake backend -> c_NAME
#   tests/lua/NAME_spec.lua  busted spec run inside tilebench's Lua      -> lua_NAME
#   tests/cli/NAME.sh        transcript test driving the binary (bash)   -> cli_NAME
#   tests/gpu/NAME.lua       GPU test, label gpu, exits 77 without a GPU -> gpu_NAME
#   tests/gpu/NAME.sh        GPU test driving the binary (bash)          -> gpu_NAME
#   (tests/gpu/lib/ and tests/gpu/cpu_check/ hold pieces those tests source or run: no tests)
# Every test gets TILEBENCH (the binary), TILEBENCH_HOME (the source tree) and a private cache.
set(TB_TEST_ENV "TILEBENCH=$<TARGET_FILE:tilebench>" "TILEBENCH_HOME=${CMAKE_SOURCE_DIR}"
    "TILEBENCH_CACHE_DIR=${CMAKE_BINARY_DIR}/test-cache" "TB_BUILD_DIR=${CMAKE_BINARY_DIR}")
if(TILEBENCH_SANITIZE)
  # A crash the tests cause on purpose (a worker's segfault) must stay a SIGSEGV, as it is in a
  # normal build; every sanitizer report ends the process with a failure.
  list(APPEND TB_TEST_ENV "TB_SANITIZE=1" "ASAN_OPTIONS=handle_segv=0:detect_leaks=1"
       "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1"
       "LSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/tests/lsan.supp:print_suppressions=0")
endif()

# The fake backend (tests/c/fake_backend.h): a host-memory gpu_backend every C test may use; with it
# tests/c/measure_fixture.h, the setup the power tests of the timer share.
add_library(tbfake STATIC ${CMAKE_SOURCE_DIR}/tests/c/fake_backend.c ${CMAKE_SOURCE_DIR}/tests/c/fake_timestamps.c
            ${CMAKE_SOURCE_DIR}/tests/c/measure_fixture.c)
target_include_directories(tbfake PUBLIC ${CMAKE_SOURCE_DIR}/tests/c)
target_link_libraries(tbfake PUBLIC tbcore)

file(GLOB TB_C_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/c/test_*.c)
foreach(t ${TB_C_TESTS})
  get_filename_component(n ${t} NAME_WE)
  string(REGEX REPLACE "^test_" "" n ${n})
  add_executable(test_${n} ${t})
  target_link_libraries(test_${n} PRIVATE tbfake tbcore)
  add_test(NAME c_${n} COMMAND test_${n})
  set_tests_properties(c_${n} PROPERTIES ENVIRONMENT "${TB_TEST_ENV}" SKIP_RETURN_CODE 77 LABELS unit)
endforeach()

file(GLOB TB_LUA_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/lua/*_spec.lua)
foreach(t ${TB_LUA_TESTS})
  get_filename_component(n ${t} NAME_WE)
  string(REGEX REPLACE "_spec$" "" n ${n})
  add_test(NAME lua_${n} COMMAND tilebench script ${CMAKE_SOURCE_DIR}/tests/lua/busted_runner.lua
           --output=plainTerminal ${t} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(lua_${n} PROPERTIES ENVIRONMENT "${TB_TEST_ENV}" LABELS lua)
endforeach()

file(GLOB TB_CLI_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/cli/*.sh)
foreach(t ${TB_CLI_TESTS})
  get_filename_component(n ${t} NAME_WE)
  add_test(NAME cli_${n} COMMAND bash ${t} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(cli_${n} PROPERTIES ENVIRONMENT "${TB_TEST_ENV}" SKIP_RETURN_CODE 77 LABELS cli)
endforeach()

# The GPU tests that only check results (no time, status gate or rate in what they assert) may
# share the device, so `ctest -L gpu -j N` runs them side by side; every other GPU test measures
# and runs alone (RUN_SERIAL). The CPU check of the operators is one test per family
# (tests/gpu/cpu_check/<family>.lua), the longest part of the GPU suite.
set(TB_GPU_SHARED matmul_check verify tensor device_kernel dnn_conv dnn_lib_operators dnn_batchnorm
    dnn_sdpa blas blas_exit triton_launch refine_scripted)
file(GLOB TB_GPU_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/gpu/*.lua ${CMAKE_SOURCE_DIR}/tests/gpu/*.sh)
foreach(t ${TB_GPU_TESTS})
  get_filename_component(n ${t} NAME_WE)
  get_filename_component(ext ${t} EXT)
  if(n STREQUAL "operators_cpu_check")
    file(GLOB fams CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/gpu/cpu_check/*.lua)
    foreach(f ${fams})
      get_filename_component(fam ${f} NAME_WE)
      if(NOT fam STREQUAL "common")
        add_test(NAME gpu_${n}_${fam} COMMAND tilebench script ${t} --family ${fam}
                 WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
        set_tests_properties(gpu_${n}_${fam} PROPERTIES ENVIRONMENT "${TB_TEST_ENV}" SKIP_RETURN_CODE 77
                             LABELS gpu TIMEOUT 600)
      endif()
    endforeach()
    continue()
  endif()
  if(ext STREQUAL ".sh")
    add_test(NAME gpu_${n} COMMAND bash ${t} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  else()
    add_test(NAME gpu_${n} COMMAND tilebench script ${t} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  endif()
  set_tests_properties(gpu_${n} PROPERTIES ENVIRONMENT "${TB_TEST_ENV}" SKIP_RETURN_CODE 77
                       LABELS gpu TIMEOUT 600)
  if(NOT n IN_LIST TB_GPU_SHARED)
    set_tests_properties(gpu_${n} PROPERTIES RUN_SERIAL TRUE)
  endif()
endforeach()

# One test per operator folder: compile every kernel it uses (reference and each
# implementation's default configuration, first and last case of every dtype) with NVRTC for
# sm_90. NVRTC needs no GPU, so this runs in CI.
file(GLOB TB_OPERATOR_CONFIGS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/operators/*/config.yaml)
foreach(cfg ${TB_OPERATOR_CONFIGS})
  get_filename_component(dir ${cfg} DIRECTORY)
  get_filename_component(op ${dir} NAME)
  add_test(NAME compile_${op} COMMAND tilebench script ${CMAKE_SOURCE_DIR}/tests/compile_operator.lua ${op}
           WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(compile_${op} PROPERTIES ENVIRONMENT "${TB_TEST_ENV}" LABELS compile TIMEOUT 900)
endforeach()

# The bounded fuzz run (tests/fuzz/fuzz.lua): YAML loader, config validation, expression
# evaluator, journal reader. $TB_FUZZ_SECONDS (default 10) bounds it; CI runs it longer in the
# sanitizer build (.ci/run).
add_test(NAME fuzz COMMAND tilebench script ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz.lua
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(fuzz PROPERTIES ENVIRONMENT "${TB_TEST_ENV}" LABELS fuzz TIMEOUT 900)

# Every operator's Triton kernels (operators/*/<name>_triton.py), each implementation's default
# configuration, compiled for sm_90 by triton itself (no GPU), with each description checked
# against the kernel's signature. Exits 77 without triton, except where TB_REQUIRE_TRITON is set
# (CI installs the pinned triton, so there a missing one fails).
add_test(NAME compile_triton COMMAND tilebench script ${CMAKE_SOURCE_DIR}/tests/compile_triton.lua
         WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
set_tests_properties(compile_triton PROPERTIES ENVIRONMENT "${TB_TEST_ENV}" LABELS compile TIMEOUT 900
                     SKIP_RETURN_CODE 77)

# A stand-in libcudnn.so.9 (tests/c/stub/stub_cudnn.c) for test_dnn, test_dnn_sdpa and test_dnn_conv: the cuDNN
# graphs of cuda_dnn*.c without cuDNN or a GPU, opened through TILEBENCH_CUDNN_LIB like a user's
# own copy would be.
add_library(stub_cudnn SHARED ${CMAKE_SOURCE_DIR}/tests/c/stub/stub_cudnn.c)
target_include_directories(stub_cudnn PRIVATE ${CMAKE_SOURCE_DIR}/host)
target_compile_options(stub_cudnn PRIVATE -Wno-missing-prototypes)
foreach(t test_dnn test_dnn_sdpa test_dnn_conv)
  target_compile_definitions(${t} PRIVATE STUB_CUDNN_PATH="$<TARGET_FILE:stub_cudnn>")
  add_dependencies(${t} stub_cudnn)
endforeach()
# The same stand-in without the legacy pooling entry points (a cuDNN that no longer exports them).
add_library(stub_cudnn_nolegacy SHARED ${CMAKE_SOURCE_DIR}/tests/c/stub/stub_cudnn.c)
target_include_directories(stub_cudnn_nolegacy PRIVATE ${CMAKE_SOURCE_DIR}/host)
target_compile_options(stub_cudnn_nolegacy PRIVATE -Wno-missing-prototypes)
target_compile_definitions(stub_cudnn_nolegacy PRIVATE STUB_NO_LEGACY_POOLING)
target_compile_definitions(test_dnn_conv PRIVATE STUB_CUDNN_NOLEGACY_PATH="$<TARGET_FILE:stub_cudnn_nolegacy>")
add_dependencies(test_dnn_conv stub_cudnn_nolegacy)

# tests/slurm/*.sh: `tilebench slurm` through a real one-node Slurm cluster started by the test
# (scripts/slurm_local.sh). Label slurm; each skips (77) without Slurm, root or TB_SLURM_TEST=1.
file(GLOB TB_SLURM_TESTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/slurm/*.sh)
foreach(t ${TB_SLURM_TESTS})
  get_filename_component(n ${t} NAME_WE)
  add_test(NAME slurm_${n} COMMAND bash ${t} WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(slurm_${n} PROPERTIES ENVIRONMENT "${TB_TEST_ENV}" SKIP_RETURN_CODE 77 LABELS slurm
                       TIMEOUT 600)
endforeach()

# A stand-in libnvidia-ml.so.1 (tests/c/stub/stub_nvml.c) for test_nvml: host/gpu/nvml.c's
# readings (the averaged and the instantaneous power) without a driver, opened through
# TILEBENCH_NVML_LIB; and the same without nvmlDeviceGetFieldValues (an older driver).
add_library(stub_nvml SHARED ${CMAKE_SOURCE_DIR}/tests/c/stub/stub_nvml.c)
target_compile_options(stub_nvml PRIVATE -Wno-missing-prototypes)
add_library(stub_nvml_nofields SHARED ${CMAKE_SOURCE_DIR}/tests/c/stub/stub_nvml.c)
target_compile_options(stub_nvml_nofields PRIVATE -Wno-missing-prototypes)
target_compile_definitions(stub_nvml_nofields PRIVATE STUB_NVML_NO_FIELDS)
target_compile_definitions(test_nvml PRIVATE STUB_NVML_PATH="$<TARGET_FILE:stub_nvml>"
                           STUB_NVML_NOFIELDS_PATH="$<TARGET_FILE:stub_nvml_nofields>")
add_dependencies(test_nvml stub_nvml stub_nvml_nofields)
