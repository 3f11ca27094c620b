# Stand-ins for the cuDNN, cuBLAS and NCCL functions lockstep calls, for the
# emulated GPU build (included by emu/CMakeLists.txt). Each is a static library
# of extern "C" functions with the real headers' declarations, so lockstep's
# host code links against them unchanged; they queue their work on the
# emulated runtime's streams (lockstep_emu_cudart) and compute with code of
# their own (OpenBLAS for the products), never lockstep's CPU kernels, which
# the emulated tests check them against.
set(_standins ${CMAKE_CURRENT_SOURCE_DIR})

add_library(lockstep_emu_cudnn STATIC
  ${_standins}/cudnn/handle.cpp
  ${_standins}/cudnn/descriptors.cpp
  ${_standins}/cudnn/layout.cpp
  ${_standins}/cudnn/conv_problem.cpp
  ${_standins}/cudnn/direct_math.cpp
  ${_standins}/cudnn/conv.cpp
  ${_standins}/cudnn/pooling.cpp)
target_link_libraries(lockstep_emu_cudnn PUBLIC lockstep_emu_cudart PRIVATE PkgConfig::OPENBLAS)

add_library(lockstep_emu_cublas STATIC
  ${_standins}/cublas/handle.cpp
  ${_standins}/cublas/gemm.cpp)
target_link_libraries(lockstep_emu_cublas PUBLIC lockstep_emu_cudart PRIVATE PkgConfig::OPENBLAS)

add_library(lockstep_emu_nccl STATIC
  ${_standins}/nccl/clique.cpp
  ${_standins}/nccl/comm.cpp
  ${_standins}/nccl/group.cpp
  ${_standins}/nccl/collectives.cpp)
target_link_libraries(lockstep_emu_nccl PUBLIC lockstep_emu_cudart)
# Communicators across processes travel over MPI where the build has it (nccl/span.h).
if(LOCKSTEP_WITH_MPI)
  target_sources(lockstep_emu_nccl PRIVATE ${_standins}/nccl/mpi/span_mpi.cpp)
  target_link_libraries(lockstep_emu_nccl PUBLIC MPI::MPI_CXX)
else()
  target_sources(lockstep_emu_nccl PRIVATE ${_standins}/nccl/span_local.cpp)
endif()

foreach(_lib lockstep_emu_cudnn lockstep_emu_cublas lockstep_emu_nccl)
  # The root for "emu/..." and "kernels/..." includes.
  target_include_directories(${_lib} PRIVATE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
  target_compile_features(${_lib} PUBLIC cxx_std_20)
  # cuDNN 9 marks its legacy API (the one lockstep uses) deprecated.
  target_compile_options(${_lib} PRIVATE -Wno-deprecated-declarations)
endforeach()
