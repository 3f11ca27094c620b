# Multi-process training under mpirun (tests/mpi/test_mpi.py and test_mpi_init.py, and on the
# emulated GPU tests/mpi/test_mpi_gpu.py), one CTest entry per test method,
# label mpi. They read Debian's Fashion-MNIST. A build
# without MPI has nothing to test: one entry says so and reports skipped.
set(_mpi_tests
  test_2_processes_of_1_replica
  test_2_processes_of_2_replicas
  test_3_processes_of_1_replica
  test_3_processes_of_2_replicas
  test_checkpoint_of_3_processes_resumes_in_1
  test_a_killed_rank_stops_the_others
  test_a_lost_rank_is_named_by_the_others_within_the_timeout
  test_only_the_first_process_writes
  test_eval_on_2_processes_matches_1_process
  test_lockstep_info_says_the_world
  test_unequal_replica_counts_are_refused
  test_processes_started_with_different_settings_are_refused_naming_each)
if(LOCKSTEP_WITH_MPI)
  find_program(LOCKSTEP_MPIEXEC NAMES ${MPIEXEC_EXECUTABLE} mpirun mpiexec REQUIRED)
  foreach(t ${_mpi_tests})
    add_test(NAME mpi.${t} COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_mpi.py Mpi.${t})
    set_tests_properties(mpi.${t} PROPERTIES LABELS mpi TIMEOUT 900
      ENVIRONMENT "LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>;LOCKSTEP_MPIRUN=${LOCKSTEP_MPIEXEC}")
  endforeach()
  # Processes agree on --init (tests/mpi/test_mpi_init.py).
  add_test(NAME mpi.test_processes_given_other_init_weights_or_none_are_refused_naming_init
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_mpi_init.py
                   MpiInit.test_processes_given_other_init_weights_or_none_are_refused_naming_init)
  set_tests_properties(mpi.test_processes_given_other_init_weights_or_none_are_refused_naming_init PROPERTIES
    LABELS mpi TIMEOUT 900 ENVIRONMENT "LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>;LOCKSTEP_MPIRUN=${LOCKSTEP_MPIEXEC}")
  # Two hosts as two network namespaces: skipped, saying why, where namespaces cannot be made.
  add_test(NAME mpi.test_two_hosts_over_tcp_match_one_process
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_mpi.py TwoHosts.test_two_hosts_over_tcp_match_one_process)
  set_tests_properties(mpi.test_two_hosts_over_tcp_match_one_process PROPERTIES LABELS mpi TIMEOUT 900
    SKIP_REGULAR_EXPRESSION "OK \\(skipped="
    ENVIRONMENT "LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>;LOCKSTEP_MPIRUN=${LOCKSTEP_MPIEXEC}")
  # GPUs across processes, on the emulated GPU only (each process its own emulated machine, NCCL's
  # stand-in carrying the collectives over MPI); labelled mpi-gpu too, for the emulated stage of
  # scripts/test. A real GPU build would need a GPU per process, chosen per rank: not run here.
  if(LOCKSTEP_GPU STREQUAL "emulated")
    foreach(t test_2_processes_of_1_gpu_match_1_process_of_2_gpus test_3_processes_of_1_gpu_match_1_process_of_3_gpus
            test_eval_on_2_processes_of_1_gpu_matches_1_process)
      add_test(NAME mpi.gpu.${t} COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_mpi_gpu.py MpiGpu.${t})
      set_tests_properties(mpi.gpu.${t} PROPERTIES LABELS "mpi;mpi-gpu" TIMEOUT 900
        ENVIRONMENT "LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>;LOCKSTEP_MPIRUN=${LOCKSTEP_MPIEXEC}")
    endforeach()
  endif()
else()
  add_test(NAME mpi.not_built COMMAND ${CMAKE_COMMAND} -E echo
           "skipped: lockstep was built without MPI (LOCKSTEP_MPI=${LOCKSTEP_MPI}; install libopenmpi-dev)")
  set_tests_properties(mpi.not_built PROPERTIES LABELS mpi SKIP_REGULAR_EXPRESSION "skipped:")
endif()
