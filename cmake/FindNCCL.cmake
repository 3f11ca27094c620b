# Finds NCCL: under NCCL_ROOT (variable or environment) when given, then the
# bundled dependencies (LOCKSTEP_DEPS or .deps/, folder nccl), then the CUDA
# toolkit and the system, then NVIDIA's Python wheel (nvidia-nccl-cu13, which
# ships only libnccl.so.2). Defines NCCL::nccl and NCCL_LIBRARY_DIR.
include(${CMAKE_CURRENT_LIST_DIR}/NvidiaWheels.cmake)
lockstep_nvidia_wheel_roots(_nccl_wheel_roots nccl)
set(_nccl_roots ${NCCL_ROOT} $ENV{NCCL_ROOT})
foreach(_deps ${LOCKSTEP_DEPS_DIR} ${CMAKE_SOURCE_DIR}/.deps)
  list(APPEND _nccl_roots ${_deps}/nccl)
endforeach()
list(APPEND _nccl_roots ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda)
find_path(NCCL_INCLUDE_DIR nccl.h
  HINTS ${_nccl_roots}
  PATH_SUFFIXES include
  PATHS ${_nccl_wheel_roots})
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
  HINTS ${_nccl_roots}
  PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu
  PATHS ${_nccl_wheel_roots})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR)
if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  get_filename_component(NCCL_LIBRARY_DIR ${NCCL_LIBRARY} DIRECTORY)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION ${NCCL_LIBRARY} INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
endif()
