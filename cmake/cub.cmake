# libtb_cub.so: CUB's device-wide sorts behind a C ABI (host/cub/tb_cub.cu), the `lib` of
# radix_sort and top_k_selection. CUB's algorithms are host-dispatched templates, so they are built
# here with nvcc, only where nvcc is found (CI has none: the build skips it and the two `lib`
# implementations report `unsupported` with the places searched). tilebench opens it with dlopen
# (host/gpu/cub.c), first from $TILEBENCH_CUB_LIB, then from this build's path (TB_CUB_LIB_PATH).
# TILEBENCH_CUB_ARCHS: the SM architectures compiled (default 90; PTX of the last is embedded too).
option(TILEBENCH_CUB "Build libtb_cub.so (CUB's sorts) where nvcc is found" ON)
set(TILEBENCH_CUB_ARCHS "90" CACHE STRING "SM architectures of libtb_cub.so (e.g. \"80;90\")")
set(TB_CUB_LIB "")
if(TILEBENCH_CUB)
  find_program(TB_NVCC nvcc PATHS ${CUDA_HOME}/bin /usr/local/cuda/bin /usr/bin NO_CACHE)
  if(TB_NVCC)
    set(TB_CUB_LIB ${CMAKE_BINARY_DIR}/libtb_cub.so)
    set(_gencode "")
    foreach(a ${TILEBENCH_CUB_ARCHS})
      list(APPEND _gencode -gencode arch=compute_${a},code=sm_${a})
      set(_last ${a})
    endforeach()
    list(APPEND _gencode -gencode arch=compute_${_last},code=compute_${_last})
    add_custom_command(OUTPUT ${TB_CUB_LIB}
      COMMAND ${TB_NVCC} -O3 -std=c++17 -shared -Xcompiler -fPIC ${_gencode}
              -o ${TB_CUB_LIB} ${CMAKE_SOURCE_DIR}/host/cub/tb_cub.cu
      DEPENDS ${CMAKE_SOURCE_DIR}/host/cub/tb_cub.cu
      COMMENT "Building libtb_cub.so (CUB's sorts) with ${TB_NVCC}")
    add_custom_target(tb_cub ALL DEPENDS ${TB_CUB_LIB})
    message(STATUS "tilebench: libtb_cub.so with ${TB_NVCC} for sm ${TILEBENCH_CUB_ARCHS}")
  else()
    message(STATUS "tilebench: no nvcc found: libtb_cub.so (the sorting operators' CUB lib) is not built")
  endif()
endif()
target_compile_definitions(tbcore PRIVATE TB_CUB_LIB_PATH="${TB_CUB_LIB}")
