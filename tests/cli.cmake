# End-to-end tests of the lockstep program, one CTest entry per test method,
# labelled cpu: tests/cli/test_cli.py reads Debian's Fashion-MNIST;
# tests/cli/test_cli_outputs.py (what train writes and checks before training)
# makes its own small data sets.
function(lockstep_cli_tests script class)
  foreach(t ${ARGN})
    add_test(NAME cli.${t} COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/${script} ${class}.${t})
    set_tests_properties(cli.${t} PROPERTIES LABELS cpu ENVIRONMENT "LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>"
                         TIMEOUT 600)
  endforeach()
endfunction()

lockstep_cli_tests(test_cli.py Cli
  test_train_then_eval_agree
  test_eval_matches_trainer_exactly_on_the_same_data
  test_resume_after_sigint_gives_the_same_losses
  test_damaged_checkpoints_are_refused
  test_checkpoint_loads_in_python
  test_checkpoint_of_3_replicas_evaluates_and_resumes_on_1
  test_predict_prints_the_top_classes
  test_bad_arguments_fail_in_one_line_and_leave_the_checkpoint
  test_precision_bf16_trains_on_the_cpu_and_is_saved
  test_memory_format_nhwc_trains_as_nchw_and_is_saved)
lockstep_cli_tests(test_cli_outputs.py CliOutputs
  test_outputs_never_overwrite_inputs_or_other_files
  test_checks_before_the_first_epoch
  test_class_folders_of_any_bytes_survive_the_checkpoint
  test_skip_bad_images_applies_to_the_test_set
  test_max_image_pixels_and_argument_errors_name_the_option
  test_a_second_run_on_one_checkpoint_is_refused_naming_the_first
  test_ctrl_c_twice_stops_at_once_and_keeps_the_checkpoint
  test_pictures_never_overwrite_inputs_checkpoints_or_other_files
  test_a_checkpoints_saved_picture_path_is_never_written
  test_pictures_of_any_name_and_class_names_with_line_breaks_are_drawn)
lockstep_cli_tests(test_cli_arguments.py CliArguments
  test_arguments_that_would_be_ignored_or_wrap_are_refused_naming_the_option
  test_a_resume_that_would_be_another_run_is_refused_unless_forced)
# Issue 16: models on image folders and CIFAR-10 files, --test-fraction, --time-limit, pictures, skipped files, predict.
lockstep_cli_tests(test_cli.py Cli
  test_resnet50_trains_an_epoch_on_a_5_class_jpeg_folder_split_by_test_fraction
  test_vgg_f_trains_an_epoch_on_3_classes_laid_out_as_traindata_and_validationdata
  test_deep_cnn_trains_an_epoch_on_cifar10_files
  test_time_limit_stops_in_its_window_with_a_checkpoint_that_resumes
  test_training_curve_png_is_redrawn_after_every_epoch
  test_skip_bad_images_names_every_skipped_file_in_train_and_test
  test_split_folder_names_and_ambiguous_layouts
  test_predict_takes_folders_and_writes_json_lines
  test_init_from_an_export_fine_tunes_with_a_new_head_and_refusals_name_the_problem)
