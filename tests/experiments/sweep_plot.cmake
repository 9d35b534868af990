# tests/experiments: experiments/sweep-bandwidth, experiments/plot, reproduce-dgs,
# ablate-reference and compare-compressors (python unittest on fixture run directories and a fake launcher; no
# build target needed).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME sweep_plot_test
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_sweep_plot.py)
  set_tests_properties(sweep_plot_test PROPERTIES TIMEOUT 120 LABELS python)
  add_test(NAME reproduce_test
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_reproduce.py)
  set_tests_properties(reproduce_test PROPERTIES TIMEOUT 120 LABELS python)
  add_test(NAME ablate_reference_test
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_ablate_reference.py)
  set_tests_properties(ablate_reference_test PROPERTIES TIMEOUT 120 LABELS python)
  add_test(NAME compare_compressors_test
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_compare_compressors.py)
  set_tests_properties(compare_compressors_test PROPERTIES TIMEOUT 120 LABELS python)
else()
  message(WARNING "python3 not found: sweep_plot_test, reproduce_test, ablate_reference_test "
          "and compare_compressors_test not registered")
endif()
# fetch-data cifar10 --from on a tiny fake PNG mirror: Debian's interpreter (Pillow makes the
# PNGs, as the importer decodes them).
if(Python_EXECUTABLE)
  add_test(NAME fetch_cifar10_png_test
           COMMAND ${Python_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_cifar10_from_png.py)
  set_tests_properties(fetch_cifar10_png_test PROPERTIES TIMEOUT 120 LABELS python)
  # experiments/compare: Debian's interpreter (python3-plotly, python3-matplotlib) and its
  # page in headless Chromium.
  add_test(NAME compare_test
           COMMAND ${Python_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_compare.py)
  set_tests_properties(compare_test PROPERTIES TIMEOUT 240 LABELS python)
  # experiments/crosscheck-reference against a stand-in written in the test (and a clone of
  # the real reference where SPARSEPS_REFERENCE_DIR names one): Debian's torch, the
  # driver and the Python package.
  add_test(NAME crosscheck_reference_test
           COMMAND ${Python_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_crosscheck_reference.py)
  set_tests_properties(crosscheck_reference_test PROPERTIES TIMEOUT 600 LABELS python
                       ENVIRONMENT SPARSEPS_BUILD_DIR=${CMAKE_BINARY_DIR})
endif()
