# Finds cuDNN: under CUDNN_ROOT (variable or environment) when given, then the
# bundled dependencies (LOCKSTEP_DEPS or .deps/, folder cudnn), then the CUDA
# toolkit and the system, then NVIDIA's Python wheel (nvidia-cudnn-cu13, which
# ships only versioned names such as libcudnn.so.9). Defines CUDNN::cudnn and
# CUDNN_LIBRARY_DIR (the run-time loader needs it for cuDNN's sub-libraries).
include(${CMAKE_CURRENT_LIST_DIR}/NvidiaWheels.cmake)
lockstep_nvidia_wheel_roots(_cudnn_wheel_roots cudnn)
set(_cudnn_roots ${CUDNN_ROOT} $ENV{CUDNN_ROOT})
foreach(_deps ${LOCKSTEP_DEPS_DIR} ${CMAKE_SOURCE_DIR}/.deps)
  list(APPEND _cudnn_roots ${_deps}/cudnn)
endforeach()
list(APPEND _cudnn_roots ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda)
find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${_cudnn_roots}
  PATH_SUFFIXES include include/x86_64-linux-gnu
  PATHS ${_cudnn_wheel_roots})
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
  HINTS ${_cudnn_roots}
  PATH_SUFFIXES lib lib64 lib/x86_64-linux-gnu
  PATHS ${_cudnn_wheel_roots})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR)
if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  get_filename_component(CUDNN_LIBRARY_DIR ${CUDNN_LIBRARY} DIRECTORY)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION ${CUDNN_LIBRARY} INTERFACE_INCLUDE_DIRECTORIES ${CUDNN_INCLUDE_DIR})
endif()
