# lockstep_probe_package(NAME OUT_OK OUT_WHY [find_package arguments...]):
# tries find_package(NAME ... REQUIRED) in a separate, throw-away CMake
# configure and sets OUT_OK (TRUE or FALSE) and OUT_WHY in the caller's scope:
# empty when the package is simply not there, else the first line of the
# error that made it unusable.
#
# Why a separate configure: a package's own config file may call
# find_package(... REQUIRED) on its dependencies (Debian's oneDNN asks for
# OpenCL, which libdnnl-dev only recommends) and so stop our configure even
# under QUIET. An optional dependency must never do that: probed first, a
# package that is present but unusable is left out with a one-line notice.
function(lockstep_probe_package name out_ok out_why)
  set(dir ${CMAKE_BINARY_DIR}/CMakeFiles/lockstep-probe/${name})
  file(MAKE_DIRECTORY ${dir}/src)
  string(REPLACE ";" " " args "${ARGN}")
  file(WRITE ${dir}/src/CMakeLists.txt
    "cmake_minimum_required(VERSION ${CMAKE_MINIMUM_REQUIRED_VERSION})\n"
    "project(lockstep_probe_${name} LANGUAGES CXX)\n"
    "find_package(${name} ${args} REQUIRED)\n")
  set(pass -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER})
  foreach(var CMAKE_PREFIX_PATH CMAKE_MODULE_PATH ${name}_DIR ${name}_ROOT MPI_CXX_SKIP_MPICXX)
    if(DEFINED ${var})
      string(REPLACE ";" "\\;" value "${${var}}")
      list(APPEND pass "-D${var}=${value}")
    endif()
  endforeach()
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${dir}/src -B ${dir}/build -G ${CMAKE_GENERATOR} ${pass}
    RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  file(REMOVE_RECURSE ${dir}/build)
  if(result EQUAL 0)
    set(${out_ok} TRUE PARENT_SCOPE)
    set(${out_why} "" PARENT_SCOPE)
    return()
  endif()
  set(${out_ok} FALSE PARENT_SCOPE)
  set(${out_why} "" PARENT_SCOPE)
  if(output MATCHES "Could not find a package configuration file provided by \"${name}\""
     OR output MATCHES "Could NOT find ${name}[ _]")
    return()  # not installed: the caller's usual "not found" notice applies
  endif()
  # The most telling line: "Could NOT find X (missing: ...)" when there is one,
  # else the first line of the first error's message.
  set(why "")
  string(REGEX MATCH "Could NOT find[^\n]*" why "${output}")
  if(NOT why)
    string(REGEX MATCH "CMake Error[^\n]*\n+ *([^\n]+)" _ "${output}")
    set(why "${CMAKE_MATCH_1}")
  endif()
  if(NOT why)
    set(why "its configure failed (exit ${result})")
  endif()
  set(${out_why} "${why}" PARENT_SCOPE)
endfunction()
