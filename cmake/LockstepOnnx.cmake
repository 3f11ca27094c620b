# `lockstep export --format onnx` on Debian's ONNX library (libonnx-dev: the
# format's protobuf classes and its checker). LOCKSTEP_ONNX: AUTO (the
# default) builds the ONNX export in when CMake finds libonnx-dev and
# libprotobuf-dev, ON requires them, OFF leaves it out (a machine built from
# scripts/bundle-deps has neither; export then says so for --format onnx).
#
# Debian's ONNX package config names the target protobuf::libprotobuf without
# finding Protobuf itself, so CMake's FindProtobuf runs first; its targets
# (onnx, onnx_proto) carry ONNX_NAMESPACE=onnx and ONNX_ML=1, which the
# headers need to pick the right generated classes.
lockstep_auto_option(LOCKSTEP_ONNX "Debian's ONNX library for export --format onnx")
set(LOCKSTEP_WITH_ONNX OFF)
if(LOCKSTEP_ONNX_MODE STREQUAL "ON")
  find_package(Protobuf REQUIRED)
  find_package(ONNX CONFIG REQUIRED)
elseif(LOCKSTEP_ONNX_MODE STREQUAL "AUTO")
  find_package(Protobuf QUIET)
  if(Protobuf_FOUND)
    find_package(ONNX CONFIG QUIET)
  endif()
endif()
if(ONNX_FOUND AND TARGET onnx AND TARGET protobuf::libprotobuf)
  set(LOCKSTEP_WITH_ONNX ON)
  message(STATUS "lockstep: ONNX ${ONNX_VERSION} found, export --format onnx is built in")
elseif(NOT LOCKSTEP_ONNX_MODE STREQUAL "OFF")
  message(STATUS "lockstep: no ONNX library found, export --format onnx is left out (install libonnx-dev and libprotobuf-dev)")
endif()

# lockstep_onnx_sources(TARGET FOLDER): FOLDER's sources join TARGET, linked to
# ONNX, when it was found; LOCKSTEP_WITH_ONNX (0 or 1) tells the code which.
function(lockstep_onnx_sources target folder)
  lockstep_layer_optional(${target} ${folder} LOCKSTEP_WITH_ONNX PRIVATE)
  if(LOCKSTEP_WITH_ONNX)
    target_link_libraries(${target} PRIVATE onnx)
  endif()
endfunction()
