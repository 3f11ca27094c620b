# End-to-end tests of the lockstep program (tests/cli/test_cli.py), one CTest
# entry per test method, labelled cpu. They read Debian's Fashion-MNIST.
set(_cli_tests
  test_train_then_eval_agree
  test_eval_matches_trainer_exactly_on_the_same_data
  test_resume_after_sigint_gives_the_same_losses
  test_damaged_checkpoints_are_refused
  test_checkpoint_loads_in_python
  test_checkpoint_of_3_replicas_evaluates_and_resumes_on_1
  test_predict_prints_the_top_classes
  test_bad_arguments_fail_in_one_line_and_leave_the_checkpoint)
# Issue 16: models on image folders and CIFAR-10 files, --test-fraction, --time-limit, pictures, skipped files, predict.
list(APPEND _cli_tests
  test_resnet50_trains_an_epoch_on_a_5_class_jpeg_folder_split_by_test_fraction
  test_vgg_f_trains_an_epoch_on_3_classes_laid_out_as_traindata_and_validationdata
  test_deep_cnn_trains_an_epoch_on_cifar10_files
  test_time_limit_stops_in_its_window_with_a_checkpoint_that_resumes
  test_training_curve_png_is_redrawn_after_every_epoch
  test_skip_bad_images_names_every_skipped_file_in_train_and_test
  test_split_folder_names_and_ambiguous_layouts
  test_predict_takes_folders_and_writes_json_lines)
foreach(t ${_cli_tests})
  add_test(NAME cli.${t} COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_cli.py Cli.${t})
  set_tests_properties(cli.${t} PROPERTIES LABELS cpu ENVIRONMENT "LOCKSTEP_BIN=$<TARGET_FILE:lockstep_cli>"
                       TIMEOUT 600)
endforeach()
