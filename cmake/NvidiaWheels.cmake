# lockstep_nvidia_wheel_roots(<out-var> <component>): the folders where
# NVIDIA's Python wheels (nvidia-cudnn-cu13, nvidia-nccl-cu13, ...) keep a
# component's include/ and lib/: site-packages/nvidia/<component> of the
# python3 on PATH (or the PyTorch environment at /opt/torch/.venv), and of the
# usual system site folders. Machines that have PyTorch but no system cuDNN or
# NCCL build against these.
function(lockstep_nvidia_wheel_roots out component)
  if(NOT DEFINED LOCKSTEP_PYTHON_SITE_DIRS)
    find_program(LOCKSTEP_PYTHON NAMES python3 python HINTS /opt/torch/.venv/bin)
    set(sites "")
    if(LOCKSTEP_PYTHON)
      execute_process(
        COMMAND ${LOCKSTEP_PYTHON} -c
          "import site, sysconfig; print(';'.join(site.getsitepackages() + [sysconfig.get_paths()['purelib']]))"
        OUTPUT_VARIABLE sites OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE status)
      if(NOT status EQUAL 0)
        set(sites "")
      endif()
    endif()
    file(GLOB system_sites /opt/torch/.venv/lib/python3*/site-packages /usr/local/lib/python3*/dist-packages
         /usr/lib/python3/dist-packages)
    list(APPEND sites ${system_sites})
    list(REMOVE_DUPLICATES sites)
    set(LOCKSTEP_PYTHON_SITE_DIRS "${sites}" CACHE INTERNAL "Python site folders searched for NVIDIA wheels")
  endif()
  set(roots "")
  foreach(site ${LOCKSTEP_PYTHON_SITE_DIRS})
    foreach(candidate ${site}/nvidia/${component} ${site}/nvidia/cu13 ${site}/nvidia/cu12)
      if(IS_DIRECTORY ${candidate})
        list(APPEND roots ${candidate})
      endif()
    endforeach()
  endforeach()
  set(${out} "${roots}" PARENT_SCOPE)
endfunction()
