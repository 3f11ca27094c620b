# Training across processes and hosts. LOCKSTEP_MPI picks whether
# MPI is built in: AUTO (the default) when CMake's FindMPI finds MPI's C
# interface, ON to require it, OFF to leave it out. Without it lockstep is
# the single-process program it always was, and a launcher that starts
# several processes gets an error saying the build has no MPI.
lockstep_auto_option(LOCKSTEP_MPI "MPI for multi-process training")
set(_lockstep_mpi ${LOCKSTEP_MPI_MODE})
set(LOCKSTEP_WITH_MPI OFF)
# The C API through the C++ compiler (the project enables no C); MPI's
# deprecated C++ bindings are not wanted.
set(MPI_CXX_SKIP_MPICXX TRUE)
if(_lockstep_mpi STREQUAL "ON")
  find_package(MPI REQUIRED COMPONENTS CXX)
elseif(_lockstep_mpi STREQUAL "AUTO")
  # Probed apart first, as oneDNN is: an MPI whose find fails hard is left out.
  lockstep_probe_package(MPI _mpi_usable _mpi_why COMPONENTS CXX)
  if(_mpi_usable)
    find_package(MPI COMPONENTS CXX)
  elseif(NOT _mpi_why STREQUAL "")
    message(STATUS "lockstep: MPI found but unusable (${_mpi_why}); multi-process training left out")
    set(_mpi_reported TRUE)
  endif()
endif()
if(MPI_CXX_FOUND)
  set(LOCKSTEP_WITH_MPI ON)
  message(STATUS "lockstep: MPI ${MPI_CXX_VERSION} found, multi-process training built in")
elseif(NOT _lockstep_mpi STREQUAL "OFF" AND NOT _mpi_reported)
  message(STATUS "lockstep: no MPI found, multi-process training left out (install libopenmpi-dev)")
endif()

# lockstep_layer_mpi(LAYER FOLDER): the MPI sources of FOLDER join LAYER when
# MPI is built in; LOCKSTEP_WITH_MPI tells the layer's code which it got.
function(lockstep_layer_mpi layer folder)
  lockstep_layer_optional(${layer} ${folder} LOCKSTEP_WITH_MPI PRIVATE)
  if(LOCKSTEP_WITH_MPI)
    target_link_libraries(${layer} PUBLIC MPI::MPI_CXX)
  endif()
endfunction()
