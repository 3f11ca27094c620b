# lockstep_layer(NAME FOLDERS folder... [CUDA_FOLDERS folder...] [LINKS target...]):
# one layer of the library as a static library of the .cpp and .cu files in
# FOLDERS, and in CUDA_FOLDERS when the GPU backend is built (not their
# sub-folders), linked to the layers below it (LINKS).
#
# The layer compiles against build/layer_includes/NAME/, a folder of links to
# its own top folders and to those of the layers it links, and nothing else:
# an #include of a layer above fails to compile.
set(lockstep_layer_targets "")
set(lockstep_layer_folders "")

function(lockstep_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "FOLDERS;CUDA_FOLDERS;LINKS")
  set(folders ${arg_FOLDERS})
  if(LOCKSTEP_WITH_CUDA)
    list(APPEND folders ${arg_CUDA_FOLDERS})
  endif()
  set(sources "")
  foreach(folder ${folders})
    file(GLOB found CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${folder}/*.cpp ${PROJECT_SOURCE_DIR}/${folder}/*.cu)
    list(APPEND sources ${found})
  endforeach()
  add_library(${name} STATIC ${sources})
  set_target_properties(${name} PROPERTIES LINKER_LANGUAGE CXX)

  # The folders this layer may include: its own and those of the layers below.
  set(visible "")
  foreach(dep ${arg_LINKS})
    if(dep IN_LIST lockstep_layer_targets)
      get_target_property(below ${dep} LOCKSTEP_VISIBLE_FOLDERS)
      list(APPEND visible ${below})
    endif()
  endforeach()
  set(own "")
  foreach(folder ${arg_FOLDERS})
    string(REGEX REPLACE "/.*" "" top ${folder})
    list(APPEND own ${top})
  endforeach()
  list(APPEND visible ${own})
  list(REMOVE_DUPLICATES visible)
  set_target_properties(${name} PROPERTIES LOCKSTEP_VISIBLE_FOLDERS "${visible}")
  set(includes ${PROJECT_BINARY_DIR}/layer_includes/${name})
  file(MAKE_DIRECTORY ${includes})
  foreach(top ${visible})
    if(IS_SYMLINK ${includes}/${top})
      file(REMOVE ${includes}/${top})
    endif()
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${top} ${includes}/${top} SYMBOLIC)
  endforeach()
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${includes}> $<INSTALL_INTERFACE:include/lockstep> $<INSTALL_INTERFACE:include>)

  target_compile_definitions(${name} PUBLIC LOCKSTEP_WITH_CUDA=$<BOOL:${LOCKSTEP_WITH_CUDA}>)
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
  target_link_libraries(${name} PUBLIC ${arg_LINKS})
  set(cuda_sources ${sources})
  list(FILTER cuda_sources INCLUDE REGEX "\\.cu$")
  if(LOCKSTEP_GPU STREQUAL "cuda")
    set_target_properties(${name} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
    target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo>)
  elseif(LOCKSTEP_GPU STREQUAL "emulated")
    # The kernels, compiled as C++ by the host compiler; the emulator's header
    # (force-included) supplies the CUDA built-ins and LS_LAUNCH.
    if(cuda_sources)
      set_source_files_properties(${cuda_sources} PROPERTIES LANGUAGE CXX
        COMPILE_OPTIONS "-x;c++;-include;${PROJECT_SOURCE_DIR}/emu/kernel/emu_kernel.h")
    endif()
  endif()

  set(lockstep_layer_targets ${lockstep_layer_targets} ${name} PARENT_SCOPE)
  set(all_folders ${lockstep_layer_folders} ${own})
  list(REMOVE_DUPLICATES all_folders)
  set(lockstep_layer_folders ${all_folders} PARENT_SCOPE)
endfunction()

# lockstep_auto_option(NAME DOC): a cache setting NAME of AUTO (the default),
# ON or OFF for an optional dependency; sets NAME_MODE (upper case) in the
# caller's scope and stops on any other value.
function(lockstep_auto_option name doc)
  set(${name} AUTO CACHE STRING "${doc}: AUTO, ON or OFF")
  set_property(CACHE ${name} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${${name}}" mode)
  if(NOT mode MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${name}=${${name}}: expected AUTO, ON or OFF")
  endif()
  set(${name}_MODE ${mode} PARENT_SCOPE)
endfunction()

# lockstep_layer_optional(LAYER FOLDER FLAG SCOPE): FOLDER's sources join
# LAYER when the variable FLAG is ON (its dependency was found); the macro
# FLAG (0 or 1, with SCOPE PRIVATE or PUBLIC) tells the code which it got.
function(lockstep_layer_optional layer folder flag scope)
  target_compile_definitions(${layer} ${scope} ${flag}=$<BOOL:${${flag}}>)
  if(${flag})
    file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${folder}/*.cpp)
    target_sources(${layer} PRIVATE ${sources})
  endif()
endfunction()
