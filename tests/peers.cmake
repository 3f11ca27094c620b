# The PyTorch peer's precision modes (bench/peers/pytorch_train.py, run by
# lockstep-bench peers) on the CPU at tiny sizes: skipped (77) without torch.
set(LOCKSTEP_PEER_PYTHON /usr/bin/python3 CACHE FILEPATH "Python interpreter for the PyTorch peer's own test")
add_test(NAME peer_precision
         COMMAND ${LOCKSTEP_PEER_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/torch/peer_precision.py
                 ${PROJECT_SOURCE_DIR}/bench/peers/pytorch_train.py)
set_tests_properties(peer_precision PROPERTIES LABELS cpu TIMEOUT 300 SKIP_RETURN_CODE 77
                     ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
