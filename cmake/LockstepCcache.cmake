# Compilations cached across build folders and clones (Debian's ccache).
# LOCKSTEP_CCACHE: AUTO (the default) uses ccache when it is installed, ON
# requires it, OFF compiles without it.
#
# The cache is keyed so that the same source compiled with the same flags hits
# in any clone of the repository, wherever it lies: paths under the source
# folder are hashed relative to it (base_dir) and the working directory is
# left out of the hash (hash_dir = false), so CI's fresh clone in another folder
# reuses what a developer's build compiled. The precompiled test header needs
# pch_defines and time_macros (ccache's manual, "Precompiled headers").
# The settings travel in a small launcher script rather than the user's ccache
# configuration, so a plain `cmake --build` gets them too.
lockstep_auto_option(LOCKSTEP_CCACHE "ccache for compilations")
set(LOCKSTEP_WITH_CCACHE OFF)
if(NOT LOCKSTEP_CCACHE_MODE STREQUAL "OFF")
  find_program(LOCKSTEP_CCACHE_PROGRAM ccache)
  if(LOCKSTEP_CCACHE_PROGRAM)
    set(LOCKSTEP_WITH_CCACHE ON)
  elseif(LOCKSTEP_CCACHE_MODE STREQUAL "ON")
    message(FATAL_ERROR "LOCKSTEP_CCACHE=ON: no ccache program found (install ccache)")
  else()
    message(STATUS "lockstep: no ccache found, every compilation runs (install ccache)")
  endif()
endif()
if(LOCKSTEP_WITH_CCACHE)
  set(_launcher ${CMAKE_CURRENT_BINARY_DIR}/lockstep-ccache)
  file(CONFIGURE OUTPUT ${_launcher} @ONLY CONTENT [[#!/bin/sh
# Written by CMake (cmake/LockstepCcache.cmake): runs a compiler under ccache
# with the settings that let clones in other folders share the cache.
CCACHE_BASEDIR='@PROJECT_SOURCE_DIR@'
CCACHE_NOHASHDIR=1
CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
export CCACHE_BASEDIR CCACHE_NOHASHDIR CCACHE_SLOPPINESS
exec '@LOCKSTEP_CCACHE_PROGRAM@' "$@"
]])
  file(CHMOD ${_launcher} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_launcher})
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${_launcher})
  message(STATUS "lockstep: compilations cached by ${LOCKSTEP_CCACHE_PROGRAM}")
endif()
