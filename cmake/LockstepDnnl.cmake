# The CPU convolution on oneDNN. LOCKSTEP_DNNL: AUTO (the default)
# builds it in when CMake finds Debian's libdnnl-dev, ON requires it, OFF
# leaves it out (the ThreadSanitizer build: oneDNN runs on libgomp, whose
# barriers TSan cannot see). Without it the CPU convolution is the im2col +
# OpenBLAS reference (kernels/cpu/conv_cpu.h).
lockstep_auto_option(LOCKSTEP_DNNL "oneDNN for the CPU convolution")
set(_lockstep_dnnl ${LOCKSTEP_DNNL_MODE})
set(LOCKSTEP_WITH_DNNL OFF)
if(_lockstep_dnnl STREQUAL "ON")
  find_package(dnnl CONFIG REQUIRED)
  find_package(OpenMP REQUIRED COMPONENTS CXX)
elseif(_lockstep_dnnl STREQUAL "AUTO")
  # Probed apart first (cmake/LockstepProbePackage.cmake): a oneDNN whose own
  # config fails (Debian's wants OpenCL's headers) is left out, not fatal.
  lockstep_probe_package(dnnl _dnnl_usable _dnnl_why CONFIG)
  if(_dnnl_usable)
    find_package(dnnl CONFIG QUIET)
    find_package(OpenMP QUIET COMPONENTS CXX)
    if(dnnl_FOUND AND NOT TARGET DNNL::dnnl)
      set(dnnl_FOUND FALSE)
      message(STATUS "lockstep: oneDNN found but unusable (its package defines no target DNNL::dnnl); the CPU convolution is im2col + OpenBLAS")
      set(_dnnl_reported TRUE)
    endif()
  elseif(NOT _dnnl_why STREQUAL "")
    message(STATUS "lockstep: oneDNN found but unusable (${_dnnl_why}); the CPU convolution is im2col + OpenBLAS")
    set(_dnnl_reported TRUE)
  endif()
endif()
if(dnnl_FOUND AND OpenMP_CXX_FOUND)
  set(LOCKSTEP_WITH_DNNL ON)
  message(STATUS "lockstep: oneDNN ${dnnl_VERSION} found, the CPU convolution runs on it")
elseif(NOT _lockstep_dnnl STREQUAL "OFF" AND NOT _dnnl_reported)
  message(STATUS "lockstep: no oneDNN found, the CPU convolution is im2col + OpenBLAS (install libdnnl-dev)")
endif()

# lockstep_layer_dnnl(LAYER FOLDER): FOLDER's sources join LAYER when oneDNN is
# built in; LOCKSTEP_WITH_DNNL tells the code above which convolution it got.
function(lockstep_layer_dnnl layer folder)
  lockstep_layer_optional(${layer} ${folder} LOCKSTEP_WITH_DNNL PUBLIC)
  if(LOCKSTEP_WITH_DNNL)
    # OpenMP for this layer's own sources only: the compute pool runs its
    # regions on the OpenMP threads oneDNN uses (kernels/cpu/thread_pool.cpp).
    target_link_libraries(${layer} PUBLIC DNNL::dnnl PRIVATE OpenMP::OpenMP_CXX)
  endif()
endfunction()
